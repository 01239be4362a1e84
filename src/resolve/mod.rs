//! `resolve(&Spec, &Topology) -> Plan`: pure and deterministic (no IO, clock or environment;
//! BTreeMaps only). Selects GPUs, forms ranks, places CPUs by the policy's family, then adds
//! memory policy, NIC and environment per rank.

pub mod auto;
pub mod context;
pub mod error;
pub mod gpu_affinity;
pub mod nics;
pub mod pytorch;

use std::collections::BTreeMap;

use context::{Ctx, Placement, Unit};
pub use error::{ResolveError, ResolveErrorKind};

use crate::cpuset::CpuSet;
use crate::plan::{MachineShape, MemoryBinding, Plan, PlannedGpu, RankBinding};
use crate::spec::{Family, GpuChoice, MemPolicy, NicPolicy, Policy, Spec, Visibility};
use crate::topology::Topology;
use crate::topology::model::{Gpu, Vendor};

pub fn resolve(spec: &Spec, topo: &Topology) -> Result<Plan, ResolveError> {
    // Facts the topology's source found (NVML disagreeing with hwloc) come first.
    let mut warnings = topo.notes().to_vec();
    let allowed = match &spec.cpu.allowed {
        Some(a) => topo.allowed().intersection(a),
        None => topo.allowed().clone(),
    };
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
    for node in topo.nodes().iter().filter(|n| !n.kind.is_memory_only()) {
        let cpus = topo.node_cpus(node.id);
        let usable = cpus.intersection(&allowed);
        if usable.len() < cpus.len() {
            warnings.push(format!(
                "node {} has {} of {} CPUs allowed",
                node.id,
                usable.len(),
                cpus.len()
            ));
        }
    }

    let gpus = select_gpus(spec, topo)?;
    if let GpuChoice::Visible(Some((variable, value))) = &spec.gpus {
        let indices: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
        warnings.push(format!(
            "GPUs {} from {variable}={value} (`gpus: visible`)",
            indices.join(", ")
        ));
    }
    let units = form_ranks(spec, topo, &gpus, &allowed)?;
    let ctx = Ctx::new(topo, &spec.cpu, allowed.clone());
    let placements: Vec<Placement> = match spec.cpu.policy {
        Policy::Auto => auto::place(&ctx, &units, &mut warnings)?,
        Policy::Node => pytorch::place(&ctx, &units, pytorch::Mode::Node)?,
        Policy::Socket => pytorch::place(&ctx, &units, pytorch::Mode::Socket)?,
        Policy::Exclusive => pytorch::place(&ctx, &units, pytorch::Mode::Exclusive)?,
        Policy::CoreComplex => pytorch::place(&ctx, &units, pytorch::Mode::CoreComplex)?,
        Policy::All => gpu_affinity::place(&ctx, &units, gpu_affinity::Mode::All)?,
        Policy::Single => gpu_affinity::place(&ctx, &units, gpu_affinity::Mode::Single)?,
        Policy::SingleUnique => {
            gpu_affinity::place(&ctx, &units, gpu_affinity::Mode::SingleUnique)?
        }
        Policy::UniqueContiguous => {
            gpu_affinity::place(&ctx, &units, gpu_affinity::Mode::UniqueContiguous)?
        }
        Policy::UniqueInterleaved => {
            gpu_affinity::place(&ctx, &units, gpu_affinity::Mode::UniqueInterleaved)?
        }
    };
    for (u, p) in units.iter().zip(&placements) {
        if p.cpus.is_empty() {
            return Err(ResolveError::new(
                ResolveErrorKind::NothingAllowed {
                    what: format!("rank {}", u.local_rank),
                },
                "cpu.allowed",
                "widen `cpu.allowed`, or run fewer ranks",
            ));
        }
    }

    // Only `auto` honours `cpu.reserve` and `cpu.reserve_per_l3`.
    let reserved = match spec.cpu.policy {
        Policy::Auto => auto::reserved_cpus(&ctx),
        _ => CpuSet::new(),
    };
    let memory = memory_policy(spec, topo)?;
    let anchors: Vec<nics::Anchor> = units
        .iter()
        .zip(&placements)
        .map(|(u, p)| {
            // A GPU rank sits at its GPU; a CPU-only rank at its (first) node.
            let node = u
                .lead()
                .and_then(|g| g.numa_node)
                .or(p.home)
                .or(p.memory_nodes.first().copied());
            nics::Anchor {
                gpu: u.lead(),
                node,
                package: u
                    .lead()
                    .and_then(|g| ctx.gpu_package(g))
                    .or(node.and_then(|n| topo.node_package(n))),
            }
        })
        .collect();
    let chosen = match spec.nic {
        NicPolicy::Closest => nics::choose(topo, &anchors),
        NicPolicy::None => anchors.iter().map(|_| None).collect(),
    };

    let rpn = units.len() as u32;
    let mut memory_warnings = Vec::new();
    let ranks: Vec<RankBinding> = units
        .iter()
        .zip(placements)
        .zip(chosen)
        .map(|((u, p), nic)| {
            let memory = MemoryBinding {
                policy: memory.0,
                nodes: match memory.0 {
                    MemPolicy::None => Vec::new(),
                    _ => within_allowed_memory(
                        memory.1.clone().unwrap_or_else(|| p.memory_nodes.clone()),
                        topo,
                        &mut memory_warnings,
                    ),
                },
            };
            let mut env = BTreeMap::new();
            let mut set = |k: &str, v: String| {
                env.insert(k.to_string(), v);
            };
            set("LOCAL_RANK", u.local_rank.to_string());
            set("LOCAL_WORLD_SIZE", rpn.to_string());
            set("WORLD_SIZE", (rpn * spec.nodes).to_string());
            set("MASTER_PORT", spec.port.to_string());
            set("OMP_NUM_THREADS", p.cores.to_string());
            if spec.nodes == 1 {
                set("RANK", u.local_rank.to_string());
                set("GROUP_RANK", "0".into());
                set("NODE_RANK", "0".into());
                set("MASTER_ADDR", spec.master_addr.clone());
            }
            if spec.visible == Visibility::Own {
                for (vendor, var) in [
                    (Vendor::Nvidia, "CUDA_VISIBLE_DEVICES"),
                    (Vendor::Amd, "ROCR_VISIBLE_DEVICES"),
                    (Vendor::Intel, "ZE_AFFINITY_MASK"),
                ] {
                    let ids: Vec<String> = u
                        .gpus
                        .iter()
                        .filter(|g| g.vendor == vendor)
                        .map(|g| g.index.to_string())
                        .collect();
                    if !ids.is_empty() {
                        set(var, ids.join(","));
                    }
                }
            }
            if let Some(n) = nic {
                for (k, v) in nics::env(n) {
                    set(k, v);
                }
            }
            for (k, v) in &spec.env {
                set(k, v.clone());
            }
            RankBinding {
                local_rank: u.local_rank,
                gpus: u
                    .gpus
                    .iter()
                    .map(|g| PlannedGpu {
                        index: g.index,
                        pci: g.pci,
                    })
                    .collect(),
                numa_node: p.home,
                cpus: p.cpus,
                cores: p.cores,
                memory,
                nics: nic.map(|n| n.name.clone()).into_iter().collect(),
                env,
            }
        })
        .collect();
    warnings.extend(memory_warnings);
    warnings.extend(ranks.iter().filter_map(|r| mixed_kinds(topo, r)));

    Ok(Plan {
        name: spec.name.clone(),
        command: spec.command.clone(),
        topology: topo.name().to_string(),
        machine: MachineShape {
            cpus: topo.all_cpus().len(),
            numa_nodes: topo.nodes().len(),
            gpus: topo.gpus().len(),
        },
        policy: spec.cpu.policy,
        nodes: spec.nodes,
        ranks_per_node: rpn,
        ranks,
        reserved,
        warnings,
        port: spec.port,
        slurm: spec.slurm.clone(),
    })
}

/// On a hybrid machine, says when a rank's CPUs are cores of different speeds: a synchronous job
/// runs at the pace of its slowest threads. Kinds that differ only in the kernel's capacity
/// estimate (`LinuxCapacity`: hwloc 2.x splits one core design into several kinds by it) count as
/// one speed; kinds with no other attribute count by their efficiency rank.
fn mixed_kinds(topo: &Topology, rank: &RankBinding) -> Option<String> {
    let mut speeds: BTreeMap<String, CpuSet> = BTreeMap::new();
    for kind in topo.cpu_kinds() {
        let cpus = kind.cpus.intersection(&rank.cpus);
        if cpus.is_empty() {
            continue;
        }
        let attributes: Vec<String> = kind
            .info
            .iter()
            .filter(|(k, _)| k.as_str() != "LinuxCapacity")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let speed = if attributes.is_empty() {
            kind.label()
        } else {
            attributes.join(", ")
        };
        let set = speeds.entry(speed).or_default();
        *set = set.union(&cpus);
    }
    (speeds.len() > 1).then(|| {
        let mut parts: Vec<(CpuSet, String)> =
            speeds.into_iter().map(|(speed, cpus)| (cpus, speed)).collect();
        parts.sort_by_key(|(cpus, _)| cpus.first());
        let parts: Vec<String> = parts
            .iter()
            .map(|(cpus, speed)| format!("{cpus} at {speed}"))
            .collect();
        format!(
            "rank {} mixes cores of {} speeds ({}); a synchronous job runs at the pace of its slowest threads",
            rank.local_rank,
            parts.len(),
            parts.join("; ")
        )
    })
}

fn select_gpus<'t>(spec: &Spec, topo: &'t Topology) -> Result<Vec<&'t Gpu>, ResolveError> {
    let all: Vec<&Gpu> = topo.gpus().iter().collect();
    Ok(match &spec.gpus {
        GpuChoice::All | GpuChoice::Visible(None) => all,
        GpuChoice::None => Vec::new(),
        GpuChoice::Visible(Some((variable, value))) => visible_gpus(variable, value, topo)?,
        GpuChoice::Count(n) => {
            if *n as usize > all.len() {
                return Err(ResolveError::new(
                    ResolveErrorKind::NotEnoughGpus {
                        ranks: *n,
                        per_rank: 1,
                        needed: *n,
                        available: all.len() as u32,
                    },
                    "gpus",
                    format!("ask for at most {} GPUs", all.len()),
                )
                .note(format!("topology `{}` has {} GPUs", topo.name(), all.len())));
            }
            all.into_iter().take(*n as usize).collect()
        }
        GpuChoice::List(list) => {
            let mut out = Vec::new();
            for (k, idx) in list.iter().enumerate() {
                match topo.gpus().iter().find(|g| g.index == *idx) {
                    Some(g) => out.push(g),
                    None => {
                        let have: Vec<String> =
                            topo.gpus().iter().map(|g| g.index.to_string()).collect();
                        return Err(ResolveError::new(
                            ResolveErrorKind::UnknownGpu {
                                index: idx.0,
                                topology: topo.name().to_string(),
                            },
                            &format!("gpus[{k}]"),
                            "list only GPUs the machine has",
                        )
                        .note(gpus_note(topo, &have)));
                    }
                }
            }
            out
        }
    })
}

fn form_ranks<'t>(
    spec: &Spec,
    topo: &'t Topology,
    gpus: &[&'t Gpu],
    allowed: &crate::cpuset::CpuSet,
) -> Result<Vec<Unit<'t>>, ResolveError> {
    let per = spec.gpus_per_rank;
    if gpus.is_empty() {
        let default = topo
            .nodes()
            .iter()
            .filter(|n| topo.node_cpus(n.id).intersects(allowed))
            .count() as u32;
        let n = spec.ranks_per_node.unwrap_or(default.max(1));
        return Ok((0..n)
            .map(|i| Unit {
                local_rank: i,
                gpus: Vec::new(),
            })
            .collect());
    }
    let n = spec.ranks_per_node.unwrap_or(gpus.len() as u32 / per);
    let needed = n * per;
    if needed as usize > gpus.len() || n == 0 {
        let path = if spec.ranks_per_node.is_some() {
            "ranks_per_node"
        } else {
            "gpus_per_rank"
        };
        let listed: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
        return Err(ResolveError::new(
            ResolveErrorKind::NotEnoughGpus {
                ranks: n.max(1),
                per_rank: per,
                needed: needed.max(per),
                available: gpus.len() as u32,
            },
            path,
            format!(
                "set `ranks_per_node: {}` or less, or `gpus: none` for CPU-only ranks",
                gpus.len() as u32 / per
            ),
        )
        .note(format!(
            "selected GPUs on `{}`: {}",
            topo.name(),
            listed.join(", ")
        )));
    }
    Ok((0..n)
        .map(|i| Unit {
            local_rank: i,
            gpus: gpus[(i * per) as usize..((i + 1) * per) as usize].to_vec(),
        })
        .collect())
}

/// The memory policy and its explicit nodes (`None`: each rank's home).
fn memory_policy(
    spec: &Spec,
    topo: &Topology,
) -> Result<(MemPolicy, Option<Vec<crate::ids::NodeId>>), ResolveError> {
    let policy = spec
        .memory
        .policy
        .unwrap_or(match spec.cpu.policy.family() {
            Family::Auto => MemPolicy::Preferred,
            Family::PyTorch | Family::GpuAffinity => MemPolicy::None,
        });
    if let Some(nodes) = &spec.memory.nodes {
        for n in nodes {
            if topo.node(*n).is_none() {
                let have: Vec<String> = topo.nodes().iter().map(|n| n.id.to_string()).collect();
                return Err(ResolveError::new(
                    ResolveErrorKind::UnknownMemoryNode {
                        node: n.0,
                        topology: topo.name().to_string(),
                    },
                    "memory.nodes",
                    "list NUMA nodes of the machine",
                )
                .note(format!("`{}` has nodes {}", topo.name(), have.join(", "))));
            }
        }
        if policy == MemPolicy::Preferred && nodes.len() > 1 {
            return Err(ResolveError::new(
                ResolveErrorKind::PreferredManyNodes { count: nodes.len() },
                "memory.nodes",
                "use `policy: interleave` to spread over several nodes, or list one node",
            ));
        }
    }
    Ok((policy, spec.memory.nodes.clone()))
}

/// The GPUs a visibility variable names, in its order: each entry a GPU index, or a prefix of
/// one GPU's UUID (`GPU-8f3c`), as CUDA and ROCm read them.
fn visible_gpus<'t>(
    variable: &str,
    value: &str,
    topo: &'t Topology,
) -> Result<Vec<&'t Gpu>, ResolveError> {
    let fail = |detail: String| {
        let have: Vec<String> = topo
            .gpus()
            .iter()
            .map(|g| match &g.uuid {
                Some(u) => format!("{} ({u})", g.index),
                None => g.index.to_string(),
            })
            .collect();
        ResolveError::new(
            ResolveErrorKind::VisibleDevices {
                detail: format!("{variable}={value}: {detail}"),
            },
            "gpus",
            format!("set {variable} to GPUs of this machine, or unset it to use them all"),
        )
        .note(gpus_note(topo, &have))
    };
    let mut out: Vec<&Gpu> = Vec::new();
    for entry in value.split(',').map(str::trim) {
        let gpu = match entry.parse::<u32>() {
            Ok(i) => topo
                .gpus()
                .iter()
                .find(|g| g.index.0 == i)
                .ok_or_else(|| fail(format!("there is no GPU {i}")))?,
            Err(_) if entry.is_empty() => return Err(fail("no GPU is visible".into())),
            Err(_) => {
                let matching: Vec<&Gpu> = topo
                    .gpus()
                    .iter()
                    .filter(|g| g.uuid.as_deref().is_some_and(|u| u.starts_with(entry)))
                    .collect();
                match matching.as_slice() {
                    [one] => *one,
                    [] => return Err(fail(format!("no GPU's UUID starts with `{entry}`"))),
                    _ => {
                        return Err(fail(format!(
                            "`{entry}` is the start of several GPUs' UUIDs"
                        )));
                    }
                }
            }
        };
        if out.iter().any(|g| g.index == gpu.index) {
            return Err(fail(format!("GPU {} is named twice", gpu.index)));
        }
        out.push(gpu);
    }
    Ok(out)
}

/// A rank's memory nodes within the nodes whose memory the job may use (the cpuset's mems): a
/// node outside them is replaced by the nearest allowed node (by distance, then id), which
/// `warnings` says once per node.
fn within_allowed_memory(
    nodes: Vec<crate::ids::NodeId>,
    topo: &Topology,
    warnings: &mut Vec<String>,
) -> Vec<crate::ids::NodeId> {
    let allowed = topo.allowed_memory();
    let mut out: Vec<crate::ids::NodeId> = Vec::new();
    for node in nodes {
        let target = if allowed.contains(&node) {
            node
        } else {
            let nearest = *allowed
                .iter()
                .min_by_key(|a| (topo.distance(node, **a).unwrap_or(u32::MAX), **a))
                .expect("invariant: a topology allows some memory node");
            let warning = format!(
                "memory of node {node} is not allowed (allowed memory nodes {}); ranks placed there take memory from node {nearest}",
                crate::ids::node_list(allowed)
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

/// The note under a GPU selection error: which GPUs the machine has (`have`, as described).
fn gpus_note(topo: &Topology, have: &[String]) -> String {
    let list = if have.is_empty() {
        "none".to_string()
    } else {
        have.join(", ")
    };
    format!("`{}` has GPUs {list}", topo.name())
}
