//! Family 2, compatible with NVIDIA's `gpu_affinity`: `all`, `single`, `single-unique`,
//! `unique-contiguous`, `unique-interleaved`, with `scope`, `smt`, `balanced`, `min_cores` and
//! `max_cores` (POLICIES.md). Works in cores (keys), then expands to threads.

use std::collections::BTreeMap;

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::spec::{Balance, Scope};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    All,
    Single,
    SingleUnique,
    UniqueContiguous,
    UniqueInterleaved,
}

/// A bucket: a NODE core of some GPU, then the socket cores dealt onto it (indices into
/// `ctx.cores`).
type Bucket = Vec<usize>;

pub fn place(ctx: &Ctx, units: &[Unit], mode: Mode) -> Result<Vec<Placement>, ResolveError> {
    let all: Vec<usize> = (0..ctx.cores.len()).collect();
    // NODE and SOCKET sets per rank (core indices, ascending key); unknown locality = machine.
    let node_set = |u: &Unit| -> Vec<usize> {
        match u.lead().and_then(|g| g.numa_node) {
            Some(n) => by_key(ctx, all.iter().copied().filter(|&i| ctx.cores[i].node == n)),
            None => by_key(ctx, all.iter().copied()),
        }
    };
    let socket_key = |u: &Unit| u.lead().and_then(|g| g.numa_node.and(ctx.gpu_package(g)));
    let socket_set = |u: &Unit| -> Vec<usize> {
        match socket_key(u) {
            Some(p) => by_key(
                ctx,
                all.iter().copied().filter(|&i| ctx.cores[i].package == p),
            ),
            None => by_key(ctx, all.iter().copied()),
        }
    };
    let gpu_of = |u: &Unit| u.lead().map_or(u.local_rank, |g| g.index.0);
    let nodes: Vec<Vec<usize>> = units.iter().map(node_set).collect();
    let sockets: Vec<Vec<usize>> = units.iter().map(socket_set).collect();

    for a in 0..units.len() {
        for b in a + 1..units.len() {
            let overlap = nodes[a].iter().any(|c| nodes[b].contains(c));
            if overlap && nodes[a] != nodes[b] {
                let unknown: Vec<String> = [a, b]
                    .iter()
                    .filter(|&&i| units[i].lead().is_some_and(|g| g.numa_node.is_none()))
                    .map(|&i| format!("GPU {} has unknown NUMA locality, so its node set is the whole machine", gpu_of(&units[i])))
                    .collect();
                let mut e = ResolveError::new(
                    ResolveErrorKind::OverlappingNodeSets {
                        a: gpu_of(&units[a]),
                        b: gpu_of(&units[b]),
                    },
                    "cpu.policy",
                    "use `policy: auto`, which does not need disjoint node sets",
                );
                for n in unknown {
                    e = e.note(n);
                }
                return Err(e);
            }
        }
    }

    // 1. Buckets per distinct SOCKET set.
    let mut buckets: Vec<Bucket> = Vec::new();
    let mut bucket_of_core: BTreeMap<usize, usize> = BTreeMap::new();
    let mut distinct_sockets: Vec<&Vec<usize>> = sockets.iter().collect();
    distinct_sockets.sort();
    distinct_sockets.dedup();
    for s in distinct_sockets {
        let mut a: Vec<usize> = (0..units.len())
            .filter(|&i| &sockets[i] == s)
            .flat_map(|i| nodes[i].iter().copied())
            .collect();
        a = by_key(ctx, a.into_iter());
        a.dedup();
        let u: Vec<usize> = s.iter().copied().filter(|c| !a.contains(c)).collect();
        let first = buckets.len();
        for &core in &a {
            bucket_of_core.insert(core, buckets.len());
            buckets.push(vec![core]);
        }
        if !a.is_empty() {
            for (i, core) in u.into_iter().enumerate() {
                buckets[first + i % a.len()].push(core);
            }
        }
    }
    let lists: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            n.iter()
                .filter_map(|c| bucket_of_core.get(c).copied())
                .collect()
        })
        .collect();

    // 2. Modes.
    let buckets = &buckets;
    let flatten = |chosen: &[usize]| -> Vec<usize> {
        match ctx.cpu.scope {
            Scope::Node => chosen.iter().map(|&b| buckets[b][0]).collect(),
            Scope::Socket => {
                let depth = chosen.iter().map(|&b| buckets[b].len()).max().unwrap_or(0);
                (0..depth)
                    .flat_map(|d| {
                        chosen
                            .iter()
                            .filter_map(move |&b| buckets[b].get(d).copied())
                    })
                    .collect()
            }
        }
    };
    let mut per_rank: Vec<Vec<usize>> = Vec::new();
    match mode {
        Mode::All => {
            for i in 0..units.len() {
                per_rank.push(match ctx.cpu.scope {
                    Scope::Node => nodes[i].clone(),
                    Scope::Socket => {
                        let local: Vec<usize> = sockets[i]
                            .iter()
                            .copied()
                            .filter(|c| bucket_of_core.contains_key(c))
                            .collect();
                        let rest = sockets[i]
                            .iter()
                            .copied()
                            .filter(|c| !bucket_of_core.contains_key(c));
                        local.into_iter().chain(rest).collect()
                    }
                });
            }
        }
        Mode::Single => {
            for list in &lists {
                per_rank.push(flatten(list).into_iter().take(1).collect());
            }
        }
        Mode::SingleUnique => {
            let mut taken = std::collections::BTreeSet::new();
            for (i, list) in lists.iter().enumerate() {
                let Some(&b) = list.iter().find(|b| !taken.contains(*b)) else {
                    return Err(ResolveError::new(
                        ResolveErrorKind::NoUniqueCore {
                            gpu: gpu_of(&units[i]),
                        },
                        "cpu.policy",
                        "use `unique-contiguous`, or fewer ranks per NUMA node",
                    )
                    .note(format!(
                        "GPU {}'s node has {} cores",
                        gpu_of(&units[i]),
                        list.len()
                    )));
                };
                taken.insert(b);
                per_rank.push(flatten(&[b]).into_iter().take(1).collect());
            }
        }
        Mode::UniqueContiguous | Mode::UniqueInterleaved => {
            // Groups: ranks with identical bucket lists, in ascending rank order.
            let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
            for (i, list) in lists.iter().enumerate() {
                match groups.iter_mut().find(|(l, _)| l == list) {
                    Some((_, members)) => members.push(i),
                    None => groups.push((list.clone(), vec![i])),
                }
            }
            let share = groups
                .iter()
                .map(|(l, m)| l.len() / m.len())
                .min()
                .unwrap_or(0);
            let mut chosen: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for (list, members) in &groups {
                let g = members.len();
                let (list, per) = match ctx.cpu.balance {
                    Balance::Balanced => (&list[..(g * share).min(list.len())], share),
                    Balance::Unbalanced => (&list[..], list.len() / g),
                };
                for (k, &rank) in members.iter().enumerate() {
                    let picked: Vec<usize> = match mode {
                        Mode::UniqueContiguous => list[k * per..(k + 1) * per].to_vec(),
                        _ => list.iter().copied().skip(k).step_by(g).take(per).collect(),
                    };
                    chosen.insert(rank, picked);
                }
            }
            for i in 0..units.len() {
                per_rank.push(flatten(&chosen[&i]));
            }
        }
    }

    // 4. Limits, 5. threads.
    let mut out = Vec::new();
    for (i, mut cores) in per_rank.into_iter().enumerate() {
        if mode != Mode::Single {
            if (cores.len() as u32) < ctx.cpu.min_cores {
                return Err(ResolveError::new(
                    ResolveErrorKind::MinCores {
                        who: format!("GPU {}", gpu_of(&units[i])),
                        got: cores.len() as u32,
                        min: ctx.cpu.min_cores,
                    },
                    "cpu.min_cores",
                    "lower `min_cores`, use `scope: socket`, or run fewer ranks per node",
                ));
            }
            if let Some(max) = ctx.cpu.max_cores {
                cores.truncate(max as usize);
            }
        }
        let refs: Vec<&ACore> = cores.iter().map(|&c| &ctx.cores[c]).collect();
        let home = units[i]
            .lead()
            .and_then(|g| g.numa_node)
            .and_then(|n| ctx.nearest_cpu_node(n, ctx.topo.node_package(n)));
        out.push(Placement {
            cpus: ctx.threads(&refs),
            cores: refs.len() as u32,
            home,
            memory_nodes: home.into_iter().collect(),
        });
    }
    Ok(out)
}

fn by_key(ctx: &Ctx, it: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = it.collect();
    v.sort_by_key(|&i| ctx.cores[i].key);
    v
}
