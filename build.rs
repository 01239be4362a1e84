//! Links the system hwloc statically (Debian's libhwloc-dev ships libhwloc.a), so the numaplan
//! binary runs on a machine without libhwloc installed, and resolves the archive's five libudev
//! references with `native/udev_stub.c` ("no udev", which hwloc handles), so it needs no
//! libudev either: only libc, libm and libgcc_s, which every Linux host has and the manylinux
//! policy of Python wheels allows. hwlocality-sys asks for the shared library as well; the
//! archive comes first on the link line and provides every symbol, so with rustc's
//! `--as-needed` the shared library is dropped. The `dynamic-hwloc` feature keeps it instead.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=native/udev_stub.c");
    // `numaplan --version --verbose` names the hwloc release it was built against.
    let version = Command::new("pkg-config")
        .args(["--modversion", "hwloc"])
        .output()
        .expect("pkg-config runs (scripts/deps.sh installs it)");
    let version = String::from_utf8(version.stdout).expect("pkg-config prints UTF-8");
    println!("cargo:rustc-env=NUMAPLAN_HWLOC_VERSION={}", version.trim());
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_HWLOC").is_some() {
        return;
    }
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "hwloc"])
        .output()
        .expect("pkg-config runs (scripts/deps.sh installs it)");
    let libdir = String::from_utf8(out.stdout).expect("pkg-config prints UTF-8");
    let archive = Path::new(libdir.trim()).join("libhwloc.a");
    assert!(
        archive.exists(),
        "{} is missing: install libhwloc-dev, or build with --features dynamic-hwloc",
        archive.display()
    );
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    build_udev_stub(Path::new(&out_dir));
    // numaplan's own native libraries come before its dependencies' on the link line, and
    // the stub after hwloc, whose references it resolves.
    println!("cargo:rustc-link-search=native={}", libdir.trim());
    println!("cargo:rustc-link-search=native={out_dir}");
    println!("cargo:rustc-link-lib=static=hwloc");
    println!("cargo:rustc-link-lib=static=numaplan_udev_stub");
    for lib in ["m", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}

/// `OUT_DIR/libnumaplan_udev_stub.a` from `native/udev_stub.c`, with the C compiler cargo
/// would use (`$CC`, else `cc`) and `ar` (`$AR`).
fn build_udev_stub(out_dir: &Path) {
    let object = out_dir.join("udev_stub.o");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ar = std::env::var("AR").unwrap_or_else(|_| "ar".into());
    run(Command::new(&cc)
        .args(["-c", "-O2", "-fPIC", "native/udev_stub.c", "-o"])
        .arg(&object));
    let library = out_dir.join("libnumaplan_udev_stub.a");
    let _ = std::fs::remove_file(&library);
    run(Command::new(&ar).arg("crs").arg(&library).arg(&object));
}

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}
