//! Typed identifiers, so that a NUMA node id is never confused with a GPU index or a CPU.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A NUMA node, by its OS index (what `numactl` and `/sys/devices/system/node` call it).
    NodeId
);
id_type!(
    /// A processor package (socket), by its OS index.
    PackageId
);
id_type!(
    /// An L3 group (the CPUs sharing the highest-level data cache), numbered in topology order.
    L3Id
);
id_type!(
    /// A GPU, by the index `nvidia-smi`/`rocm-smi` give it.
    GpuIndex
);

/// `0, 1`: the packages a NUMA node spans.
pub fn package_names(packages: &[PackageId]) -> String {
    let names: Vec<String> = packages.iter().map(|p| p.to_string()).collect();
    names.join(", ")
}

/// Node ids in cpulist syntax (`4-11`, `0,2`), the notation numactl and the kernel use for node
/// lists; empty for none.
pub fn node_list(nodes: &[NodeId]) -> String {
    nodes
        .iter()
        .map(|n| n.0)
        .collect::<crate::cpuset::CpuSet>()
        .to_string()
}

/// A running rank: its local rank in the plan and the process that is it. Ordered by rank,
/// then pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankPid {
    pub rank: u32,
    pub pid: u32,
}
