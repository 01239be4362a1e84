//! Family 1, compatible with `torchrun --numa-binding`: `node`, `socket`, `exclusive`,
//! `core-complex` (POLICIES.md). `smt`, `balanced`, `min_cores` and `max_cores` do not apply.

use std::collections::BTreeMap;

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId};

/// The four modes of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Node,
    Socket,
    Exclusive,
    CoreComplex,
}

pub fn place(ctx: &Ctx, units: &[Unit], mode: Mode) -> Result<Vec<Placement>, ResolveError> {
    // A GPU with unknown locality counts as node 0, as PyTorch does.
    let fallback = ctx.topo.nodes().first().map_or(NodeId(0), |n| n.id);
    let node_of = |u: &Unit| u.lead().and_then(|g| g.numa_node).unwrap_or(fallback);
    let gpu_of = |u: &Unit| u.lead().map_or(u.local_rank, |g| g.index.0);
    let mut out = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let node = node_of(unit);
        let peers: Vec<&Unit> = units.iter().filter(|u| node_of(u) == node).collect();
        let position = units[..i].iter().filter(|u| node_of(u) == node).count();
        let no_cpus = || {
            ResolveError::new(
                ResolveErrorKind::NodeWithoutCpus {
                    gpu: gpu_of(unit),
                    node: node.0,
                },
                "cpu.policy",
                "use `policy: auto`, which falls back to the nearest node with CPUs",
            )
            .note(match ctx.node_allowed(node) {
                a if a.is_empty() && ctx.topo.node_cpus(node).is_empty() => {
                    format!("node {node} is memory-only: it has no CPUs")
                }
                a if a.is_empty() => format!(
                    "node {node} has CPUs `{}`, none of them allowed",
                    ctx.topo.node_cpus(node)
                ),
                a => format!("node {node} has allowed CPUs `{a}`"),
            })
        };
        let cpus =
            match mode {
                Mode::Node => ctx.node_allowed(node),
                Mode::Socket => {
                    let package = ctx.topo.node_package(node);
                    ctx.topo
                        .nodes()
                        .iter()
                        .filter(|n| ctx.topo.node_package(n.id) == package)
                        .map(|n| ctx.node_allowed(n.id))
                        .fold(CpuSet::new(), |a, b| a.union(&b))
                }
                Mode::Exclusive => {
                    let mut cores = ctx.node_cores(node);
                    cores.sort_by_key(|c| c.key);
                    let k = cores.len() as u32;
                    let p = peers.len() as u32;
                    let per = k / p;
                    if per < 1 {
                        return Err(ResolveError::new(
                        ResolveErrorKind::ExclusiveTooFew {
                            node: node.0,
                            cores: k,
                            peers: p,
                        },
                        "cpu.policy",
                        "use `policy: node` to let the ranks share the node, or run fewer ranks",
                    )
                    .note(format!("node {node} has allowed CPUs `{}`", ctx.node_allowed(node))));
                    }
                    let r = position as u32;
                    let start = r * per + r.min(k % p);
                    let count = per + u32::from(r < k % p);
                    cores[start as usize..(start + count) as usize]
                        .iter()
                        .map(|c| &c.cpus)
                        .collect()
                }
                Mode::CoreComplex => {
                    let mut groups: BTreeMap<L3Id, CpuSet> = BTreeMap::new();
                    for c in ctx.node_cores(node) {
                        let g = groups.entry(c.l3).or_default();
                        *g = g.union(&c.cpus);
                    }
                    let mut groups: Vec<CpuSet> = groups.into_values().collect();
                    groups.sort_by_key(|g| (std::cmp::Reverse(g.len()), g.first()));
                    match groups.get(position % groups.len().max(1)) {
                        Some(g) => g.clone(),
                        None => CpuSet::new(),
                    }
                }
            };
        if cpus.is_empty() {
            return Err(no_cpus());
        }
        let home = ctx.nearest_cpu_node(node, ctx.topo.node_package(node));
        out.push(Placement {
            cores: count_cores(ctx, &cpus),
            cpus,
            home,
            memory_nodes: home.into_iter().collect(),
        });
    }
    Ok(out)
}

/// Physical cores touched by a CPU set.
pub fn count_cores(ctx: &Ctx, cpus: &CpuSet) -> u32 {
    ctx.cores
        .iter()
        .filter(|c: &&ACore| c.cpus.intersects(cpus))
        .count() as u32
}
