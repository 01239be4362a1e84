//! `numaplan --version` and `numaplan version`: the release, and for bug reports what numaplan
//! runs with (hwloc, NVML, features, target).

use crate::topology;

/// `numaplan 0.1.0`; verbose, a second line with what numaplan runs with, for bug reports:
/// `hwloc 2.9.0 (static, API 2.8.0); NVML: not found (...); features: static-hwloc`.
pub(super) fn version(verbose: bool) -> String {
    let mut text = format!("numaplan {}\n", env!("CARGO_PKG_VERSION"));
    if verbose {
        let nvml = match topology::nvml::driver() {
            Ok(driver) => format!("found ({driver})"),
            Err(why) => format!("not found ({why})"),
        };
        let features = if cfg!(feature = "dynamic-hwloc") {
            "dynamic-hwloc"
        } else {
            "static-hwloc"
        };
        text += &format!(
            "{}; NVML: {nvml}; features: {features}; target: {}-{}\n",
            topology::hwloc::library(),
            std::env::consts::ARCH,
            std::env::consts::OS,
        );
    }
    text
}
