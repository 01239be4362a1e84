//! Family 3, numaplan's `auto` (docs/policies.md): 1. home node, 2. pool, 3. share, 4. placement,
//! 5. threads; one function per step. CPU-only ranks (and GPUs of unknown locality) are spread
//! over the nodes no GPU calls home, in blocks.

use std::collections::{BTreeMap, BTreeSet};

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::ids::{L3Id, NodeId};
use crate::spec::{Balance, Scope};

/// Ranks sharing one pool of cores.
struct Site {
    /// The node(s) the pool comes from.
    nodes: Vec<NodeId>,
    /// Pool: indices into `ctx.cores`, topology order.
    pool: Vec<usize>,
    /// The ranks placed here (positions in `units`), in rank order.
    ranks: Vec<usize>,
}

/// Where each rank goes before its cores are counted.
struct Homes {
    /// GPU ranks by home node.
    gpu: BTreeMap<usize, NodeId>,
    /// CPU-only ranks, and GPU ranks of unknown locality, in rank order.
    cpu_only: Vec<usize>,
}

pub fn place(
    ctx: &Ctx,
    units: &[Unit],
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Placement>, ResolveError> {
    let reserved = reserved_cores(ctx);
    let pool_of = |node: NodeId| -> Vec<usize> {
        (0..ctx.cores.len())
            .filter(|&i| ctx.cores[i].node == node && !reserved.contains(&ctx.cores[i].order))
            .collect()
    };
    let homes = home_nodes(ctx, units, warnings)?;
    let mut sites = gpu_pools(ctx, &homes, &pool_of);
    let spans = cpu_only_pools(ctx, units, &homes, &pool_of, &mut sites)?;
    let share_of = share(ctx, units, &sites)?;
    let mut out: BTreeMap<usize, Placement> = BTreeMap::new();
    for site in sites.iter().filter(|s| !s.ranks.is_empty()) {
        for (position, cores) in placement(ctx, &site.pool, site.ranks.len(), share_of(site))
            .into_iter()
            .enumerate()
        {
            out.insert(
                site.ranks[position],
                threads(ctx, &cores, site.nodes.clone()),
            );
        }
    }
    for (rank, nodes) in spans {
        let cores: Vec<usize> = nodes.iter().flat_map(|n| pool_of(*n)).collect();
        let limit = ctx.cpu.max_cores.map_or(cores.len(), |m| m as usize);
        let cores = &cores[..limit.min(cores.len())];
        span_has_min_cores(ctx, rank, &nodes, cores.len())?;
        out.insert(rank, threads(ctx, cores, nodes));
    }
    Ok(out.into_values().collect())
}

/// Step 1: each GPU rank's home node, the GPU's node or (when it has no allowed CPU) the nearest
/// node with allowed CPUs, which the plan says; ranks without a GPU or with a GPU of unknown
/// locality (also said) are placed as CPU-only ranks.
fn home_nodes(
    ctx: &Ctx,
    units: &[Unit],
    warnings: &mut Vec<Warning>,
) -> Result<Homes, ResolveError> {
    let mut homes = Homes {
        gpu: BTreeMap::new(),
        cpu_only: Vec::new(),
    };
    for (i, u) in units.iter().enumerate() {
        let Some(g) = u.lead() else {
            homes.cpu_only.push(i);
            continue;
        };
        let Some(node) = g.numa_node else {
            warnings.push(Warning::new(
                codes::W0207_GPU_LOCALITY_UNKNOWN,
                format!(
                    "GPU {} has unknown NUMA locality; its rank is placed as a CPU-only rank",
                    g.index
                ),
            ));
            homes.cpu_only.push(i);
            continue;
        };
        let home = ctx
            .nearest_cpu_node(node, ctx.gpu_package(g))
            .ok_or_else(|| nothing_allowed(&format!("GPU {}", g.index)))?;
        if home != node {
            let distance = ctx
                .topo
                .distance(node, home)
                .map_or(String::new(), |d| format!(" at distance {d}"));
            let why = if ctx.topo.node_cpus(node).is_empty() {
                "has no CPUs"
            } else {
                "has no allowed CPUs"
            };
            warnings.push(Warning::new(
                codes::W0208_GPU_NODE_FALLBACK,
                format!(
                    "GPU {}'s node {node} {why}; using node {home}{distance}",
                    g.index
                ),
            ));
        }
        homes.gpu.insert(i, home);
    }
    Ok(homes)
}

/// Step 2, for GPU ranks: a pool per home node, its allowed cores minus reserved ones; with
/// `scope: socket` the package's idle nodes are lent to it.
fn gpu_pools(ctx: &Ctx, homes: &Homes, pool_of: &dyn Fn(NodeId) -> Vec<usize>) -> Vec<Site> {
    let home_nodes: BTreeSet<NodeId> = homes.gpu.values().copied().collect();
    let mut sites: Vec<Site> = home_nodes
        .iter()
        .map(|&node| Site {
            nodes: vec![node],
            pool: pool_of(node),
            ranks: homes
                .gpu
                .iter()
                .filter(|(_, h)| **h == node)
                .map(|(i, _)| *i)
                .collect(),
        })
        .collect();
    if ctx.cpu.scope == Scope::Socket && !sites.is_empty() {
        lend_idle_nodes(ctx, &mut sites, &home_nodes, pool_of);
    }
    sites
}

/// Step 2, for CPU-only ranks: blocks over the nodes with allowed CPUs that no GPU rank calls
/// home. With R >= N such nodes, node n hosts ranks floor(nR/N)..floor((n+1)R/N)-1 (a new site);
/// with fewer ranks than nodes, each rank spans whole nodes (returned as `(rank, nodes)`).
fn cpu_only_pools(
    ctx: &Ctx,
    units: &[Unit],
    homes: &Homes,
    pool_of: &dyn Fn(NodeId) -> Vec<usize>,
    sites: &mut Vec<Site>,
) -> Result<Vec<(usize, Vec<NodeId>)>, ResolveError> {
    let cpu_only = &homes.cpu_only;
    if cpu_only.is_empty() {
        return Ok(Vec::new());
    }
    let home_nodes: BTreeSet<NodeId> = homes.gpu.values().copied().collect();
    let free: Vec<NodeId> = ctx
        .cpu_nodes()
        .into_iter()
        .filter(|n| !home_nodes.contains(n) && !pool_of(*n).is_empty())
        .collect();
    if free.is_empty() {
        let gpu = units[cpu_only[0]].lead().map_or(0, |g| g.index.0);
        return Err(ResolveError::new(
            ResolveErrorKind::UnplacedGpu { gpu },
            "gpus",
            "select only GPUs with a known NUMA node, or fix the topology's `numa_node`",
        ));
    }
    let (r, n) = (cpu_only.len(), free.len());
    if r >= n {
        for (k, node) in free.iter().enumerate() {
            sites.push(Site {
                nodes: vec![*node],
                pool: pool_of(*node),
                ranks: (k * r / n..(k + 1) * r / n).map(|j| cpu_only[j]).collect(),
            });
        }
        return Ok(Vec::new());
    }
    Ok(cpu_only
        .iter()
        .enumerate()
        .map(|(j, &rank)| (rank, free[j * n / r..(j + 1) * n / r].to_vec()))
        .collect())
}

/// Step 3: share = min(floor(K/P), `max_cores`) per site; balanced, its minimum over every
/// site. A share below `min_cores` (default 1) is an error with the numbers. Returns each
/// site's share.
fn share<'s>(
    ctx: &Ctx,
    units: &[Unit],
    sites: &'s [Site],
) -> Result<impl Fn(&Site) -> u32 + 's, ResolveError> {
    let max_cores = ctx.cpu.max_cores;
    let own = move |s: &Site| {
        let k = (s.pool.len() / s.ranks.len().max(1)) as u32;
        max_cores.map_or(k, |m| k.min(m))
    };
    let balanced = sites.iter().filter(|s| !s.ranks.is_empty()).map(own).min();
    let balance = ctx.cpu.balance;
    let share = move |s: &Site| match balance {
        Balance::Balanced => balanced.unwrap_or(0),
        Balance::Unbalanced => own(s),
    };
    let min = ctx.cpu.min_cores.max(1);
    // The site that runs short: balanced, the one with the smallest share of its own (every
    // rank gets that share), not merely the first.
    let short = sites
        .iter()
        .filter(|s| !s.ranks.is_empty() && share(s) < min)
        .min_by_key(|s| own(s));
    if let Some(site) = short {
        let node = site.nodes[0];
        let who = match units[site.ranks[0]].lead() {
            Some(_) => format!("each of the {} ranks on node {node}", site.ranks.len()),
            None => format!("each CPU-only rank on node {node}"),
        };
        let mut e = ResolveError::new(
            ResolveErrorKind::MinCores {
                who,
                got: share(site),
                min,
            },
            if ctx.cpu.min_cores > 1 {
                "cpu.min_cores"
            } else {
                "ranks_per_node"
            },
            short_help(ctx, sites),
        )
        .note(format!(
            "node {node} has {} usable cores for {} ranks (allowed CPUs {})",
            site.pool.len(),
            site.ranks.len(),
            crate::phrase::cpus_or_none(&ctx.node_allowed(node))
        ));
        if balance == Balance::Balanced && balanced != Some(own(site)) {
            e = e.note("`balanced: true` gives every rank the smallest node's share");
        }
        return Err(e);
    }
    Ok(share)
}

/// A CPU-only rank with whole nodes of its own (fewer ranks than nodes) holds `min_cores` as
/// a shared node does: fewer cores than it asks are an error, not a smaller rank.
fn span_has_min_cores(
    ctx: &Ctx,
    rank: usize,
    nodes: &[NodeId],
    cores: usize,
) -> Result<(), ResolveError> {
    let min = ctx.cpu.min_cores.max(1);
    if cores >= min as usize {
        return Ok(());
    }
    Err(ResolveError::new(
        ResolveErrorKind::MinCores {
            who: format!(
                "CPU-only rank {rank} ({} {})",
                if nodes.len() == 1 { "node" } else { "nodes" },
                crate::ids::node_list(nodes)
            ),
            got: cores as u32,
            min,
        },
        "cpu.min_cores",
        match ctx.cpu.max_cores {
            Some(_) => "ask for fewer cores per rank (`cpu.min_cores`) or raise `cpu.max_cores`",
            None => {
                "ask for fewer cores per rank (`cpu.min_cores`); this rank already has whole nodes"
            }
        },
    ))
}

/// What to do when a node's ranks get too few cores. More ranks than cores: let them share
/// the node's cores (policy `node`, each with its fair share of threads) or run fewer. Fewer
/// cores than `min_cores` asks: ask fewer. Either way, borrow a node of the same package where
/// one with allowed CPUs runs no rank (`scope: socket`).
fn short_help(ctx: &Ctx, sites: &[Site]) -> String {
    let busy: Vec<NodeId> = sites
        .iter()
        .filter(|s| !s.ranks.is_empty())
        .flat_map(|s| s.nodes.clone())
        .collect();
    let idle = ctx
        .topo
        .nodes()
        .iter()
        .any(|n| !busy.contains(&n.id) && !ctx.node_allowed(n.id).is_empty());
    let mut ways = vec![match ctx.cpu.min_cores > 1 {
        true => "ask for fewer cores per rank (`cpu.min_cores`)",
        false => "let the ranks share their node's cores with `--set cpu.policy=node`",
    }];
    ways.push("run fewer ranks per node");
    let cpu = ctx.cpu;
    if !cpu.reserve_cpus.is_empty() || cpu.reserve_cores > 0 || cpu.reserve_per_l3 > 0 {
        ways.push("reserve fewer cores (`cpu.reserve_*`)");
    }
    if idle {
        ways.push("borrow an idle node of the same package with `--set cpu.scope=socket`");
    }
    let last = ways.pop().expect("two ways at least");
    format!("{}, or {last}", ways.join(", "))
}

/// Step 4: whole L3 groups in contiguous runs when that leaves every rank `share` cores (the
/// first `share` of its run), else contiguous slices of the pool.
fn placement(ctx: &Ctx, pool: &[usize], ranks: usize, share: u32) -> Vec<Vec<usize>> {
    let share = share as usize;
    let mut groups: Vec<L3Id> = pool.iter().map(|&c| ctx.cores[c].l3).collect();
    groups.dedup();
    let m = groups.len();
    if m >= ranks {
        let (q, rem) = (m / ranks, m % ranks);
        let runs: Vec<Vec<usize>> = (0..ranks)
            .map(|r| {
                let start = r * q + r.min(rem);
                let len = q + usize::from(r < rem);
                let run: BTreeSet<L3Id> = groups[start..start + len].iter().copied().collect();
                pool.iter()
                    .copied()
                    .filter(|&c| run.contains(&ctx.cores[c].l3))
                    .collect()
            })
            .collect();
        if runs.iter().all(|r: &Vec<usize>| r.len() >= share) {
            return runs
                .into_iter()
                .map(|r| r.into_iter().take(share).collect())
                .collect();
        }
    }
    (0..ranks)
        .map(|r| pool[r * share..(r + 1) * share].to_vec())
        .collect()
}

/// Step 5: the cores' CPUs after `smt`, on `nodes` (the home node first).
fn threads(ctx: &Ctx, cores: &[usize], nodes: Vec<NodeId>) -> Placement {
    let refs: Vec<&ACore> = cores.iter().map(|&c| &ctx.cores[c]).collect();
    Placement {
        cpus: ctx.threads(&refs),
        cores: refs.len() as u32,
        home: (nodes.len() == 1).then(|| nodes[0]),
        memory_nodes: nodes,
    }
}

/// The CPUs of the cores `auto` never hands out (see `reserved_cores`).
pub fn reserved_cpus(ctx: &Ctx) -> CpuSet {
    reserved_cores(ctx)
        .into_iter()
        .fold(CpuSet::new(), |acc, i| acc.union(&ctx.topo.cores()[i].cpus))
}

/// Cores never handed out, by hardware position (topology order): whole cores holding a CPU of
/// `cpu.reserve_cpus`, the first `cpu.reserve_per_l3` cores of every L3 group, and the last
/// `cpu.reserve_cores` cores of every node with CPUs.
fn reserved_cores(ctx: &Ctx) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut seen_per_l3: BTreeMap<L3Id, u32> = BTreeMap::new();
    let mut per_node: BTreeMap<NodeId, Vec<usize>> = BTreeMap::new();
    for (order, core) in ctx.topo.cores().iter().enumerate() {
        if core.cpus.intersects(&ctx.cpu.reserve_cpus) {
            out.insert(order);
        }
        let n = seen_per_l3.entry(core.l3).or_insert(0);
        if *n < ctx.cpu.reserve_per_l3 {
            out.insert(order);
        }
        *n += 1;
        per_node.entry(core.node).or_default().push(order);
    }
    for cores in per_node.values() {
        let keep = cores.len().saturating_sub(ctx.cpu.reserve_cores as usize);
        out.extend(&cores[keep..]);
    }
    out
}

/// `scope: socket`: the cores of a package's nodes that no rank calls home are dealt to the
/// package's home nodes, nearest first, round-robin by whole L3 group (so a lent group is not
/// split between ranks), and appended after each home's own cores, so nothing idles.
fn lend_idle_nodes(
    ctx: &Ctx,
    sites: &mut [Site],
    home_nodes: &BTreeSet<NodeId>,
    pool_of: &dyn Fn(NodeId) -> Vec<usize>,
) {
    for idle in ctx
        .cpu_nodes()
        .into_iter()
        .filter(|n| !home_nodes.contains(n))
    {
        let package = ctx.topo.node_package(idle);
        let mut targets: Vec<usize> = (0..sites.len())
            .filter(|&s| ctx.topo.node_package(sites[s].nodes[0]) == package)
            .collect();
        if targets.is_empty() {
            continue;
        }
        targets.sort_by_key(|&s| {
            (
                ctx.topo
                    .distance(idle, sites[s].nodes[0])
                    .unwrap_or(u32::MAX),
                sites[s].nodes[0],
            )
        });
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for core in pool_of(idle) {
            match groups.last_mut() {
                Some(g) if ctx.cores[g[0]].l3 == ctx.cores[core].l3 => g.push(core),
                _ => groups.push(vec![core]),
            }
        }
        for (i, group) in groups.into_iter().enumerate() {
            sites[targets[i % targets.len()]].pool.extend(group);
        }
    }
}

fn nothing_allowed(what: &str) -> ResolveError {
    ResolveError::new(
        ResolveErrorKind::NothingAllowed {
            what: what.to_string(),
        },
        "cpu.allowed",
        "widen `cpu.allowed` (or the job's cgroup) to include CPUs of some NUMA node",
    )
}
