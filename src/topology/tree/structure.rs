//! The structure rule (docs/mpibind.md §0.2): hwloc keeps a level only where
//! it adds structure, at load and again after a restriction.
//!
//! Two adjacent levels merge when every object of the upper one has exactly one child and that
//! child is on the lower one (for the PU level: and no upper object holds a NUMA node). The
//! Machine and PU levels never go; otherwise the level of lower rank goes (Group < instruction
//! cache < data cache < Die < Package < Core), the lower level on a tie. The survivor inherits
//! the NUMA nodes and GPUs of the object that went: at the end of its lists when the child went,
//! at the front when the parent went. Pairs merge from the bottom up, as hwloc walks its levels
//! (`hwloc_filter_levels_keep_structure`): the order decides which object a GPU ends under, and
//! so the device order (a GPU under a merged L3 and one beside it, restricted to one CPU, are
//! [2, 3] bottom up and were [3, 2] top down).

use std::collections::BTreeMap;

use super::object::{CpuTree, Kind, TreeObject};

/// A kind's rank in the rule; `None`: its level never goes.
fn rank(kind: Kind) -> Option<u8> {
    match kind {
        Kind::Machine | Kind::Pu => None,
        Kind::Group => Some(0),
        Kind::InstructionCache(_) => Some(1),
        Kind::DataCache(_) => Some(2),
        Kind::Die => Some(3),
        Kind::Package => Some(4),
        Kind::Core => Some(5),
    }
}

/// Which of two merging levels goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Goes {
    Upper(u32),
    Lower(u32),
}

impl CpuTree {
    /// Merges adjacent levels until every level left adds structure.
    pub fn merge_levels(&mut self) {
        while let Some(goes) = self.next_merge() {
            match goes {
                Goes::Upper(depth) => remove_upper(&mut self.root, depth),
                Goes::Lower(depth) => remove_lower(&mut self.root, depth),
            }
        }
    }

    /// The deepest pair of adjacent levels that merges, and which of them goes.
    fn next_merge(&self) -> Option<Goes> {
        let mut levels: BTreeMap<u32, Kind> = BTreeMap::new();
        self.root.walk(&mut |o| {
            levels.insert(o.depth, o.kind);
        });
        let levels: Vec<(u32, Kind)> = levels.into_iter().collect();
        levels.windows(2).rev().find_map(|pair| {
            let [(upper, upper_kind), (lower, lower_kind)] = *pair else {
                return None;
            };
            let goes = match (rank(upper_kind), rank(lower_kind)) {
                (None, None) => return None,
                (None, Some(_)) => Goes::Lower(lower),
                (Some(_), None) => Goes::Upper(upper),
                (Some(u), Some(l)) if u < l => Goes::Upper(upper),
                (Some(_), Some(_)) => Goes::Lower(lower),
            };
            self.single_children(upper, lower, lower_kind == Kind::Pu)
                .then_some(goes)
        })
    }

    /// Whether every object on level `upper` has exactly one child, on level `lower` (and,
    /// where `no_nodes`, holds no NUMA node).
    fn single_children(&self, upper: u32, lower: u32, no_nodes: bool) -> bool {
        let mut all = true;
        self.root.walk(&mut |o| {
            if o.depth == upper {
                all &= o.children.len() == 1
                    && o.children[0].depth == lower
                    && (!no_nodes || o.nodes.is_empty());
            }
        });
        all
    }
}

impl TreeObject {
    /// Calls `f` on this object and every object below it, depth-first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a TreeObject)) {
        f(self);
        for c in &self.children {
            c.walk(f);
        }
    }
}

/// Replaces every object on level `depth` by its only child, which takes its NUMA nodes and GPUs
/// at the front of its own.
fn remove_upper(o: &mut TreeObject, depth: u32) {
    for child in &mut o.children {
        if child.depth == depth && child.children.len() == 1 {
            let mut only = child.children.remove(0);
            let mut nodes = std::mem::take(&mut child.nodes);
            nodes.append(&mut only.nodes);
            only.nodes = nodes;
            let mut gpus = std::mem::take(&mut child.gpus);
            gpus.append(&mut only.gpus);
            only.gpus = gpus;
            *child = only;
        }
        remove_upper(child, depth);
    }
}

/// Removes every object on level `depth`: its parent takes its children in its place, and its
/// NUMA nodes and GPUs at the end of its own.
fn remove_lower(o: &mut TreeObject, depth: u32) {
    let children = std::mem::take(&mut o.children);
    for mut child in children {
        if child.depth == depth {
            o.nodes.append(&mut child.nodes);
            o.gpus.append(&mut child.gpus);
            o.children.append(&mut child.children);
        } else {
            o.children.push(child);
        }
    }
    for child in &mut o.children {
        remove_lower(child, depth);
    }
}
