//! Family 1, compatible with `torchrun --numa-binding`: `node`, `socket`, `exclusive`,
//! `core-complex` (docs/policies.md). `smt`, `balanced`, `min_cores`, `max_cores`, the reservations
//! and `scope` do not apply (`unused_options.rs` says so in the plan).

use std::collections::BTreeMap;

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId};
use crate::spec::TorchMode as Mode;
use crate::topology::model::Gpu;

/// `selected` are the GPUs the job selected: in this family each one is a peer on its node,
/// whether or not a rank uses it, as PyTorch counts every visible GPU.
pub fn place(
    ctx: &Ctx,
    selected: &[&Gpu],
    units: &[Unit],
    mode: Mode,
) -> Result<Vec<Placement>, ResolveError> {
    let mut out = Vec::new();
    for unit in units {
        let node = gpu_node(ctx, unit)?;
        let cpus = match mode {
            Mode::Node => ctx.node_allowed(node),
            Mode::Socket => socket(ctx, node),
            Mode::Exclusive => {
                let (position, peers) = peers(selected, units, unit, node);
                exclusive(ctx, node, position, peers)?
            }
            Mode::CoreComplex => {
                let (position, _) = peers(selected, units, unit, node);
                core_complex(ctx, node, position)
            }
        };
        if cpus.is_empty() {
            return Err(node_without_cpus(ctx, unit, node));
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

/// The GPU's NUMA node; a GPU of unknown locality counts as node 0, as PyTorch reads the
/// device's `numa_node` of -1, which fails where node 0 does not exist or has no allowed CPU.
fn gpu_node(ctx: &Ctx, unit: &Unit) -> Result<NodeId, ResolveError> {
    let Some(gpu) = unit.lead() else {
        // A CPU-only rank (`gpus: none`) stands where an unknown-locality GPU would.
        return node_zero(ctx, unit, None);
    };
    match gpu.numa_node {
        Some(node) => Ok(node),
        None => node_zero(ctx, unit, Some(gpu)),
    }
}

fn node_zero(ctx: &Ctx, unit: &Unit, gpu: Option<&Gpu>) -> Result<NodeId, ResolveError> {
    let zero = NodeId(0);
    let why = match ctx.topo.node(zero) {
        None => "the machine has no node 0",
        Some(_) if ctx.node_allowed(zero).is_empty() => "node 0 has no allowed CPUs",
        Some(_) => return Ok(zero),
    };
    let nodes: Vec<String> = ctx.cpu_nodes().iter().map(|n| n.to_string()).collect();
    Err(ResolveError::new(
        ResolveErrorKind::UnknownLocality {
            who: match gpu {
                Some(g) => format!("GPU {}", g.index),
                None => format!("CPU-only rank {}", unit.local_rank),
            },
            why: why.into(),
        },
        if gpu.is_some() { "cpu.policy" } else { "gpus" },
        "use `policy: auto`, which places such a rank like a CPU-only rank, or give the GPU its `numa_node` in the topology",
    )
    .note(format!("nodes with allowed CPUs: {}", nodes.join(", "))))
}

/// The rank's position among its peers and their count: the selected GPUs of its node, in job
/// order (the CUDA numbering the ranks see, as PyTorch counts them; docs/policies.md, "Terms"). CPU-only
/// ranks, which exist only when no GPU is selected, are each other's peers.
fn peers(selected: &[&Gpu], units: &[Unit], unit: &Unit, node: NodeId) -> (usize, usize) {
    let Some(lead) = unit.lead() else {
        return (unit.local_rank as usize, units.len());
    };
    let on_node: Vec<u32> = selected
        .iter()
        .filter(|g| g.numa_node.unwrap_or(NodeId(0)) == node)
        .map(|g| g.index.0)
        .collect();
    let position = on_node
        .iter()
        .position(|&i| i == lead.index.0)
        .expect("invariant: a rank's GPU is selected and on its node");
    (position, on_node.len())
}

/// `socket`: the allowed CPUs of every node in the GPU's node's package (nodes without allowed
/// CPUs add nothing; PyTorch crashes on them).
fn socket(ctx: &Ctx, node: NodeId) -> CpuSet {
    let package = ctx.topo.node_package(node);
    ctx.topo
        .nodes()
        .iter()
        .filter(|n| ctx.topo.node_package(n.id) == package)
        .map(|n| ctx.node_allowed(n.id))
        .fold(CpuSet::new(), |a, b| a.union(&b))
}

/// `exclusive`: the node's allowed cores by key, in contiguous runs: floor(K/P) each, the first
/// K mod P peers one more.
fn exclusive(
    ctx: &Ctx,
    node: NodeId,
    position: usize,
    peers: usize,
) -> Result<CpuSet, ResolveError> {
    let mut cores = ctx.node_cores(node);
    cores.sort_by_key(|c| c.key);
    let (k, p) = (cores.len(), peers);
    let per = k / p;
    if per < 1 {
        return Err(ResolveError::new(
            ResolveErrorKind::ExclusiveTooFew {
                node: node.0,
                cores: k as u32,
                peers: p as u32,
            },
            "cpu.policy",
            "use `policy: node` to let the ranks share the node, or run fewer ranks",
        )
        .note(format!(
            "node {node} has allowed CPUs {}",
            crate::phrase::cpus_or_none(&ctx.node_allowed(node))
        )));
    }
    let r = position;
    let start = r * per + r.min(k % p);
    let count = per + usize::from(r < k % p);
    Ok(cores[start..start + count]
        .iter()
        .map(|c| &c.cpus)
        .collect())
}

/// `core-complex`: the node's allowed CPUs grouped by L3 group, more allowed CPUs first, then by
/// the first CPU of the whole group (allowed or not, as PyTorch reads `shared_cpu_list`); peer r
/// takes group r mod the number of groups.
fn core_complex(ctx: &Ctx, node: NodeId, position: usize) -> CpuSet {
    let mut groups: BTreeMap<L3Id, CpuSet> = BTreeMap::new();
    for c in ctx.node_cores(node) {
        let g = groups.entry(c.l3).or_default();
        *g = g.union(&c.cpus);
    }
    let mut groups: Vec<(L3Id, CpuSet)> = groups.into_iter().collect();
    groups.sort_by_key(|(l3, cpus)| (std::cmp::Reverse(cpus.len()), ctx.l3_first_cpu(*l3)));
    match groups.get(position % groups.len().max(1)) {
        Some((_, cpus)) => cpus.clone(),
        None => CpuSet::new(),
    }
}

fn node_without_cpus(ctx: &Ctx, unit: &Unit, node: NodeId) -> ResolveError {
    ResolveError::new(
        ResolveErrorKind::NodeWithoutCpus {
            gpu: unit.lead().map_or(unit.local_rank, |g| g.index.0),
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
}

/// Physical cores touched by a CPU set.
pub fn count_cores(ctx: &Ctx, cpus: &CpuSet) -> u32 {
    ctx.cores
        .iter()
        .filter(|c: &&ACore| c.cpus.intersects(cpus))
        .count() as u32
}
