//! The numaplan binary runs on a machine without libhwloc or libudev: hwloc is linked statically
//! (build.rs), its libudev calls go to a "no udev" stub, and its plugins are never loaded, so
//! hiding every libhwloc from the loader changes nothing.

mod common;

use std::process::Command;

#[test]
fn the_binary_needs_no_libhwloc() {
    let out = common::succeed(Command::new("readelf").args(["-d", env!("CARGO_BIN_EXE_numaplan")]));
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(!needed.is_empty(), "{dynamic}");
    assert!(
        !needed.iter().any(|l| l.contains("hwloc")),
        "libhwloc is linked dynamically: {needed:?}"
    );
    // Only what every glibc system has and the manylinux policy of Python wheels allows.
    let allowed = ["libc.so.6", "libm.so.6", "libgcc_s.so.1", "ld-linux"];
    for line in &needed {
        assert!(
            allowed.iter().any(|lib| line.contains(lib)),
            "the binary needs a library not every Linux host has: {line}"
        );
    }
}

/// As root: a private mount namespace hides every `libhwloc.so*` (an empty file bound over
/// each) and hwloc's plugin directory (an empty tmpfs), and `numaplan topo` still discovers
/// this machine, exactly as it does with them in place.
#[test]
fn discovery_works_with_libhwloc_hidden() {
    if running_as_root().is_none() {
        eprintln!("skipped: needs root for a private mount namespace");
        return;
    }
    let normal = common::numaplan(&["topo", "--format", "json"]).ok();
    let script = r#"
set -e
for lib in /usr/lib/*/libhwloc.so* /lib/*/libhwloc.so*; do
  [ -e "$lib" ] && mount --bind /dev/null "$lib"
done
for dir in /usr/lib/*/hwloc; do
  [ -d "$dir" ] && mount -t tmpfs none "$dir"
done
# The shared library is unusable now: a program that needs it cannot start.
if ldd /usr/bin/lstopo-no-graphics 2>/dev/null | grep -q hwloc && lstopo-no-graphics >/dev/null 2>&1; then
  echo "libhwloc is still usable" >&2; exit 1
fi
exec "$NUMAPLAN" topo --format json
"#;
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), normal);
}

/// `Some(())` when this process runs as root.
fn running_as_root() -> Option<()> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    (uid.split_whitespace().next()? == "0").then_some(())
}
