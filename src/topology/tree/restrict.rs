//! hwloc's restriction of the tree to some CPUs or some NUMA nodes (docs/mpibind.md §3), then
//! the structure rule again.

use super::object::{CpuTree, TreeObject};
use crate::cpuset::CpuSet;
use crate::ids::NodeId;

impl CpuTree {
    /// Keeps only the PUs of `keep`: every object loses the others, an object left without PUs
    /// goes with its NUMA nodes and GPUs, and so do the memory-only nodes (`memory_only`) in any
    /// case.
    pub fn restrict_cpus(&mut self, keep: &CpuSet, memory_only: &impl Fn(NodeId) -> bool) {
        fn go(o: &mut TreeObject, keep: &CpuSet, memory_only: &impl Fn(NodeId) -> bool) {
            let cpus = o.cpus.intersection(keep);
            let lost = cpus != o.cpus;
            o.cpus = cpus;
            o.nodes.retain(|n| !memory_only(*n));
            for c in &mut o.children {
                go(c, keep, memory_only);
            }
            o.children.retain(|c| !c.cpus.is_empty());
            if lost {
                o.sort_children();
            }
        }
        go(&mut self.root, keep, memory_only);
        self.merge_levels();
    }

    /// Keeps only the NUMA nodes of `keep`: a PU goes when no node of its NUMA set is kept (the
    /// nodes of its ancestors), and an object left with neither PUs nor nodes goes with its
    /// GPUs.
    pub fn restrict_nodes(&mut self, keep: &[NodeId]) {
        fn go(o: &mut TreeObject, keep: &[NodeId], above: bool) {
            let covered = above || o.nodes.iter().any(|n| keep.contains(n));
            o.nodes.retain(|n| keep.contains(n));
            if o.children.is_empty() {
                if !covered {
                    o.cpus = CpuSet::new();
                }
                return;
            }
            for c in &mut o.children {
                go(c, keep, covered);
            }
            o.children
                .retain(|c| !c.cpus.is_empty() || !c.nodes.is_empty() || !c.children.is_empty());
            let cpus: CpuSet = o.children.iter().map(|c| &c.cpus).collect();
            if cpus != o.cpus {
                o.cpus = cpus;
                o.sort_children();
            }
        }
        go(&mut self.root, keep, false);
        self.merge_levels();
    }
}

impl TreeObject {
    /// Children by their lowest remaining PU (hwloc's order after a restriction); CPU-less
    /// ones keep their place after them.
    fn sort_children(&mut self) {
        self.children
            .sort_by_key(|c| c.cpus.first().unwrap_or(u32::MAX));
    }
}
