//! The CPUs a job may use: the machine's allowed set, narrowed by the spec's `cpu.allowed`
//! and `cpu.allowed_nodes`, and what that cuts from each node (W0203).

use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::ids::{NodeId, node_list};
use crate::spec::{Policy, Spec};
use crate::topology::Topology;

/// The CPUs the plan may use: the topology's allowed set, narrowed by `cpu.allowed` and (but
/// under mpibind, which restricts its tree to them) by the CPUs of `cpu.allowed_nodes`.
pub fn allowed_cpus(spec: &Spec, topo: &Topology) -> Result<CpuSet, ResolveError> {
    let mut allowed = match &spec.cpu.allowed {
        Some(a) => topo.allowed().intersection(a),
        None => topo.allowed().clone(),
    };
    if let (Some(nodes), false) = (&spec.cpu.allowed_nodes, spec.cpu.policy == Policy::Mpibind) {
        allowed = allowed.intersection(&nodes_cpus(topo, nodes)?);
    }
    if allowed.is_empty() {
        return Err(ResolveError::new(
            ResolveErrorKind::NothingAllowed {
                what: "the job".into(),
            },
            "cpu.allowed",
            "list CPUs of this machine in `cpu.allowed`",
        )
        .note(format!(
            "topology `{}` has CPUs `{}`",
            topo.name(),
            topo.all_cpus()
        )));
    }
    Ok(allowed)
}

/// The CPUs of the NUMA nodes `cpu.allowed_nodes` names; an error when they have none.
fn nodes_cpus(topo: &Topology, nodes: &[NodeId]) -> Result<CpuSet, ResolveError> {
    let cpus = nodes
        .iter()
        .fold(CpuSet::new(), |all, n| all.union(&topo.node_cpus(*n)));
    if !cpus.is_empty() {
        return Ok(cpus);
    }
    let with_cpus: Vec<NodeId> = topo
        .nodes()
        .iter()
        .filter(|n| !n.kind.is_memory_only())
        .map(|n| n.id)
        .collect();
    Err(ResolveError::new(
        ResolveErrorKind::NothingAllowed {
            what: "the job".into(),
        },
        "cpu.allowed_nodes",
        "list NUMA nodes with CPUs of this machine in `cpu.allowed_nodes`",
    )
    .note(format!(
        "`cpu.allowed_nodes: {}` names no NUMA node with CPUs of `{}`; its nodes with CPUs are {}",
        node_list(nodes),
        topo.name(),
        node_list(&with_cpus)
    )))
}

/// What the allowed set cuts from each node with CPUs ("node 1 has 2 of 4 CPUs allowed").
/// Inside a container, the CPUs it was discovered with (its cgroup's cpuset, within the
/// affinity it started with) are the machine the plan is made for, as a smaller machine's
/// would be: only what the spec cuts from them is a restriction. (A plan made outside and run
/// in a smaller cpuset is the node check's to refuse or warn about.)
pub fn restriction_warnings(topo: &Topology, allowed: &CpuSet) -> Vec<Warning> {
    let machine = match topo.container() {
        Some(_) => topo.allowed().clone(),
        None => topo.all_cpus(),
    };
    topo.nodes()
        .iter()
        .filter(|n| !n.kind.is_memory_only())
        .filter_map(|node| {
            let cpus = topo.node_cpus(node.id).intersection(&machine);
            let usable = cpus.intersection(allowed);
            (usable.len() < cpus.len()).then(|| {
                Warning::new(
                    codes::W0203_CPUS_RESTRICTED,
                    format!(
                        "node {} has {} of {} CPUs allowed",
                        node.id,
                        usable.len(),
                        cpus.len()
                    ),
                )
            })
        })
        .collect()
}
