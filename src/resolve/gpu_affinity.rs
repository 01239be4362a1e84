//! Family 2, compatible with NVIDIA's `gpu_affinity`: `all`, `single`, `single-unique`,
//! `unique-contiguous`, `unique-interleaved`, with `scope`, `smt`, `balanced`, `min_cores` and
//! `max_cores` (docs/policies.md). Works in cores (indices into `ctx.cores`), then expands to
//! threads: one function per numbered step of the text.

use std::collections::{BTreeMap, BTreeSet};

use super::context::{ACore, Ctx, Placement, Unit};
use super::error::{ResolveError, ResolveErrorKind};
use crate::spec::{AffinityMode as Mode, Balance, Scope};

pub fn place(ctx: &Ctx, units: &[Unit], mode: Mode) -> Result<Vec<Placement>, ResolveError> {
    let sets = Sets::new(ctx, units);
    identical_or_disjoint(units, &sets.node, "NUMA node")?;
    identical_or_disjoint(units, &sets.socket, "socket")?;
    let buckets = Buckets::new(ctx, units, &sets);
    let cores = match mode {
        Mode::All => all(ctx, &sets),
        Mode::Single => single(ctx, &buckets),
        Mode::SingleUnique => single_unique(ctx, units, &buckets)?,
        Mode::UniqueContiguous | Mode::UniqueInterleaved => unique(ctx, &buckets, mode),
    };
    let cores = match mode {
        Mode::Single | Mode::SingleUnique => cores,
        _ => limits(ctx, units, cores)?,
    };
    Ok(threads(ctx, units, cores))
}

/// Each rank's NODE and SOCKET sets: the allowed cores of its GPU's NUMA node and package (the
/// whole machine for a GPU of unknown locality, as NVML answers), ascending by key.
struct Sets {
    node: Vec<Vec<usize>>,
    socket: Vec<Vec<usize>>,
}

impl Sets {
    fn new(ctx: &Ctx, units: &[Unit]) -> Sets {
        let all = 0..ctx.cores.len();
        let node = |u: &Unit| match u.lead().and_then(|g| g.numa_node) {
            Some(n) => by_key(ctx, all.clone().filter(|&i| ctx.cores[i].node == n)),
            None => by_key(ctx, all.clone()),
        };
        let socket = |u: &Unit| match u.lead().and_then(|g| g.numa_node.and(ctx.gpu_package(g))) {
            Some(p) => by_key(ctx, all.clone().filter(|&i| ctx.cores[i].package == p)),
            None => by_key(ctx, all.clone()),
        };
        Sets {
            node: units.iter().map(node).collect(),
            socket: units.iter().map(socket).collect(),
        }
    }
}

/// Step 1's condition: two GPUs' sets are identical or disjoint (an empty set is disjoint from
/// every set), else gpu_affinity fails.
fn identical_or_disjoint(
    units: &[Unit],
    sets: &[Vec<usize>],
    scope: &'static str,
) -> Result<(), ResolveError> {
    let gpu_of = |i: usize| units[i].lead().map_or(units[i].local_rank, |g| g.index.0);
    for a in 0..sets.len() {
        for b in a + 1..sets.len() {
            let overlap = sets[a].iter().any(|c| sets[b].contains(c));
            if !overlap || sets[a] == sets[b] {
                continue;
            }
            let mut e = ResolveError::new(
                ResolveErrorKind::OverlappingNodeSets {
                    a: gpu_of(a),
                    b: gpu_of(b),
                    scope,
                },
                "cpu.policy",
                "use `policy: auto`, which does not need disjoint sets",
            );
            for i in [a, b] {
                if units[i].lead().is_some_and(|g| g.numa_node.is_none()) {
                    e = e.note(format!(
                        "GPU {} has unknown NUMA locality, so its {scope} set is the whole machine",
                        gpu_of(i)
                    ));
                }
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Step 1, buckets: for every distinct SOCKET set, each core of A (the NODE cores of its GPUs,
/// by first allowed CPU) opens a bucket, and the other cores of the socket (U, by first allowed
/// CPU) are dealt round-robin onto them. A GPU's list is the buckets of its NODE cores by key.
struct Buckets {
    /// Each bucket: its NODE core, then the socket cores dealt onto it.
    buckets: Vec<Vec<usize>>,
    /// Per rank, its bucket list (indices into `buckets`).
    lists: Vec<Vec<usize>>,
}

impl Buckets {
    fn new(ctx: &Ctx, units: &[Unit], sets: &Sets) -> Buckets {
        let mut buckets: Vec<Vec<usize>> = Vec::new();
        let mut bucket_of: BTreeMap<usize, usize> = BTreeMap::new();
        let distinct: BTreeSet<&Vec<usize>> = sets.socket.iter().collect();
        for socket in distinct {
            let a: BTreeSet<usize> = (0..units.len())
                .filter(|&i| &sets.socket[i] == socket)
                .flat_map(|i| sets.node[i].iter().copied())
                .collect();
            let a = by_first_allowed(ctx, a.iter().copied());
            let u = by_first_allowed(ctx, socket.iter().copied().filter(|c| !a.contains(c)));
            let first = buckets.len();
            for &core in &a {
                bucket_of.insert(core, buckets.len());
                buckets.push(vec![core]);
            }
            if !a.is_empty() {
                for (i, core) in u.into_iter().enumerate() {
                    buckets[first + i % a.len()].push(core);
                }
            }
        }
        let lists = sets
            .node
            .iter()
            .map(|n| n.iter().filter_map(|c| bucket_of.get(c).copied()).collect())
            .collect();
        Buckets { buckets, lists }
    }

    /// Step 3, flatten: scope node keeps each bucket's first core; scope socket takes every
    /// bucket's first core, then every bucket's second core, and so on.
    fn flatten(&self, ctx: &Ctx, chosen: &[usize]) -> Vec<usize> {
        match ctx.cpu.scope {
            Scope::Node => chosen.iter().map(|&b| self.buckets[b][0]).collect(),
            Scope::Socket => {
                let depth = chosen
                    .iter()
                    .map(|&b| self.buckets[b].len())
                    .max()
                    .unwrap_or(0);
                (0..depth)
                    .flat_map(|d| {
                        chosen
                            .iter()
                            .filter_map(move |&b| self.buckets[b].get(d).copied())
                    })
                    .collect()
            }
        }
    }
}

/// Step 2, `all`: the GPU's NODE cores by first allowed CPU; with scope socket its SOCKET cores,
/// the NODE-local ones (of any rank's GPU) first, each part by first allowed CPU. No buckets.
fn all(ctx: &Ctx, sets: &Sets) -> Vec<Vec<usize>> {
    let local: BTreeSet<usize> = sets.node.iter().flatten().copied().collect();
    (0..sets.node.len())
        .map(|i| match ctx.cpu.scope {
            Scope::Node => by_first_allowed(ctx, sets.node[i].iter().copied()),
            Scope::Socket => {
                let socket = sets.socket[i].iter().copied();
                let mut cores = by_first_allowed(ctx, socket.clone().filter(|c| local.contains(c)));
                cores.extend(by_first_allowed(ctx, socket.filter(|c| !local.contains(c))));
                cores
            }
        })
        .collect()
}

/// Step 2, `single`: the first core of the GPU's flattened list (peers share it).
fn single(ctx: &Ctx, buckets: &Buckets) -> Vec<Vec<usize>> {
    buckets
        .lists
        .iter()
        .map(|list| buckets.flatten(ctx, list).into_iter().take(1).collect())
        .collect()
}

/// Step 2, `single-unique`: GPUs in job order each take the first bucket no earlier GPU took,
/// then its first core; a GPU left without one is an error.
fn single_unique(
    ctx: &Ctx,
    units: &[Unit],
    buckets: &Buckets,
) -> Result<Vec<Vec<usize>>, ResolveError> {
    let mut taken = BTreeSet::new();
    let mut out = vec![Vec::new(); units.len()];
    for (i, unit) in units.iter().enumerate() {
        let list = &buckets.lists[i];
        let Some(&b) = list.iter().find(|b| !taken.contains(*b)) else {
            let gpu = unit.lead().map_or(unit.local_rank, |g| g.index.0);
            return Err(ResolveError::new(
                ResolveErrorKind::NoUniqueCore { gpu },
                "cpu.policy",
                "use `unique-contiguous`, or fewer ranks per NUMA node",
            )
            .note(format!(
                "GPU {gpu}'s node has {} cores, all taken by earlier GPUs",
                list.len()
            )));
        };
        taken.insert(b);
        out[i] = buckets.flatten(ctx, &[b]).into_iter().take(1).collect();
    }
    Ok(out)
}

/// Step 2, `unique-contiguous` / `unique-interleaved`: GPUs with identical bucket lists form a
/// group of g, in job order; share = the minimum over groups of floor(buckets/g). Balanced, each list is cut to
/// g*share and every GPU gets `share`; otherwise per = floor(buckets/g) of its own list.
/// Contiguous: the k-th GPU takes buckets [k*per, (k+1)*per); interleaved: k, k+g, ... to the
/// end of the (cut) list.
fn unique(ctx: &Ctx, buckets: &Buckets, mode: Mode) -> Vec<Vec<usize>> {
    let mut groups: Vec<(&Vec<usize>, Vec<usize>)> = Vec::new();
    for (i, list) in buckets.lists.iter().enumerate() {
        match groups.iter_mut().find(|(l, _)| *l == list) {
            Some((_, members)) => members.push(i),
            None => groups.push((list, vec![i])),
        }
    }
    let share = groups
        .iter()
        .map(|(l, m)| l.len() / m.len())
        .min()
        .unwrap_or(0);
    let mut out = vec![Vec::new(); buckets.lists.len()];
    for (list, members) in &groups {
        let g = members.len();
        let (list, per) = match ctx.cpu.balance {
            Balance::Balanced => (&list[..(g * share).min(list.len())], share),
            Balance::Unbalanced => (&list[..], list.len() / g),
        };
        for (k, &rank) in members.iter().enumerate() {
            let picked: Vec<usize> = match mode {
                Mode::UniqueContiguous => list[k * per..(k + 1) * per].to_vec(),
                _ => list.iter().copied().skip(k).step_by(g).collect(),
            };
            out[rank] = buckets.flatten(ctx, &picked);
        }
    }
    out
}

/// Step 4, limits (not for `single` and `single-unique`): a GPU with fewer than `min_cores`
/// cores is an error; then every list is cut to its first `max_cores`.
fn limits(
    ctx: &Ctx,
    units: &[Unit],
    cores: Vec<Vec<usize>>,
) -> Result<Vec<Vec<usize>>, ResolveError> {
    cores
        .into_iter()
        .zip(units)
        .map(|(mut list, unit)| {
            if (list.len() as u32) < ctx.cpu.min_cores {
                let gpu = unit.lead().map_or(unit.local_rank, |g| g.index.0);
                return Err(ResolveError::new(
                    ResolveErrorKind::MinCores {
                        who: format!("GPU {gpu}"),
                        got: list.len() as u32,
                        min: ctx.cpu.min_cores,
                    },
                    "cpu.min_cores",
                    "lower `min_cores`, use `scope: socket`, or run fewer ranks per node",
                ));
            }
            if let Some(max) = ctx.cpu.max_cores {
                list.truncate(max as usize);
            }
            Ok(list)
        })
        .collect()
}

/// Step 5, threads: `smt: all` expands each core to its allowed siblings, `smt: one` keeps the
/// lowest. The home node is the GPU's (or the nearest with allowed CPUs).
fn threads(ctx: &Ctx, units: &[Unit], cores: Vec<Vec<usize>>) -> Vec<Placement> {
    cores
        .into_iter()
        .zip(units)
        .map(|(list, unit)| {
            let refs: Vec<&ACore> = list.iter().map(|&c| &ctx.cores[c]).collect();
            let home = unit
                .lead()
                .and_then(|g| g.numa_node)
                .and_then(|n| ctx.nearest_cpu_node(n, ctx.topo.node_package(n)));
            Placement {
                cpus: ctx.threads(&refs),
                cores: refs.len() as u32,
                home,
                memory_nodes: home.into_iter().collect(),
            }
        })
        .collect()
}

fn by_key(ctx: &Ctx, it: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = it.collect();
    v.sort_by_key(|&i| ctx.cores[i].key);
    v
}

/// Cores ascending by their first allowed CPU, which differs from the key when a mask hides a
/// core's lowest sibling.
fn by_first_allowed(ctx: &Ctx, it: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut v: Vec<usize> = it.collect();
    v.sort_by_key(|&i| ctx.cores[i].cpus.first());
    v
}
