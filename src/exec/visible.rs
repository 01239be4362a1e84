//! The GPUs a process sees, from the variables that narrow and renumber them, and the local
//! rank they make it (`numaplan bind --local-rank gpu`): Ray, inference servers and RL
//! frameworks start their GPU workers themselves and hand each one its GPU through
//! `CUDA_VISIBLE_DEVICES`; such a worker is the plan's rank whose GPUs are exactly those. Pure:
//! the environment comes in as a map.

use std::collections::BTreeSet;

use super::ExecError;
use super::launcher::{Env, LocalRank};
use crate::plan::{Plan, PlannedGpu};

/// The variables that narrow or renumber the GPUs a process sees (CUDA, ROCm, HIP, Level Zero).
pub const VISIBILITY: [&str; 4] = [
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
];

/// The GPUs a process sees, by the machine's index, and the variables that said so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible {
    /// `CUDA_VISIBLE_DEVICES=3`, or several, space-separated, as they compose.
    pub via: String,
    pub gpus: Vec<u32>,
}

/// What the visibility variables leave this process, as the runtimes read them: ROCm's
/// `ROCR_VISIBLE_DEVICES` narrows the machine's GPUs, then `HIP_VISIBLE_DEVICES` (or
/// `CUDA_VISIBLE_DEVICES`, which HIP also reads) indexes what it left; otherwise
/// `CUDA_VISIBLE_DEVICES` names GPUs by the machine's index (as `nvidia-smi` numbers them) or
/// UUID (`GPU-8f3c`, a prefix; a MIG instance `MIG-GPU-<uuid>/1/0` by its GPU); Level Zero's
/// `ZE_AFFINITY_MASK` names devices (`0`, `1.0`: device 1's tile 0) of what is left.
pub fn visible_gpus(plan: &Plan, env: &Env) -> Result<Visible, ExecError> {
    let get = |var: &'static str| env.get(var).map(|v| (var, v.as_str()));
    let mut layers: Vec<(&str, &str)> = Vec::new();
    layers.extend(get("ROCR_VISIBLE_DEVICES"));
    layers.extend(get("HIP_VISIBLE_DEVICES").or_else(|| get("CUDA_VISIBLE_DEVICES")));
    layers.extend(get("ZE_AFFINITY_MASK"));
    if layers.is_empty() {
        return Err(ExecError::NoGpuVisible {
            why: format!("none of {} is set", VISIBILITY.join(", ")),
        });
    }
    let mut seen: Option<Vec<u32>> = None;
    for (var, value) in &layers {
        if value.trim().is_empty() {
            return Err(ExecError::NoGpuVisible {
                why: format!("{var} is set to nothing"),
            });
        }
        let mut gpus = Vec::new();
        for entry in value.split(',').map(str::trim) {
            let unknown = |why: String| ExecError::VisibleGpuUnknown {
                via: format!("{var}={value}"),
                entry: entry.to_string(),
                why,
                ranks: ranks_and_gpus(plan),
            };
            let gpu = match device_number(var, entry) {
                Some(k) => match &seen {
                    None if k < plan.machine.gpus as u64 => k as u32,
                    None => {
                        return Err(unknown(match plan.machine.gpus {
                            0 => "the plan's machine has no GPU".to_string(),
                            n => format!("the plan's machine has GPUs 0 to {}", n - 1),
                        }));
                    }
                    Some(left) => *left.get(k as usize).ok_or_else(|| {
                        unknown(format!("only {} GPUs are left visible to it", left.len()))
                    })?,
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
        "ZE_AFFINITY_MASK" => entry.split('.').next()?,
        _ => entry,
    };
    device.parse().ok()
}

/// The GPU whose UUID `entry` starts (a MIG instance `MIG-GPU-<uuid>/1/0` by its GPU's).
fn by_uuid(plan: &Plan, entry: &str) -> Result<u32, String> {
    let gpus: Vec<&PlannedGpu> = plan.ranks.iter().flat_map(|r| &r.gpus).collect();
    if gpus.iter().all(|g| g.uuid.is_none()) {
        return Err(
            "the plan knows its GPUs by index only (its topology has no UUIDs: \
                    compile it on the machine, where NVML gives them)"
                .into(),
        );
    }
    let uuid = match entry.strip_prefix("MIG-") {
        Some(mig) if mig.starts_with("GPU-") => mig.split('/').next().unwrap_or(mig),
        Some(_) => {
            return Err(
                "it is a MIG instance's own UUID, which does not name its GPU; use the GPU's \
                 index or UUID"
                    .into(),
            );
        }
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
        [] => Err("no GPU of the plan's ranks has that UUID".into()),
        _ => Err("it is the start of several GPUs' UUIDs".into()),
    }
}

/// The rank whose GPUs are exactly the ones this process sees.
pub fn by_gpu(plan: &Plan, env: &Env) -> Result<LocalRank, ExecError> {
    let visible = visible_gpus(plan, env)?;
    let wanted: BTreeSet<u32> = visible.gpus.iter().copied().collect();
    let matching: Vec<u32> = plan
        .ranks
        .iter()
        .filter(|r| r.gpus.iter().map(|g| g.index.0).collect::<BTreeSet<_>>() == wanted)
        .map(|r| r.local_rank)
        .collect();
    let gpus = gpu_list(&visible.gpus);
    match matching.as_slice() {
        [rank] => Ok(LocalRank {
            rank: *rank,
            via: visible.via,
            size: None,
            by_gpu: true,
        }),
        [] => Err(ExecError::NoRankForGpus {
            via: visible.via,
            gpus,
            ranks: ranks_and_gpus(plan),
        }),
        several => Err(ExecError::RanksShareGpus {
            via: visible.via,
            gpus,
            ranks: ranks_and_gpus(plan),
            sharing: several
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// `GPU 3`, `GPUs 2, 3`.
fn gpu_list(gpus: &[u32]) -> String {
    match gpus {
        [one] => format!("GPU {one}"),
        _ => {
            let all: Vec<String> = gpus.iter().map(u32::to_string).collect();
            format!("GPUs {}", all.join(", "))
        }
    }
}

/// The plan's ranks with their GPUs: `0: GPU 0; 1: GPU 1; 2: none`.
fn ranks_and_gpus(plan: &Plan) -> String {
    let each: Vec<String> = plan
        .ranks
        .iter()
        .map(|r| {
            let gpus: Vec<u32> = r.gpus.iter().map(|g| g.index.0).collect();
            match gpus.is_empty() {
                true => format!("{}: no GPU", r.local_rank),
                false => format!("{}: {}", r.local_rank, gpu_list(&gpus)),
            }
        })
        .collect();
    each.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four ranks of one GPU each (GPUs 0-3, UUIDs `GPU-aaaa...`-`GPU-dddd...`) on a machine of
    /// six GPUs.
    fn plan() -> Plan {
        let mut text = String::from(
            "numaplan_plan: 1\ntopology: {name: t, fingerprint: f, cpus: 4, numa_nodes: 1, gpus: 6}\n\
             policy: node\nnodes: 1\nranks_per_node: 4\nranks:\n",
        );
        for (i, u) in ["aaaa", "bbbb", "cccc", "dddd"].iter().enumerate() {
            text.push_str(&format!(
                "- {{rank: {i}, local_rank: {i}, gpus: [{i}], gpu_pci: ['0000:0{i}:00.0'], \
                 gpu_uuid: [GPU-{u}-1234], numa_node: 0, cpus: '{i}', cores: 1, \
                 memory: {{policy: none, nodes: ''}}, nics: [], env: {{}}}}\n"
            ));
        }
        crate::plan_file::load("plan.yaml", &text)
            .unwrap_or_else(|_| panic!("the test plan loads"))
            .plan
    }

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn seen(pairs: &[(&str, &str)]) -> Result<Vec<u32>, ExecError> {
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
            matches!(seen(pairs), Err(ExecError::VisibleGpuUnknown { .. }))
        };
        assert!(matches!(seen(&[]), Err(ExecError::NoGpuVisible { .. })));
        assert!(matches!(
            seen(&[("CUDA_VISIBLE_DEVICES", " ")]),
            Err(ExecError::NoGpuVisible { .. })
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
        let rank = by_gpu(&p, &env(&[("CUDA_VISIBLE_DEVICES", "GPU-bb")])).unwrap();
        assert_eq!(
            (rank.rank, rank.via.as_str(), rank.by_gpu),
            (1, "CUDA_VISIBLE_DEVICES=GPU-bb", true)
        );
        // A GPU no rank has (4 of the machine's 6), and two GPUs where ranks have one.
        for value in ["4", "0,1"] {
            match by_gpu(&p, &env(&[("CUDA_VISIBLE_DEVICES", value)])) {
                Err(ExecError::NoRankForGpus { ranks, .. }) => {
                    assert_eq!(ranks, "0: GPU 0; 1: GPU 1; 2: GPU 2; 3: GPU 3")
                }
                other => panic!("{value}: {other:?}"),
            }
        }
    }
}
