//! The orders and sets `policy: mpibind` reads from a tree (docs/mpibind.md §0.3-0.5): objects
//! in logical order, NUMA order, device order, NUMA sets, the Core level and the SMT level.

use std::collections::BTreeSet;

use super::object::{CpuTree, Kind, TreeObject};
use crate::cpuset::CpuSet;
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;

/// One object, numbered in logical (depth-first) order.
#[derive(Clone, Debug)]
pub struct Flat {
    pub kind: Kind,
    pub depth: u32,
    pub cpus: CpuSet,
    pub nodes: Vec<NodeId>,
    pub parent: Option<usize>,
    /// Objects below it, itself excluded: `index+1 .. end`.
    pub end: usize,
}

/// A NUMA node and its parent (the object it is attached to), in NUMA order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    pub node: NodeId,
    pub parent: usize,
}

/// A tree, flattened for the mapping's questions.
#[derive(Clone, Debug)]
pub struct TreeView {
    pub objects: Vec<Flat>,
    /// Every NUMA node, in NUMA order: an object's normal children before its own nodes.
    pub domains: Vec<Domain>,
    /// Every GPU, in device order (an object's GPUs after everything below it), with the
    /// object it hangs from (its locality).
    pub gpus: Vec<(PciAddr, usize)>,
}

impl TreeView {
    pub fn new(tree: &CpuTree) -> TreeView {
        let mut view = TreeView {
            objects: Vec::new(),
            domains: Vec::new(),
            gpus: Vec::new(),
        };
        view.add(&tree.root, None);
        view
    }

    fn add(&mut self, o: &TreeObject, parent: Option<usize>) {
        let index = self.objects.len();
        self.objects.push(Flat {
            kind: o.kind,
            depth: o.depth,
            cpus: o.cpus.clone(),
            nodes: o.nodes.clone(),
            parent,
            end: 0,
        });
        for c in &o.children {
            self.add(c, Some(index));
        }
        self.objects[index].end = self.objects.len();
        self.domains.extend(o.nodes.iter().map(|&node| Domain {
            node,
            parent: index,
        }));
        self.gpus.extend(o.gpus.iter().map(|&pci| (pci, index)));
    }

    /// The depth of the Core level: the cores', else the PUs'.
    pub fn core_depth(&self) -> u32 {
        let of = |kind: Kind| {
            self.objects
                .iter()
                .find(|o| o.kind == kind)
                .map(|o| o.depth)
        };
        of(Kind::Core).or(of(Kind::Pu)).unwrap_or(0)
    }

    /// The SMT level: the PU count of the first object of the Core level, 1 if it has none.
    pub fn smt_level(&self) -> usize {
        let depth = self.core_depth();
        self.objects
            .iter()
            .position(|o| o.depth == depth)
            .map_or(1, |i| self.children(i).count().max(1))
    }

    /// An object's children, in order.
    pub fn children(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        (index + 1..self.objects[index].end).filter(move |&i| self.objects[i].parent == Some(index))
    }

    /// The levels (depths) from `from` down to `to`, both included, that hold objects.
    pub fn depths(&self, from: u32, to: u32) -> Vec<u32> {
        let set: BTreeSet<u32> = self
            .objects
            .iter()
            .map(|o| o.depth)
            .filter(|d| (from..=to).contains(d))
            .collect();
        set.into_iter().collect()
    }

    /// The objects of level `depth` whose (non-empty) CPUs lie within object `root`'s, in
    /// logical order (hwloc's "inside cpuset"). Only its subtree can hold them: the objects of
    /// its level and below outside it have other CPUs.
    pub fn within(&self, depth: u32, root: usize) -> Vec<usize> {
        let cpus = &self.objects[root].cpus;
        (root..self.objects[root].end)
            .filter(|&i| {
                let o = &self.objects[i];
                o.depth == depth && !o.cpus.is_empty() && o.cpus.is_subset(cpus)
            })
            .collect()
    }

    /// An object's NUMA set: the nodes attached to it, to any ancestor, or anywhere below it.
    pub fn numa_set(&self, index: usize) -> BTreeSet<NodeId> {
        let mut set: BTreeSet<NodeId> = self.objects[index..self.objects[index].end]
            .iter()
            .flat_map(|o| o.nodes.iter().copied())
            .collect();
        let mut up = self.objects[index].parent;
        while let Some(p) = up {
            set.extend(self.objects[p].nodes.iter().copied());
            up = self.objects[p].parent;
        }
        set
    }
}
