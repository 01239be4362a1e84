//! Which GPUs the job uses (`gpus:`, `gpus: visible`) and how they form ranks (`ranks_per_node`,
//! `gpus_per_rank`).

use super::context::Unit;
use super::error::{ResolveError, ResolveErrorKind};
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::spec::{Family, GpuChoice, Spec};
use crate::topology::Topology;
use crate::topology::model::Gpu;

/// The selected GPUs, in the order ranks take them.
pub fn select_gpus<'t>(spec: &Spec, topo: &'t Topology) -> Result<Vec<&'t Gpu>, ResolveError> {
    let all: Vec<&Gpu> = topo.gpus().iter().collect();
    if let (Some(key), true) = (spec.gpus_asked, all.is_empty()) {
        return Err(no_gpus(spec, key, topo));
    }
    Ok(match &spec.gpus {
        GpuChoice::All | GpuChoice::Visible(None) => all,
        GpuChoice::None => Vec::new(),
        GpuChoice::Visible(Some((variable, value))) => visible_gpus(variable, value, topo)?,
        GpuChoice::Count(n) => {
            if *n as usize > all.len() {
                return Err(ResolveError::new(
                    ResolveErrorKind::TooManyGpus {
                        asked: *n,
                        available: all.len() as u32,
                        topology: topo.name().to_string(),
                    },
                    "gpus",
                    format!("ask for at most {} GPUs", all.len()),
                )
                .note(gpus_note(topo, &indices(&all))));
            }
            all.into_iter().take(*n as usize).collect()
        }
        GpuChoice::List(list) => {
            let mut out = Vec::new();
            for (k, idx) in list.iter().enumerate() {
                match topo.gpus().iter().find(|g| g.index == *idx) {
                    Some(g) => out.push(g),
                    None => {
                        let have = indices(&topo.gpus().iter().collect::<Vec<_>>());
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

/// A spec that asks for GPUs outright on a machine without any: an error that says why none
/// were found, never a CPU-only plan made in silence (a login node, a CI runner, a container
/// without the devices).
fn no_gpus(spec: &Spec, key: &'static str, topo: &Topology) -> ResolveError {
    let asked = match key {
        "gpus_per_rank" => format!("gpus_per_rank: {}", spec.gpus_per_rank),
        _ => match spec.gpus {
            GpuChoice::Visible(_) => "gpus: visible".to_string(),
            _ => "gpus: all".to_string(),
        },
    };
    let why = match topo.provenance().starts_with("discovered") {
        true => format!(
            "`{}` was {}: hwloc found no GPU on its PCI bus (no NVIDIA, AMD or Intel compute \
             device; a container must be given the host's devices and /sys/bus/pci)",
            topo.name(),
            topo.provenance()
        ),
        false => format!("the topology file of `{}` lists no GPU", topo.name()),
    };
    let mut error = ResolveError::new(
        ResolveErrorKind::NoGpus {
            asked: asked.into(),
            topology: topo.name().into(),
        },
        key,
        "write `gpus: none` for CPU-only ranks, or compile against the GPU machine's topology \
         file (`--topology FILE`)",
    )
    .note(why);
    for left_out in topo
        .notes()
        .iter()
        .filter(|n| n.contains("not counted as a GPU"))
    {
        error = error.note(left_out.clone());
    }
    error
}

/// The plan's note about `gpus: visible`, when a variable chose the GPUs.
pub fn visible_warning(spec: &Spec, gpus: &[&Gpu]) -> Option<Warning> {
    let GpuChoice::Visible(Some((variable, value))) = &spec.gpus else {
        return None;
    };
    let chosen = indices(gpus);
    Some(Warning::new(
        codes::W0205_GPUS_FROM_VARIABLE,
        format!(
            "GPUs {} from {variable}={value} (`gpus: visible`)",
            chosen.join(", ")
        ),
    ))
}

/// The plan's warning when `gpus:` names GPUs explicitly (a count or a list) and the ranks leave
/// some of them without a rank: what the spec asked for is not what runs. In the PyTorch family
/// they still count as peers (docs/policies.md), which the warning says.
pub fn unused_warning(spec: &Spec, selected: &[&Gpu], units: &[Unit]) -> Option<Warning> {
    if !matches!(spec.gpus, GpuChoice::Count(_) | GpuChoice::List(_)) {
        return None;
    }
    let unused: Vec<&Gpu> = selected
        .iter()
        .filter(|g| {
            !units
                .iter()
                .any(|u| u.gpus.iter().any(|r| r.index == g.index))
        })
        .copied()
        .collect();
    if unused.is_empty() {
        return None;
    }
    let role = match spec.cpu.policy.family() {
        Family::PyTorch => {
            "unused GPUs still count as peers of the GPUs on their NUMA nodes, as \
             torch.cuda.device_count() counts them"
        }
        _ => "unused GPUs play no part in the placement",
    };
    let (gpus, have) = match unused.as_slice() {
        [one] => (format!("GPU {}", one.index), "has"),
        _ => (format!("GPUs {}", indices(&unused).join(", ")), "have"),
    };
    Some(Warning::new(
        codes::W0206_GPUS_UNUSED,
        format!(
            "`gpus` selects {} GPUs, of which the ranks use {}: {gpus} {have} no rank ({role}); \
             set `ranks_per_node: {}` to use them all, or select only the GPUs the ranks use",
            selected.len(),
            selected.len() - unused.len(),
            selected.len() as u32 / spec.gpus_per_rank,
        ),
    ))
}

/// The ranks of one node: one per `gpus_per_rank` selected GPUs (or `ranks_per_node` of them),
/// or CPU-only ranks (default: one per NUMA node with allowed CPUs).
pub fn form_ranks<'t>(
    spec: &Spec,
    topo: &'t Topology,
    gpus: &[&'t Gpu],
    allowed: &CpuSet,
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
    // u64: `ranks_per_node` x `gpus_per_rank` can exceed u32 and must not wrap past this check.
    let needed = u64::from(n) * u64::from(per);
    if needed > gpus.len() as u64 || n == 0 {
        let path = if spec.ranks_per_node.is_some() {
            "ranks_per_node"
        } else {
            "gpus_per_rank"
        };
        let listed = indices(gpus);
        return Err(ResolveError::new(
            ResolveErrorKind::NotEnoughGpus {
                ranks: n.max(1),
                per_rank: per,
                needed: needed.max(u64::from(per)),
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
    // `needed` fits the GPU list, so these products are small.
    let per = per as usize;
    Ok((0..n)
        .map(|i| Unit {
            local_rank: i,
            gpus: gpus[i as usize * per..(i as usize + 1) * per].to_vec(),
        })
        .collect())
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

/// The GPUs' indices, as text.
fn indices(gpus: &[&Gpu]) -> Vec<String> {
    gpus.iter().map(|g| g.index.to_string()).collect()
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
