//! The compatibility families against models of the tools they copy, on random machines.
//!
//! `torch_reference` and `gpu_affinity_reference` are written after the structure of
//! `torch/numa/binding.py` and NVIDIA's `gpu_affinity.py`, from what those read on a Linux
//! machine: node cpulists, each CPU's `thread_siblings_list`, the highest cache's
//! `shared_cpu_list`, the package of a CPU, a GPU's PCI `numa_node` (-1 for unknown), NVML's
//! NODE and SOCKET affinity, and the process affinity. Where a tool crashes (an empty `min()`),
//! POLICIES.md asks for a clear error or a sensible answer, so either is accepted; where it
//! raises, numaplan must fail too; where POLICIES.md states a deliberate difference (a
//! `single-unique` GPU left without a core) the model follows POLICIES.md.

use std::collections::{BTreeMap, BTreeSet};

use numaplan::cpuset::CpuSet;
use numaplan::ids::{GpuIndex, L3Id, NodeId, PackageId};
use numaplan::pci_addr::PciAddr;
use numaplan::resolve::resolve;
use numaplan::spec::load::load_str;
use numaplan::topology::model::{Core, Gpu, NodeKind, NumaNode, Topology, TopologyParts, Vendor};
use proptest::prelude::*;

/// A machine as sysfs and NVML show it.
#[derive(Clone, Debug)]
struct Machine {
    /// node id -> (package, CPU node?)
    nodes: BTreeMap<u32, (u32, bool)>,
    /// Cores: (node, package, L3 id, siblings).
    cores: Vec<(u32, u32, u32, BTreeSet<u32>)>,
    /// Each GPU's node, `None` for unknown locality (sysfs -1).
    gpus: Vec<Option<u32>>,
    /// The job's order of the GPUs (`CUDA_VISIBLE_DEVICES`): CUDA device i is GPU `cuda[i]`.
    cuda: Vec<usize>,
    allowed: BTreeSet<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// Per rank, its CPUs.
    Cpus(Vec<BTreeSet<u32>>),
    /// The tool raises an error: numaplan must refuse too.
    Raises(String),
    /// The tool crashes (an empty `min()`, a division by zero): numaplan may refuse or answer.
    Crashes(String),
}

impl Machine {
    fn cpus(&self) -> BTreeSet<u32> {
        self.cores
            .iter()
            .flat_map(|c| c.3.iter().copied())
            .collect()
    }
    fn node_cpulist(&self, node: u32) -> Option<BTreeSet<u32>> {
        self.nodes.get(&node)?;
        Some(
            self.cores
                .iter()
                .filter(|c| c.0 == node)
                .flat_map(|c| c.3.iter().copied())
                .collect(),
        )
    }
    fn core_of(&self, cpu: u32) -> &(u32, u32, u32, BTreeSet<u32>) {
        self.cores.iter().find(|c| c.3.contains(&cpu)).unwrap()
    }
    fn siblings(&self, cpu: u32) -> &BTreeSet<u32> {
        &self.core_of(cpu).3
    }
    fn package_of_cpu(&self, cpu: u32) -> u32 {
        self.core_of(cpu).1
    }
    /// `shared_cpu_list` of the highest data cache of `cpu`.
    fn l3_shared(&self, cpu: u32) -> BTreeSet<u32> {
        let l3 = self.core_of(cpu).2;
        self.cores
            .iter()
            .filter(|c| c.2 == l3)
            .flat_map(|c| c.3.iter().copied())
            .collect()
    }

    /// The machine as the tools see it under the job's `CUDA_VISIBLE_DEVICES`: GPU i is CUDA
    /// device i.
    fn visible(&self) -> Machine {
        Machine {
            gpus: self.cuda.iter().map(|&g| self.gpus[g]).collect(),
            cuda: (0..self.cuda.len()).collect(),
            ..self.clone()
        }
    }

    fn topology(&self) -> Topology {
        let mut parts = TopologyParts {
            name: "random".into(),
            ..Default::default()
        };
        for (&id, &(package, cpu)) in &self.nodes {
            parts.nodes.push(NumaNode {
                id: NodeId(id),
                package: Some(PackageId(package)),
                kind: if cpu { NodeKind::Cpu } else { NodeKind::Hbm },
                memory_mib: None,
            });
        }
        for (node, package, l3, siblings) in &self.cores {
            parts.cores.push(Core {
                cpus: siblings.iter().copied().collect(),
                package: PackageId(*package),
                node: NodeId(*node),
                l3: L3Id(*l3),
            });
        }
        for (i, node) in self.gpus.iter().enumerate() {
            parts.gpus.push(Gpu {
                index: GpuIndex(i as u32),
                vendor: Vendor::Nvidia,
                model: None,
                pci: PciAddr {
                    domain: 0,
                    bus: i as u8 + 1,
                    device: 0,
                    function: 0,
                },
                uuid: None,
                numa_node: node.map(NodeId),
                package: node.map(|n| PackageId(self.nodes[&n].0)),
                pci_path: Vec::new(),
            });
        }
        let allowed: CpuSet = self.allowed.iter().copied().collect();
        parts.allowed = (self.allowed != self.cpus()).then_some(allowed);
        Topology::build(parts).unwrap()
    }
}

/// `torch/numa/binding.py`, for local rank r on GPU r of a machine whose every GPU is visible.
fn torch_reference(m: &Machine, mode: &str, ranks: usize) -> Outcome {
    let allowed = &m.allowed;
    let numa_of_gpu = |g: usize| m.gpus[g].unwrap_or(0); // max(-1, 0)
    let allowed_of_node = |node: u32| -> Result<BTreeSet<u32>, Outcome> {
        let all = m
            .node_cpulist(node)
            .ok_or_else(|| Outcome::Raises(format!("no cpulist for node {node}")))?;
        Ok(all.intersection(allowed).copied().collect())
    };
    let mut out = Vec::new();
    for gpu in 0..ranks {
        let node = numa_of_gpu(gpu);
        let cpus = match mode {
            "node" => match allowed_of_node(node) {
                Ok(c) => c,
                Err(e) => return e,
            },
            "socket" => {
                let mine = match allowed_of_node(node) {
                    Ok(c) => c,
                    Err(e) => return e,
                };
                let Some(&cpu) = mine.first() else {
                    return Outcome::Crashes("min() of the GPU node's empty CPU set".into());
                };
                let socket = m.package_of_cpu(cpu);
                let mut cpus = BTreeSet::new();
                for &n in m.nodes.keys() {
                    let a = allowed_of_node(n).unwrap();
                    // PyTorch takes min() here and crashes on an empty node; POLICIES.md skips it.
                    let Some(&first) = a.first() else { continue };
                    if m.package_of_cpu(first) == socket {
                        cpus.extend(a);
                    }
                }
                cpus
            }
            "exclusive" => {
                let gpus: Vec<usize> = (0..m.gpus.len())
                    .filter(|&g| numa_of_gpu(g) == node)
                    .collect();
                let position = gpus.iter().position(|&g| g == gpu).unwrap();
                let a = match allowed_of_node(node) {
                    Ok(c) => c,
                    Err(e) => return e,
                };
                let mut cores: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
                for cpu in a {
                    let key = *m.siblings(cpu).first().unwrap();
                    cores.entry(key).or_default().insert(cpu);
                }
                let per = cores.len() / gpus.len();
                let extra = cores.len() % gpus.len();
                if per < 1 {
                    return Outcome::Raises("fewer cores than GPUs".into());
                }
                let start = position * per + position.min(extra);
                let end = start + per + usize::from(position < extra);
                cores
                    .values()
                    .skip(start)
                    .take(end - start)
                    .flatten()
                    .copied()
                    .collect()
            }
            "core-complex" => {
                let gpus: Vec<usize> = (0..m.gpus.len())
                    .filter(|&g| numa_of_gpu(g) == node)
                    .collect();
                let position = gpus.iter().position(|&g| g == gpu).unwrap();
                let a = match allowed_of_node(node) {
                    Ok(c) => c,
                    Err(e) => return e,
                };
                let mut caches: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
                for cpu in a {
                    let key = *m.l3_shared(cpu).first().unwrap();
                    caches.entry(key).or_default().insert(cpu);
                }
                let mut caches: Vec<(u32, BTreeSet<u32>)> = caches.into_iter().collect();
                caches.sort_by_key(|(key, cpus)| (std::cmp::Reverse(cpus.len()), *key));
                if caches.is_empty() {
                    return Outcome::Crashes("modulo by zero caches".into());
                }
                caches[position % caches.len()].1.clone()
            }
            other => unreachable!("{other}"),
        };
        if cpus.is_empty() {
            return Outcome::Raises("Must bind to a non-empty set of CPU indices".into());
        }
        out.push(cpus);
    }
    Outcome::Cpus(out)
}

/// A core as `group_by_siblings` makes it: the tuple of its allowed CPUs.
type GCore = Vec<u32>;

struct AffinityOptions<'a> {
    mode: &'a str,
    scope: &'a str,
    smt_all: bool,
    balanced: bool,
    min: usize,
    max: Option<usize>,
}

/// `gpu_affinity.py`'s `set_affinity(r, nproc)` for every rank r of `nproc` (GPU r).
fn gpu_affinity_reference(m: &Machine, o: &AffinityOptions, nproc: usize) -> Outcome {
    let all_cpus = m.cpus();
    let nvml = |gpu: usize, scope: &str| -> Vec<u32> {
        let set: BTreeSet<u32> = match m.gpus[gpu] {
            None => all_cpus.clone(),
            Some(node) if scope == "node" => m.node_cpulist(node).unwrap(),
            Some(node) => {
                let package = m.nodes[&node].0;
                m.cores
                    .iter()
                    .filter(|c| c.1 == package)
                    .flat_map(|c| c.3.iter().copied())
                    .collect()
            }
        };
        set.intersection(&m.allowed).copied().collect()
    };
    let affinities = |scope: &str| -> Result<Vec<Vec<u32>>, Outcome> {
        let a: Vec<Vec<u32>> = (0..nproc).map(|g| nvml(g, scope)).collect();
        for i in &a {
            for j in &a {
                let (si, sj): (BTreeSet<u32>, BTreeSet<u32>) =
                    (i.iter().copied().collect(), j.iter().copied().collect());
                if si != sj && !si.is_disjoint(&sj) {
                    return Err(Outcome::Raises("identical or disjoint".into()));
                }
            }
        }
        Ok(a)
    };
    // POLICIES.md: every mode checks both scopes.
    let (socket, node) = match (affinities("socket"), affinities("node")) {
        (Ok(s), Ok(n)) => (s, n),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let group_by_siblings = |aff: &Vec<Vec<u32>>| -> Vec<Vec<GCore>> {
        aff.iter()
            .map(|a| {
                let mut by_key: BTreeMap<Vec<u32>, GCore> = BTreeMap::new();
                for &cpu in a {
                    let key: Vec<u32> = m.siblings(cpu).iter().copied().collect();
                    by_key.entry(key).or_default().push(cpu);
                }
                by_key.into_values().collect()
            })
            .collect()
    };
    let ungroup_by_siblings = |aff: Vec<Vec<GCore>>| -> Vec<BTreeSet<u32>> {
        aff.into_iter()
            .map(|a| {
                a.into_iter()
                    .flat_map(|core| if o.smt_all { core } else { vec![core[0]] })
                    .collect()
            })
            .collect()
    };
    let check_count = |aff: Vec<Vec<GCore>>, min: usize, max: Option<usize>| {
        if aff.iter().any(|a| a.len() < min) {
            return Err(Outcome::Raises(
                "fewer physical cores than the minimum".into(),
            ));
        }
        Ok(aff
            .into_iter()
            .map(|a| match max {
                Some(m) => a.into_iter().take(m).collect(),
                None => a,
            })
            .collect::<Vec<Vec<GCore>>>())
    };
    if o.mode == "all" {
        let scoped = group_by_siblings(if o.scope == "node" { &node } else { &socket });
        let node_cores: BTreeSet<GCore> = group_by_siblings(&node).into_iter().flatten().collect();
        let sorted: Vec<Vec<GCore>> = scoped
            .into_iter()
            .map(|mut a| {
                a.sort_by_key(|c| (!node_cores.contains(c), c.clone()));
                a
            })
            .collect();
        return match check_count(sorted, o.min, o.max) {
            Ok(a) => Outcome::Cpus(ungroup_by_siblings(a)),
            Err(e) => e,
        };
    }
    // get_grouped_affinities: group_by_node(sibling socket affinities, sibling node ones).
    let s_aff = group_by_siblings(&socket);
    let n_aff = group_by_siblings(&node);
    let mut assigned: BTreeMap<Vec<GCore>, BTreeSet<GCore>> = BTreeMap::new();
    for (s, n) in s_aff.iter().zip(&n_aff) {
        assigned
            .entry(s.clone())
            .or_default()
            .extend(n.iter().cloned());
    }
    let mut grouping: BTreeMap<GCore, Vec<GCore>> = BTreeMap::new();
    for (socket_cores, assigned_cores) in &assigned {
        let assigned_cores: Vec<GCore> = assigned_cores.iter().cloned().collect();
        let socket_set: BTreeSet<GCore> = socket_cores.iter().cloned().collect();
        let unassigned: Vec<GCore> = socket_set
            .into_iter()
            .filter(|c| !assigned_cores.contains(c))
            .collect();
        for a in &assigned_cores {
            grouping.entry(a.clone()).or_default().push(a.clone());
        }
        if !assigned_cores.is_empty() {
            for (i, u) in unassigned.into_iter().enumerate() {
                let a = &assigned_cores[i % assigned_cores.len()];
                grouping.get_mut(a).unwrap().push(u);
            }
        }
    }
    let grouped: Vec<Vec<Vec<GCore>>> = n_aff
        .iter()
        .map(|n| n.iter().map(|c| grouping[c].clone()).collect())
        .collect();
    let ungroup_by_nodes = |aff: Vec<Vec<Vec<GCore>>>| -> Vec<Vec<GCore>> {
        aff.into_iter()
            .map(|groups| {
                if o.scope == "node" {
                    groups.into_iter().map(|g| g[0].clone()).collect()
                } else {
                    let depth = groups.iter().map(Vec::len).max().unwrap_or(0);
                    (0..depth)
                        .flat_map(|d| groups.iter().filter_map(move |g| g.get(d).cloned()))
                        .collect()
                }
            })
            .collect()
    };
    let chosen: Vec<Vec<Vec<GCore>>> = match o.mode {
        "single" => grouped
            .into_iter()
            .map(|g| g.into_iter().take(1).collect())
            .collect(),
        "single-unique" => {
            let mut taken: BTreeSet<Vec<GCore>> = BTreeSet::new();
            let mut out = Vec::new();
            for g in grouped {
                match g.into_iter().find(|b| !taken.contains(b)) {
                    Some(b) => {
                        taken.insert(b.clone());
                        out.push(vec![b]);
                    }
                    // gpu_affinity skips the GPU silently; POLICIES.md makes it an error.
                    None => return Outcome::Raises("no unique core left".into()),
                }
            }
            out
        }
        _ => {
            let mut to_devices: Vec<(Vec<Vec<GCore>>, Vec<usize>)> = Vec::new();
            for (i, g) in grouped.iter().enumerate() {
                match to_devices.iter_mut().find(|(k, _)| k == g) {
                    Some((_, d)) => d.push(i),
                    None => to_devices.push((g.clone(), vec![i])),
                }
            }
            let min_per_gpu = to_devices
                .iter()
                .map(|(c, d)| c.len() / d.len())
                .min()
                .unwrap();
            let mut out = vec![Vec::new(); nproc];
            for (mut cores, devices) in to_devices {
                let g = devices.len();
                let per = if o.balanced {
                    cores.truncate(g * min_per_gpu);
                    min_per_gpu
                } else {
                    cores.len() / g
                };
                for (k, &d) in devices.iter().enumerate() {
                    out[d] = if o.mode == "unique-interleaved" {
                        cores.iter().skip(k).step_by(g).cloned().collect()
                    } else {
                        cores[k * per..(k + 1) * per].to_vec()
                    };
                }
            }
            out
        }
    };
    let flat = ungroup_by_nodes(chosen);
    let (min, max) = match o.mode {
        "single" | "single-unique" => (1, Some(1)),
        _ => (o.min, o.max),
    };
    match check_count(flat, min, max) {
        Ok(a) => Outcome::Cpus(ungroup_by_siblings(a)),
        Err(e) => e,
    }
}

fn machine() -> impl Strategy<Value = Machine> {
    (
        1u32..3,                               // packages
        1u32..4,                               // CPU nodes per package
        0u32..2,                               // first node id (1: no node 0)
        any::<bool>(),                         // a memory-only node
        prop::collection::vec(1u32..5, 6),     // cores per node
        1u32..4,                               // cores per L3 group
        1u32..3,                               // SMT
        any::<bool>(),                         // siblings numbered far apart
        prop::collection::vec(0u32..12, 0..6), // GPUs: 0..8 a node, else unknown
        prop::collection::vec(0u32..10, 64),   // random mask: 0 hides a CPU
        0u32..4,                               // a pattern of hidden siblings
        any::<prop::sample::Index>(),          // the GPUs' order in the job
    )
        .prop_map(
            |(
                packages,
                per_package,
                first,
                hbm,
                cores,
                l3_size,
                smt,
                far,
                gpus,
                mask,
                pattern,
                order,
            )| {
                let mut nodes = BTreeMap::new();
                let mut layout = Vec::new(); // (node, package, cores)
                let mut id = first;
                for p in 0..packages {
                    for k in 0..per_package {
                        nodes.insert(id, (p, true));
                        layout.push((id, p, cores[(p * per_package + k) as usize % 6]));
                        id += 1;
                    }
                }
                if hbm {
                    nodes.insert(id, (0, false));
                }
                let total: u32 = layout.iter().map(|l| l.2).sum();
                let mut machine_cores = Vec::new();
                let mut key = 0;
                let mut l3 = 0;
                for (node, package, count) in layout {
                    for c in 0..count {
                        if c % l3_size == 0 {
                            l3 += 1;
                        }
                        let siblings: BTreeSet<u32> = (0..smt)
                            .map(|t| if far { key + t * total } else { key * smt + t })
                            .collect();
                        machine_cores.push((node, package, l3, siblings));
                        key += 1;
                    }
                }
                let cpu_nodes: Vec<u32> = nodes.iter().filter(|n| n.1.1).map(|n| *n.0).collect();
                let gpus: Vec<Option<u32>> = gpus
                    .into_iter()
                    .map(|g| (g < 8).then(|| cpu_nodes[g as usize % cpu_nodes.len()]))
                    .collect();
                let cuda = permutation(gpus.len(), order);
                let all: Vec<u32> = machine_cores
                    .iter()
                    .flat_map(|c| c.3.iter().copied())
                    .collect();
                let mut allowed: BTreeSet<u32> = all
                    .iter()
                    .copied()
                    .filter(|&c| mask[c as usize % 64] != 0)
                    .collect();
                if smt > 1 {
                    let mut previous_l3 = None;
                    for (node, _, l3, siblings) in &machine_cores {
                        let low = *siblings.first().unwrap();
                        let high = *siblings.last().unwrap();
                        let first_of_group = previous_l3 != Some(*l3);
                        previous_l3 = Some(*l3);
                        match pattern {
                            // Every core's first sibling.
                            1 => {
                                allowed.remove(&low);
                            }
                            // One thread per core: the low sibling in even L3 groups, the
                            // high one in odd groups.
                            2 => {
                                allowed.remove(if l3 % 2 == 0 { &low } else { &high });
                            }
                            // The first CPU of every L3 group, and of every odd node's cores.
                            3 if first_of_group || node % 2 == 1 => {
                                allowed.remove(&low);
                            }
                            _ => {}
                        }
                    }
                }
                if allowed.is_empty() {
                    allowed.insert(all[0]);
                }
                Machine {
                    nodes,
                    cores: machine_cores,
                    gpus,
                    cuda,
                    allowed,
                }
            },
        )
}

/// The `n!`-th permutation of 0..n picked by `index` (one in n! of them), so that the job often
/// names its GPUs out of index order.
fn permutation(n: usize, index: prop::sample::Index) -> Vec<usize> {
    let mut left: Vec<usize> = (0..n).collect();
    let mut k = index.index(usize::MAX);
    let mut out = Vec::new();
    while !left.is_empty() {
        out.push(left.remove(k % left.len()));
        k /= out.len();
    }
    out
}

/// numaplan's plan for the spec on the machine, the job naming its GPUs in `cuda` order (`gpus:
/// [..]`): per rank its CPUs, or the error.
fn numaplan(m: &Machine, spec: &str) -> Result<Vec<BTreeSet<u32>>, String> {
    let order: Vec<String> = m.cuda.iter().map(|g| g.to_string()).collect();
    let spec = format!("{spec}gpus: [{}]\n", order.join(", "));
    let spec = load_str("spec.yaml", &spec).unwrap().spec;
    let plan = resolve(&spec, &m.topology()).map_err(|e| e.to_string())?;
    Ok(plan.ranks.iter().map(|r| r.cpus.iter().collect()).collect())
}

/// numaplan agrees with the tool: the same CPUs, a refusal where the tool raises, anything but a
/// panic where the tool crashes.
fn agrees(ours: Result<Vec<BTreeSet<u32>>, String>, theirs: Outcome) -> Result<(), String> {
    match (ours, theirs) {
        (Ok(a), Outcome::Cpus(b)) if a == b => Ok(()),
        (Err(_), Outcome::Raises(_)) => Ok(()),
        (_, Outcome::Crashes(_)) => Ok(()),
        (ours, theirs) => Err(format!("numaplan {ours:?}, the tool {theirs:?}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn pytorch_family_matches_torch(
        m in machine(),
        mode in prop::sample::select(vec!["node", "socket", "exclusive", "core-complex"]),
        ranks in 1usize..6,
    ) {
        prop_assume!(!m.gpus.is_empty());
        let ranks = ranks.min(m.gpus.len());
        let ours = numaplan(&m, &format!("ranks_per_node: {ranks}\ncpu: {{policy: {mode}}}\n"));
        let theirs = torch_reference(&m.visible(), mode, ranks);
        prop_assert_eq!(agrees(ours, theirs), Ok(()), "{:?}", m);
    }

    #[test]
    fn gpu_affinity_family_matches_gpu_affinity(
        m in machine(),
        mode in prop::sample::select(vec!["all", "single", "single-unique", "unique-contiguous", "unique-interleaved"]),
        scope in prop::sample::select(vec!["node", "socket"]),
        smt_all in any::<bool>(),
        balanced in any::<bool>(),
        min in 1usize..3,
        max in prop::option::of(1usize..4),
        ranks in 1usize..6,
    ) {
        prop_assume!(!m.gpus.is_empty());
        // numaplan refuses `min_cores` above `max_cores` where the limits apply; gpu_affinity
        // would cut below its own minimum.
        prop_assume!(max.is_none_or(|m| m >= min) || mode.starts_with("single"));
        let ranks = ranks.min(m.gpus.len());
        let max_key = max.map_or(String::new(), |m| format!(", max_cores: {m}"));
        let spec = format!(
            "ranks_per_node: {ranks}\ncpu: {{policy: {mode}, scope: {scope}, smt: {}, balanced: {balanced}, min_cores: {min}{max_key}}}\n",
            if smt_all { "all" } else { "one" },
        );
        let o = AffinityOptions { mode, scope, smt_all, balanced, min, max };
        let ours = numaplan(&m, &spec);
        let theirs = gpu_affinity_reference(&m.visible(), &o, ranks);
        prop_assert_eq!(agrees(ours, theirs), Ok(()), "{:?}", m);
    }
}
