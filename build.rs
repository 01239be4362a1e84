//! Links the system hwloc statically (Debian's libhwloc-dev ships libhwloc.a), so the numaplan
//! binary runs on a machine without libhwloc installed; libudev, libm and pthread, which every
//! Linux host has, stay dynamic. hwlocality-sys asks for the shared library as well; the
//! archive comes first on the link line and provides every symbol, so with rustc's
//! `--as-needed` the shared library is dropped. The `dynamic-hwloc` feature keeps it instead.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_HWLOC").is_some() {
        return;
    }
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "hwloc"])
        .output()
        .expect("pkg-config runs (scripts/deps.sh installs it)");
    let libdir = String::from_utf8(out.stdout).expect("pkg-config prints UTF-8");
    let archive = std::path::Path::new(libdir.trim()).join("libhwloc.a");
    assert!(
        archive.exists(),
        "{} is missing: install libhwloc-dev, or build with --features dynamic-hwloc",
        archive.display()
    );
    // numaplan's own native libraries come before its dependencies' on the link line.
    println!("cargo:rustc-link-search=native={}", libdir.trim());
    println!("cargo:rustc-link-lib=static=hwloc");
    for lib in ["udev", "m", "pthread"] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}
