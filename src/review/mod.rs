//! Reviewing plans: quality figures, a semantic diff of two plans, and `explain` (a table per
//! rank and a picture of the machine). Pure: a plan and, where known, the topology it is for, in;
//! text or SVG out.

pub mod diff;
pub mod explain;
pub mod mpibind;
pub mod picture;
pub mod quality;
mod rank_diff;
pub mod svg;

use std::collections::BTreeSet;

use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId};
use crate::plan::Plan;
use crate::topology::Topology;

/// The ranks owning a CPU of each core of `topo`, in `topo.cores()` order.
pub fn core_owners(plan: &Plan, topo: &Topology) -> Vec<BTreeSet<u32>> {
    let mut owners = vec![BTreeSet::new(); topo.cores().len()];
    for r in &plan.ranks {
        for core in topo.cores_touching(&r.cpus) {
            owners[core].insert(r.local_rank);
        }
    }
    owners
}

/// The indices (in `topo.cores()`) of the cores holding any of `cpus`.
pub fn cores_of(topo: &Topology, cpus: &CpuSet) -> BTreeSet<usize> {
    topo.cores_touching(cpus).into_iter().collect()
}

/// The L3 groups of the given cores, ascending.
pub fn l3_of(topo: &Topology, cores: &BTreeSet<usize>) -> BTreeSet<L3Id> {
    cores.iter().map(|&i| topo.cores()[i].l3).collect()
}

/// A rank's home node: the plan's, else the node holding most of its CPUs.
pub fn home_node(topo: &Topology, numa_node: Option<NodeId>, cpus: &CpuSet) -> Option<NodeId> {
    numa_node.or_else(|| {
        topo.nodes()
            .iter()
            .map(|n| (topo.node_cpus(n.id).intersection(cpus).len(), n.id))
            .filter(|(count, _)| *count > 0)
            .max_by_key(|(count, id)| (*count, std::cmp::Reverse(*id)))
            .map(|(_, id)| id)
    })
}

/// `[3, 4, 5, 9]` as `3-5,9`.
pub fn id_list(ids: impl IntoIterator<Item = u32>) -> String {
    ids.into_iter().collect::<CpuSet>().to_string()
}
