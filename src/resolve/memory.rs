//! Memory policy per rank (docs/policies.md, "Memory, NICs and each rank's environment"): the spec's policy or the family's default,
//! on the rank's home node(s) or the nodes `memory.nodes` names (`local` and `local+N` resolved
//! for each rank), kept within the nodes whose memory the job may use.

use std::collections::BTreeMap;

use super::context::Placement;
use super::error::{ResolveError, ResolveErrorKind};
use crate::diag::{Warning, codes};
use crate::ids::{NodeId, node_list};
use crate::plan::MemoryBinding;
use crate::spec::{Family, MemPolicy, MemoryNode, Spec};
use crate::topology::Topology;

/// Each rank's memory binding, in rank order; `warnings` gains what the plan should say about
/// them (nodes outside the allowed memory, explicit nodes remote from a rank's home).
pub fn memory_bindings(
    spec: &Spec,
    topo: &Topology,
    placements: &[Placement],
    warnings: &mut Vec<Warning>,
) -> Result<Vec<MemoryBinding>, ResolveError> {
    let policy = policy(spec);
    check_named_nodes(spec, topo)?;
    let mut remote: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut spans: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for (rank, p) in placements.iter().enumerate() {
        let nodes = match (policy, &spec.memory.nodes) {
            (MemPolicy::None, _) => Vec::new(),
            // MPOL_PREFERRED takes one node: a CPU-only rank spanning several prefers its
            // first, which the plan says, rather than a list the kernel would cut.
            (MemPolicy::Preferred, None) if p.memory_nodes.len() > 1 => {
                spans.push(rank as u32);
                p.memory_nodes[..1].to_vec()
            }
            // The home node, or every node a CPU-only rank spans.
            (_, None) => p.memory_nodes.clone(),
            (_, Some(list)) => {
                let nodes = rank_nodes(list, p, topo, rank as u32)?;
                if policy == MemPolicy::Preferred && nodes.len() > 1 {
                    return Err(ResolveError::new(
                        ResolveErrorKind::PreferredManyNodes { count: nodes.len() },
                        "memory.nodes",
                        "use `policy: interleave` to spread over several nodes, or list one node",
                    ));
                }
                if nodes.iter().any(|n| !is_local(topo, *n, &p.memory_nodes)) {
                    remote
                        .entry(node_list(&nodes))
                        .or_default()
                        .push(rank as u32);
                }
                nodes
            }
        };
        let nodes = within_allowed_memory(nodes, topo, warnings);
        out.push(MemoryBinding {
            policy,
            nodes,
            // No policy: nothing to refuse.
            required: policy == MemPolicy::None || spec.memory.is_required(),
        });
    }
    if !spans.is_empty() {
        let ranks: crate::cpuset::CpuSet = spans.into_iter().collect();
        warnings.push(Warning::new(
            codes::W0209_PREFERRED_SPAN,
            format!(
                "CPU-only rank(s) {ranks} span several nodes, and `preferred` memory names one: each prefers its first node; set `memory.policy: interleave` or `bind` to cover them all"
            ),
        ));
    }
    for (nodes, ranks) in remote {
        let ranks: crate::cpuset::CpuSet = ranks.into_iter().collect();
        warnings.push(Warning::new(
            codes::W0210_MEMORY_REMOTE,
            format!(
                "memory of rank(s) {ranks} goes to node(s) {nodes} (`memory.nodes`), remote from their home node: memory access there is slower"
            ),
        ));
    }
    Ok(out)
}

/// The spec's memory policy, else the family's default: `preferred` for `auto`, `none` for
/// the compatibility families (as their tools do; mpibind sets none).
fn policy(spec: &Spec) -> MemPolicy {
    spec.memory
        .policy
        .unwrap_or(match spec.cpu.policy.family() {
            Family::Auto => MemPolicy::Preferred,
            Family::PyTorch | Family::GpuAffinity | Family::Mpibind => MemPolicy::None,
        })
}

/// Nodes named by id must exist on the machine.
fn check_named_nodes(spec: &Spec, topo: &Topology) -> Result<(), ResolveError> {
    for entry in spec.memory.nodes.iter().flatten() {
        if let MemoryNode::Node(n) = entry
            && topo.node(*n).is_none()
        {
            return Err(unknown_node(topo, *n, None));
        }
    }
    Ok(())
}

/// A rank's nodes from `memory.nodes`: ids as written, `local+N` as the rank's home node(s)
/// plus N. Sorted, each once.
fn rank_nodes(
    list: &[MemoryNode],
    p: &Placement,
    topo: &Topology,
    rank: u32,
) -> Result<Vec<NodeId>, ResolveError> {
    let mut nodes = Vec::new();
    for entry in list {
        match entry {
            MemoryNode::Node(n) => nodes.push(*n),
            MemoryNode::Local(offset) => {
                for home in &p.memory_nodes {
                    let node = home
                        .0
                        .checked_add(*offset)
                        .map(NodeId)
                        .filter(|n| topo.node(*n).is_some())
                        .ok_or_else(|| {
                            unknown_node(
                                topo,
                                NodeId(home.0.saturating_add(*offset)),
                                Some(format!("rank {rank}'s home node {home} + {offset}")),
                            )
                        })?;
                    nodes.push(node);
                }
            }
        }
    }
    nodes.sort();
    nodes.dedup();
    Ok(nodes)
}

fn unknown_node(topo: &Topology, node: NodeId, from: Option<String>) -> ResolveError {
    let have: Vec<String> = topo.nodes().iter().map(|n| n.id.to_string()).collect();
    let mut e = ResolveError::new(
        ResolveErrorKind::UnknownMemoryNode {
            node: node.0,
            topology: topo.name().to_string(),
        },
        "memory.nodes",
        "list NUMA nodes of the machine",
    );
    if let Some(from) = from {
        e = e.note(format!("`local+N` gives {from} = node {node}"));
    }
    e.note(format!("`{}` has nodes {}", topo.name(), have.join(", ")))
}

/// Whether `node` is local to a rank placed on `homes`: one of them, or a memory-only node (HBM,
/// GPU memory) that belongs to one of them.
fn is_local(topo: &Topology, node: NodeId, homes: &[NodeId]) -> bool {
    topo.cpu_node_of_memory(node)
        .is_some_and(|n| homes.contains(&n))
}

/// A rank's memory nodes within the nodes whose memory the job may use (the cpuset's mems): a
/// node outside them is replaced by the nearest allowed node (by distance, then id), which
/// `warnings` says once per node.
fn within_allowed_memory(
    nodes: Vec<NodeId>,
    topo: &Topology,
    warnings: &mut Vec<Warning>,
) -> Vec<NodeId> {
    let allowed = topo.allowed_memory();
    let mut out: Vec<NodeId> = Vec::new();
    for node in nodes {
        let target = if allowed.contains(&node) {
            node
        } else {
            let nearest = *allowed
                .iter()
                .min_by_key(|a| (topo.distance(node, **a).unwrap_or(u32::MAX), **a))
                .expect("invariant: a topology allows some memory node");
            let warning = Warning::new(
                codes::W0211_MEMORY_NOT_ALLOWED,
                format!(
                    "memory of node {node} is not allowed (allowed memory nodes {}); ranks placed there take memory from node {nearest}",
                    node_list(allowed)
                ),
            );
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
            nearest
        };
        if !out.contains(&target) {
            out.push(target);
        }
    }
    out
}
