//! The GPUs a process sees, from the variables that narrow and renumber them, and the local
//! rank they make it (`numaplan bind --local-rank gpu`): Ray, inference servers and RL
//! frameworks start their GPU workers themselves and hand each one its GPU through
//! `CUDA_VISIBLE_DEVICES`; such a worker is the plan's rank whose GPUs are exactly those. Pure:
//! the environment comes in as a map.

use std::collections::BTreeSet;

use super::Env;
use super::error::{NothingVisible, RankError, RankGpus, UnknownGpu};
use crate::diag::Warning;
use crate::diag::codes::W0214_GPUS_RENUMBERED;
use crate::plan::{Plan, PlannedGpu, RankBinding};
use crate::variables::{
    CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, VISIBILITY, ZE_AFFINITY_MASK,
};

/// The GPUs a process sees, by the machine's index, and the variables that said so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible {
    /// `CUDA_VISIBLE_DEVICES=3`, or several, space-separated, as they compose.
    pub via: String,
    pub gpus: Vec<u32>,
}

/// Whether a visibility value hides every GPU, as the runtimes read it: CUDA stops at the first
/// entry that is no device, so `-1` (the usual "no GPU") names none, and Slurm sets
/// `NoDevFiles` in a step given no GPU.
fn names_no_device(value: &str) -> bool {
    let first = value.split(',').next().unwrap_or_default().trim();
    first.starts_with('-') || first.eq_ignore_ascii_case("NoDevFiles")
}

/// What the visibility variables leave this process, as the runtimes read them: ROCm's
/// `ROCR_VISIBLE_DEVICES` narrows the machine's GPUs, then `HIP_VISIBLE_DEVICES` (or
/// `CUDA_VISIBLE_DEVICES`, which HIP also reads) indexes what it left; otherwise
/// `CUDA_VISIBLE_DEVICES` names GPUs by the machine's index (as `nvidia-smi` numbers them) or
/// UUID (`GPU-8f3c`, a prefix; a MIG instance `MIG-GPU-<uuid>/1/0` by its GPU); Level Zero's
/// `ZE_AFFINITY_MASK` names devices (`0`, `1.0`: device 1's tile 0) of what is left.
pub fn visible_gpus(plan: &Plan, env: &Env) -> Result<Visible, RankError> {
    let get = |var: &'static str| env.get(var).map(|v| (var, v.as_str()));
    let mut layers: Vec<(&'static str, &str)> = Vec::new();
    layers.extend(get(ROCR_VISIBLE_DEVICES));
    layers.extend(get(HIP_VISIBLE_DEVICES).or_else(|| get(CUDA_VISIBLE_DEVICES)));
    layers.extend(get(ZE_AFFINITY_MASK));
    if layers.is_empty() {
        return Err(RankError::NoGpuVisible {
            why: NothingVisible::NoneSet,
        });
    }
    let mut seen: Option<Vec<u32>> = None;
    for (var, value) in &layers {
        if value.trim().is_empty() {
            return Err(RankError::NoGpuVisible {
                why: NothingVisible::Empty(var),
            });
        }
        if names_no_device(value) {
            return Err(RankError::NoGpuVisible {
                why: NothingVisible::NoDevice(var, value.trim().to_string()),
            });
        }
        let mut gpus = Vec::new();
        for entry in value.split(',').map(str::trim) {
            let unknown = |why: UnknownGpu| RankError::VisibleGpuUnknown {
                via: format!("{var}={value}"),
                entry: entry.to_string(),
                why,
                ranks: ranks_and_gpus(plan),
            };
            let gpu = match device_number(var, entry) {
                Some(k) => match &seen {
                    None if k < plan.machine.gpus as u64 => k as u32,
                    None => {
                        return Err(unknown(UnknownGpu::PastMachine {
                            gpus: plan.machine.gpus as u32,
                        }));
                    }
                    Some(left) => *left
                        .get(k as usize)
                        .ok_or_else(|| unknown(UnknownGpu::PastVisible { left: left.len() }))?,
                },
                None => by_uuid(plan, entry).map_err(unknown)?,
            };
            gpus.push(gpu);
        }
        seen = Some(gpus);
    }
    let via: Vec<String> = layers.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(Visible {
        via: via.join(" "),
        gpus: seen.unwrap_or_default(),
    })
}

/// An entry that numbers a device: `3`, or for Level Zero `1.0` (device 1's tile 0).
fn device_number(var: &str, entry: &str) -> Option<u64> {
    let device = match var {
        ZE_AFFINITY_MASK => entry.split('.').next()?,
        _ => entry,
    };
    device.parse().ok()
}

/// The GPU whose UUID `entry` starts (a MIG instance `MIG-GPU-<uuid>/1/0` by its GPU's).
fn by_uuid(plan: &Plan, entry: &str) -> Result<u32, UnknownGpu> {
    let gpus: Vec<&PlannedGpu> = plan.ranks.iter().flat_map(|r| &r.gpus).collect();
    if gpus.iter().all(|g| g.uuid.is_none()) {
        return Err(UnknownGpu::NoUuids);
    }
    let uuid = match entry.strip_prefix("MIG-") {
        Some(mig) if mig.starts_with("GPU-") => mig.split('/').next().unwrap_or(mig),
        Some(_) => return Err(UnknownGpu::MigInstance),
        None => entry,
    };
    let mut matching: Vec<u32> = gpus
        .iter()
        .filter(|g| g.uuid.as_deref().is_some_and(|u| u.starts_with(uuid)))
        .map(|g| g.index.0)
        .collect();
    matching.sort_unstable();
    matching.dedup();
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => Err(UnknownGpu::NoSuchUuid),
        _ => Err(UnknownGpu::AmbiguousUuid),
    }
}

/// The local rank whose GPUs are exactly the ones this process sees, and the variables that
/// say so (`CUDA_VISIBLE_DEVICES=3`).
pub fn by_gpu(plan: &Plan, env: &Env) -> Result<(u32, String), RankError> {
    let visible = visible_gpus(plan, env)?;
    let wanted: BTreeSet<u32> = visible.gpus.iter().copied().collect();
    let matching: Vec<u32> = plan
        .ranks
        .iter()
        .filter(|r| r.gpus.iter().map(|g| g.index.0).collect::<BTreeSet<_>>() == wanted)
        .map(|r| r.local_rank)
        .collect();
    match matching.as_slice() {
        [rank] => Ok((*rank, visible.via)),
        [] => Err(RankError::NoRankForGpus {
            via: visible.via,
            gpus: visible.gpus,
            ranks: ranks_and_gpus(plan),
        }),
        several => Err(RankError::RanksShareGpus {
            via: visible.via,
            gpus: visible.gpus,
            ranks: ranks_and_gpus(plan),
            sharing: several.to_vec(),
        }),
    }
}

/// The plan's ranks with their GPUs.
fn ranks_and_gpus(plan: &Plan) -> Vec<RankGpus> {
    plan.ranks
        .iter()
        .map(|r| RankGpus {
            local_rank: r.local_rank,
            gpus: r.gpus.iter().map(|g| g.index.0).collect(),
        })
        .collect()
}

/// The warnings to show before `ranks` start: the plan's, then what the environment they
/// inherit changes (`visibility_warning`).
pub fn warnings(plan: &Plan, ranks: &[RankBinding], env: &Env) -> Vec<Warning> {
    let mut all = plan.warnings.clone();
    all.extend(visibility_warning(plan, ranks, env));
    all
}

/// A warning when the environment the ranks inherit renumbers their GPUs and the plan does not
/// set that variable itself: a rank placed next to GPU 3 by the machine's numbering would use
/// whichever GPU the variable makes its device 3 (Slurm's `--gpus-per-task` sets one per task,
/// a login shell may carry one over). A variable that lists every GPU in order renumbers
/// nothing.
fn visibility_warning(plan: &Plan, ranks: &[RankBinding], env: &Env) -> Option<Warning> {
    let gpus: Vec<String> = ranks
        .iter()
        .flat_map(|r| r.gpus.iter().map(|g| g.index.to_string()))
        .collect();
    if gpus.is_empty() {
        return None;
    }
    let identity: Vec<String> = (0..plan.machine.gpus).map(|i| i.to_string()).collect();
    let (var, value) = VISIBILITY.iter().find_map(|&var| {
        let value = env.get(var).filter(|v| !v.trim().is_empty())?;
        let listed: Vec<&str> = value.split(',').map(str::trim).collect();
        let renumbers = listed != identity;
        // One rank that sees exactly its own GPUs (torchrun --virtual-local-rank) uses them.
        let own = ranks.len() == 1 && listed == gpus;
        let planned = ranks.iter().all(|r| r.env.contains_key(var));
        (renumbers && !planned && !own).then_some((var, value))
    })?;
    let planned = match gpus.as_slice() {
        [one] => format!("GPU {one}"),
        _ => format!("GPUs {}", gpus.join(", ")),
    };
    Some(Warning::new(
        W0214_GPUS_RENUMBERED,
        format!(
            "{var}={value} in the environment renumbers the GPUs a rank sees, but the plan placed \
         its ranks next to {planned} by the machine's numbering and sets no {var}: a rank may \
         run on another GPU than the one it is bound next to; unset {var}, compile the plan \
         where it is set with `gpus: visible`, or give each rank its GPUs with \
         `gpu: {{visible: own}}`"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four ranks of one GPU each (GPUs 0-3, UUIDs `GPU-aaaa...`-`GPU-dddd...`) on a machine of
    /// six GPUs.
    fn plan() -> Plan {
        let ranks: Vec<String> = ["aaaa", "bbbb", "cccc", "dddd"]
            .iter()
            .enumerate()
            .map(|(i, u)| {
                format!(
                    "{{rank: {i}, local_rank: {i}, gpus: [{i}], gpu_pci: ['0000:0{i}:00.0'], \
                     gpu_uuid: [GPU-{u}-1234], numa_node: 0, cpus: '{i}', cores: 1, \
                     memory: {{policy: none, nodes: ''}}, nics: [], env: {{}}}}"
                )
            })
            .collect();
        crate::plan_file::test_plan("cpus: 4, numa_nodes: 1, gpus: 6", &ranks)
    }

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn seen(pairs: &[(&str, &str)]) -> Result<Vec<u32>, RankError> {
        visible_gpus(&plan(), &env(pairs)).map(|v| v.gpus)
    }

    #[test]
    fn each_variable_names_gpus_as_its_runtime_reads_it() {
        assert_eq!(seen(&[("CUDA_VISIBLE_DEVICES", "3,1")]).unwrap(), [3, 1]);
        assert_eq!(seen(&[("CUDA_VISIBLE_DEVICES", "GPU-cc")]).unwrap(), [2]);
        // An old-style MIG instance names its GPU.
        assert_eq!(
            seen(&[("CUDA_VISIBLE_DEVICES", "MIG-GPU-dddd/1/0")]).unwrap(),
            [3]
        );
        // ROCm: ROCR narrows, then HIP (or CUDA) indexes what is left.
        let rocm = [
            ("ROCR_VISIBLE_DEVICES", "2,3"),
            ("HIP_VISIBLE_DEVICES", "1"),
        ];
        assert_eq!(seen(&rocm).unwrap(), [3]);
        let rocm = [
            ("ROCR_VISIBLE_DEVICES", "2,3"),
            ("CUDA_VISIBLE_DEVICES", "0"),
        ];
        assert_eq!(seen(&rocm).unwrap(), [2]);
        // Level Zero: device 1's tiles are device 1.
        assert_eq!(seen(&[("ZE_AFFINITY_MASK", "1.0,1.1")]).unwrap(), [1, 1]);
    }

    #[test]
    fn what_names_no_gpu_is_an_error() {
        let unknown = |pairs: &[(&str, &str)]| {
            matches!(seen(pairs), Err(RankError::VisibleGpuUnknown { .. }))
        };
        assert!(matches!(seen(&[]), Err(RankError::NoGpuVisible { .. })));
        assert!(matches!(
            seen(&[("CUDA_VISIBLE_DEVICES", " ")]),
            Err(RankError::NoGpuVisible { .. })
        ));
        assert!(
            unknown(&[("CUDA_VISIBLE_DEVICES", "6")]),
            "the machine has 0-5"
        );
        assert!(unknown(&[("CUDA_VISIBLE_DEVICES", "GPU-ee")]));
        assert!(unknown(&[("CUDA_VISIBLE_DEVICES", "MIG-0f2e")]));
        assert!(unknown(&[
            ("ROCR_VISIBLE_DEVICES", "2"),
            ("HIP_VISIBLE_DEVICES", "1")
        ]));
    }

    #[test]
    fn the_rank_is_the_one_with_exactly_those_gpus() {
        let p = plan();
        let (rank, via) = by_gpu(&p, &env(&[("CUDA_VISIBLE_DEVICES", "GPU-bb")])).unwrap();
        assert_eq!((rank, via.as_str()), (1, "CUDA_VISIBLE_DEVICES=GPU-bb"));
        // A GPU no rank has (4 of the machine's 6), and two GPUs where ranks have one.
        for value in ["4", "0,1"] {
            match by_gpu(&p, &env(&[("CUDA_VISIBLE_DEVICES", value)])) {
                Err(RankError::NoRankForGpus { ranks, .. }) => {
                    assert_eq!(
                        super::super::error::ranks_text(&ranks),
                        "0: GPU 0; 1: GPU 1; 2: GPU 2; 3: GPU 3"
                    )
                }
                other => panic!("{value}: {other:?}"),
            }
        }
    }
}
