//! What `/sys` and `/proc` say of this node and this process, for the node check of `exec` and
//! `bind`: its CPUs and NUMA nodes counted as the generated launchers count them, the online
//! lists, the memory nodes this process may use, and its environment as the launcher code reads
//! it.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;

use super::proc;

/// The CPU and NUMA node directories of `/sys` (`cpu0`, `node0`...), counted as `check_node` in
/// the templates counts them. A kernel without NUMA support has no node directories: one node.
pub fn cpus_and_nodes() -> (usize, usize) {
    let count = |dir: &str, prefix: &str| {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| {
                    name.strip_prefix(prefix)
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count()
        })
    };
    (
        count("/sys/devices/system/cpu", "cpu"),
        count("/sys/devices/system/node", "node").max(1),
    )
}

/// `/sys/devices/system/cpu/online`, when readable.
pub fn online_cpus() -> Option<CpuSet> {
    proc::list("/sys/devices/system/cpu/online")
}

/// `/sys/devices/system/node/online`, when readable.
pub fn online_nodes() -> Option<CpuSet> {
    proc::list("/sys/devices/system/node/online")
}

/// The memory nodes this process may use (`Mems_allowed_list`: a cgroup's `cpuset.mems`).
pub fn mems_allowed() -> Option<CpuSet> {
    proc::status_field("Mems_allowed_list").and_then(|v| v.parse().ok())
}

/// This process's environment: the variables whose name and value are UTF-8
/// (`std::env::vars` panics on any other; a launcher's variables are all ASCII).
pub fn environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}
