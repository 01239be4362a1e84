//! The hwloc numaplan runs with: the library and API version it reports (`numaplan version
//! --verbose`, the XML precheck), and the settings every topology build runs with.

/// The hwloc API numaplan is linked with, as `major.x`.
pub fn linked_version() -> String {
    format!("{}.x", hwlocality::hwloc_api_version() >> 16)
}

/// Whether hwloc checks the consistency of what it built (see `with_hwloc_settings`).
#[derive(Clone, Copy)]
pub(super) enum Check {
    Consistency,
    None,
}

/// Runs `build` with numaplan's hwloc settings, each unless the user set it, and removes them
/// again so that ranks do not inherit them:
/// - `HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1`: hwloc hides the NUMA nodes of NVIDIA GPU memory by
///   default on POWER9 (and on Grace Hopper before hwloc 2.11), but plans need them, and `exec`
///   counts them in `/sys/devices/system/node` when it checks a node against its plan;
/// - `HWLOC_PLUGINS_PATH` pointing nowhere: numaplan uses hwloc's built-in components (Linux
///   sysfs, PCI included, and its own XML parser), never the plugins (libxml2, libpciaccess,
///   OpenCL) an installed hwloc may have, so it behaves the same wherever it runs, and the
///   statically linked hwloc never loads a plugin built for the shared one;
/// - for an XML import (`Check::Consistency`), `HWLOC_DEBUG_CHECK=1`: hwloc checks the
///   imported tree (every cpuset within its complete cpuset, children in order) and aborts on
///   an inconsistency, which the import's sandbox reports. hwlocality runs that check itself
///   only in debug builds: without the variable, a release build would accept a malformed file
///   that a debug build refuses.
pub(super) fn with_hwloc_settings<T>(check: Check, build: impl FnOnce() -> T) -> T {
    const SETTINGS: [(&str, &str); 2] = [
        ("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", "1"),
        ("HWLOC_PLUGINS_PATH", "/numaplan/uses/no/hwloc/plugins"),
    ];
    let checked = match check {
        Check::Consistency => Some(("HWLOC_DEBUG_CHECK", "1")),
        Check::None => None,
    };
    let vars: Vec<(&str, &str)> = SETTINGS.iter().chain(checked.iter()).copied().collect();
    crate::sys::env::with_vars(&vars, build)
}

/// The hwloc numaplan runs with: the release it was built against (pkg-config's, by build.rs),
/// how it is linked, and the API version the library itself reports.
pub fn library() -> String {
    let api = hwlocality::hwloc_api_version();
    format!(
        "hwloc {} ({}, API {}.{}.{})",
        env!("NUMAPLAN_HWLOC_VERSION"),
        if cfg!(feature = "dynamic-hwloc") {
            "linked dynamically"
        } else {
            "linked statically"
        },
        api >> 16,
        (api >> 8) & 0xff,
        api & 0xff
    )
}
