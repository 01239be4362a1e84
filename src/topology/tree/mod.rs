//! hwloc's object tree as `policy: mpibind` reads it (docs/mpibind.md §0): the
//! CPU-side objects from the machine down to the PUs, each with its CPUs, the NUMA nodes
//! attached to it and the GPUs hanging from it, in hwloc's order.
//!
//! The other families read the flat model (`model/`); only mpibind walks every level hwloc keeps
//! between a NUMA node's parent and the cores (L3s, Dies, Groups). An hwloc source keeps hwloc's
//! own tree (`hwloc/tree.rs`); a numaplan fixture gets one made of its own levels (package,
//! node, L3 group, core, CPU) by `model/levels.rs`. `structure.rs` merges the levels that
//! add no structure, as hwloc does at load; `restrict.rs` is hwloc's restriction to some CPUs or
//! NUMA nodes; `view.rs` the orders and sets the mapping reads.

mod object;
mod restrict;
mod structure;
mod view;

pub use object::{CpuTree, Kind, TreeObject};
pub use view::{Domain, TreeView};

/// What a caller reads of a machine. Every policy plans on the model; only `policy: mpibind`
/// reads hwloc's object tree, which an hwloc source builds (and a plan's fingerprint covers)
/// only when asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The model alone.
    Model,
    /// The model and, from an hwloc source, hwloc's object tree.
    ModelAndTree,
}

/// hwloc's object tree as a topology holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HwlocTree {
    /// The source is not hwloc (a numaplan fixture): a tree is made of the model's own levels.
    #[default]
    NotHwloc,
    /// hwloc's tree, read.
    Read(CpuTree),
    /// hwloc's tree, not read: the topology was loaded for a policy that never reads it.
    NotRead,
}
