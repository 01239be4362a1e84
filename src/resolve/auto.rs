//! Family 3, numaplan's `auto` (POLICIES.md): each rank on its GPU's home node (the nearest node
//! with allowed CPUs), reserved cores left out, equal shares, as few L3 groups per rank as
//! possible. CPU-only ranks are spread over the nodes in blocks.

use std::collections::{BTreeMap, BTreeSet};

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId};
use crate::spec::{Balance, Scope};

/// Ranks sharing one pool of cores.
struct Site {
    /// The node(s) the pool comes from.
    nodes: Vec<NodeId>,
    /// Pool: indices into `ctx.cores`, topology order.
    pool: Vec<usize>,
    /// The ranks placed here, in rank order.
    ranks: Vec<usize>,
}

pub fn place(
    ctx: &Ctx,
    units: &[Unit],
    warnings: &mut Vec<String>,
) -> Result<Vec<Placement>, ResolveError> {
    let reserved = reserved_cores(ctx);
    let pool_of = |node: NodeId| -> Vec<usize> {
        (0..ctx.cores.len())
            .filter(|&i| ctx.cores[i].node == node && !reserved.contains(&ctx.cores[i].order))
            .collect()
    };

    // Home nodes of GPU ranks; ranks without known locality are placed like CPU-only ranks.
    let mut homes: BTreeMap<usize, NodeId> = BTreeMap::new();
    let mut cpu_only: Vec<usize> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        match u.lead() {
            Some(g) => match g.numa_node {
                Some(node) => {
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
                        warnings.push(format!(
                            "GPU {}'s node {node} {why}; using node {home}{distance}",
                            g.index
                        ));
                    }
                    homes.insert(i, home);
                }
                None => {
                    warnings.push(format!(
                        "GPU {} has unknown NUMA locality; its rank is placed as a CPU-only rank",
                        g.index
                    ));
                    cpu_only.push(i);
                }
            },
            None => cpu_only.push(i),
        }
    }

    let mut sites: Vec<Site> = Vec::new();
    let home_nodes: BTreeSet<NodeId> = homes.values().copied().collect();
    for &node in &home_nodes {
        sites.push(Site {
            nodes: vec![node],
            pool: pool_of(node),
            ranks: homes
                .iter()
                .filter(|(_, h)| **h == node)
                .map(|(i, _)| *i)
                .collect(),
        });
    }
    if ctx.cpu.scope == Scope::Socket && !sites.is_empty() {
        lend_idle_nodes(ctx, &mut sites, &home_nodes, &pool_of);
    }

    // CPU-only ranks: blocks over the nodes with allowed CPUs that no GPU rank calls home.
    let mut spans: Vec<(usize, Vec<NodeId>)> = Vec::new();
    if !cpu_only.is_empty() {
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
                let ranks = (k * r / n..(k + 1) * r / n).map(|j| cpu_only[j]).collect();
                sites.push(Site {
                    nodes: vec![*node],
                    pool: pool_of(*node),
                    ranks,
                });
            }
        } else {
            for (j, &rank) in cpu_only.iter().enumerate() {
                spans.push((rank, free[j * n / r..(j + 1) * n / r].to_vec()));
            }
        }
    }

    // Share: equal across every site when balanced.
    let share_of = |s: &Site| {
        let k = (s.pool.len() / s.ranks.len().max(1)) as u32;
        ctx.cpu.max_cores.map_or(k, |m| k.min(m))
    };
    let balanced = sites.iter().map(share_of).min();
    let mut out: BTreeMap<usize, Placement> = BTreeMap::new();
    for site in &sites {
        if site.ranks.is_empty() {
            continue;
        }
        let share = match ctx.cpu.balance {
            Balance::Balanced => balanced.unwrap_or(0),
            Balance::Unbalanced => share_of(site),
        };
        if share < ctx.cpu.min_cores.max(1) {
            let node = site.nodes[0];
            let who = match units[site.ranks[0]].lead() {
                Some(_) => format!("each of the {} ranks on node {node}", site.ranks.len()),
                None => format!("each CPU-only rank on node {node}"),
            };
            let mut e = ResolveError::new(
                ResolveErrorKind::MinCores {
                    who,
                    got: share,
                    min: ctx.cpu.min_cores.max(1),
                },
                if ctx.cpu.min_cores > 1 { "cpu.min_cores" } else { "ranks_per_node" },
                "run fewer ranks per node, reserve fewer cores, or use `scope: socket` to borrow idle nodes",
            )
            .note(format!(
                "node {node} has {} usable cores for {} ranks (allowed CPUs `{}`)",
                site.pool.len(),
                site.ranks.len(),
                ctx.node_allowed(node)
            ));
            if balanced != Some(share_of(site)) && ctx.cpu.balance == Balance::Balanced {
                e = e.note("`balanced: true` gives every rank the smallest node's share");
            }
            return Err(e);
        }
        for (position, cores) in deal(ctx, &site.pool, site.ranks.len(), share)
            .into_iter()
            .enumerate()
        {
            let refs: Vec<&ACore> = cores.iter().map(|&c| &ctx.cores[c]).collect();
            out.insert(
                site.ranks[position],
                Placement {
                    cpus: ctx.threads(&refs),
                    cores: refs.len() as u32,
                    home: Some(site.nodes[0]),
                    memory_nodes: site.nodes.clone(),
                },
            );
        }
    }
    for (rank, nodes) in spans {
        let cores: Vec<usize> = nodes.iter().flat_map(|n| pool_of(*n)).collect();
        let cores: Vec<usize> = match ctx.cpu.max_cores {
            Some(m) => cores.into_iter().take(m as usize).collect(),
            None => cores,
        };
        let refs: Vec<&ACore> = cores.iter().map(|&c| &ctx.cores[c]).collect();
        out.insert(
            rank,
            Placement {
                cpus: ctx.threads(&refs),
                cores: refs.len() as u32,
                home: (nodes.len() == 1).then(|| nodes[0]),
                memory_nodes: nodes,
            },
        );
    }
    Ok(out.into_values().collect())
}

/// Step 4: whole L3 groups in contiguous runs when that leaves everyone `share` cores, else
/// contiguous slices of the pool.
fn deal(ctx: &Ctx, pool: &[usize], ranks: usize, share: u32) -> Vec<Vec<usize>> {
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

/// The CPUs of the cores `auto` never hands out (see `reserved_cores`).
pub fn reserved_cpus(ctx: &Ctx) -> CpuSet {
    reserved_cores(ctx)
        .into_iter()
        .fold(CpuSet::new(), |acc, i| acc.union(&ctx.topo.cores()[i].cpus))
}

/// Cores never handed out: whole cores holding a CPU of `cpu.reserve`, and the first
/// `cpu.reserve_per_l3` cores (by hardware position) of every L3 group. By topology order.
fn reserved_cores(ctx: &Ctx) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut seen_per_l3: BTreeMap<L3Id, u32> = BTreeMap::new();
    for (order, core) in ctx.topo.cores().iter().enumerate() {
        if core.cpus.intersects(&ctx.cpu.reserve) {
            out.insert(order);
        }
        let n = seen_per_l3.entry(core.l3).or_insert(0);
        if *n < ctx.cpu.reserve_per_l3 {
            out.insert(order);
        }
        *n += 1;
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
