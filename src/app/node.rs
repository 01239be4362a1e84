//! This node's facts, composed where both halves may be named: its CPUs, NUMA nodes and
//! allowed sets (`sys::node`, through `exec::NodeFacts`) and its GPUs on the PCI bus
//! (`topology::pci_gpus`), which `exec`, `bind` and the search for a node's group read.

use crate::error::Error;
use crate::exec::{self, NodeFacts};
use crate::plan::MachineShape;
use crate::topology::pci_gpus;

/// What `exec` and `bind` check a plan against before they start or bind a rank.
pub(super) fn facts() -> Result<NodeFacts, Error> {
    Ok(NodeFacts::read(pci_gpus::gpus())?)
}

/// This node's shape alone, as a plan's machine is counted: what a node's group is found by
/// when nothing names it.
pub(super) fn shape() -> MachineShape {
    exec::machine_shape(pci_gpus::count())
}
