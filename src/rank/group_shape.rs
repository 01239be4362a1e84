//! A group of a plan of several groups as `rank::group` finds it and its errors list it: its
//! name, node count and machine.

use crate::plan::MachineShape;

/// A group as the finder and its errors see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub name: String,
    pub nodes: u32,
    pub topology: String,
    pub shape: MachineShape,
}

/// The groups, one line each: `trainer: 2 nodes of nvidia-dgx-h100 (224 CPUs, 8 NUMA nodes,
/// 8 GPUs)`.
pub fn groups_text(groups: &[GroupShape]) -> String {
    groups
        .iter()
        .map(|g| {
            format!(
                "`{}`: {} node(s) of {} ({})",
                g.name,
                g.nodes,
                g.topology,
                shape_text(&g.shape)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `224 CPUs, 8 NUMA nodes, 8 GPUs`.
pub fn shape_text(s: &MachineShape) -> String {
    format!(
        "{} CPUs, {} NUMA nodes, {} GPUs",
        s.cpus, s.numa_nodes, s.gpus
    )
}
