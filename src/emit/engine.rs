//! A plan in a serving engine's own words: `--emit vllm` (`vllm serve --numa-bind
//! --numa-bind-nodes ... --numa-bind-cpus ...`, and each GPU's NIC) and `--emit sglang`
//! (`--numa-node ...`, the server under `numaplan bind --all-ranks`). Each worker of the engine
//! binds itself to the entry of its GPU, in CUDA's order of the visible GPUs, so entry i is the
//! plan's local rank i and `CUDA_VISIBLE_DEVICES` lists the ranks' GPUs in that order. What the
//! engine cannot say is refused (`EmitError::EngineRankGpus`, `OtherEngine`) or said
//! (`losses`, W0221); docs/engines.md.

use std::collections::BTreeMap;

use serde::Serialize;

use super::view::{EnvVar, JobView, job_view};
use super::{EmitError, EmitKind, Origin};
use crate::diag::{Warning, codes};
use crate::pci_addr::PciAddr;
use crate::plan::job::JobPlan;
use crate::plan::{Plan, RankBinding};
use crate::spec::{Engine, MemPolicy};
use crate::variables::{NCCL_IB_HCA, NODE_PLACE, TORCHRUN_NUMBERING, UCX_NET_DEVICES, VISIBILITY};

/// The `--emit vllm` and `--emit sglang` scripts' own parts of the job's view: the engine's
/// lists (vLLM's node check is `bind --dry-run` of every rank, as the torchrun script's).
#[derive(Serialize)]
pub struct EngineLists {
    /// Per GPU in CUDA's order (the plan's local ranks): its index, its rank's home node and
    /// CPUs in numactl's list syntax.
    gpus: Vec<String>,
    nodes_list: Vec<String>,
    cpus_list: Vec<String>,
    /// Variables every rank of the plan has alike (its `env:`, OpenMP's, the engine's own),
    /// which the engine's workers inherit from the server.
    shared_env: Vec<EnvVar>,
    /// vLLM: each GPU's NIC by PCI address (`VLLM_GPU_NIC_PCIE_MAPPING`), where the plan gives
    /// every rank an RDMA NIC; and the variables vLLM sets from it in each worker.
    nic_mapping: Option<String>,
    nic_vars: String,
    /// Whether any rank has a NIC: the script then says an inherited NIC variable reaches the
    /// workers instead of their ranks' NICs.
    planned_nics: bool,
    /// The GPUs by UUID in the same order, where the plan knows every one: an inherited
    /// `CUDA_VISIBLE_DEVICES` may name them so.
    uuids: Option<String>,
    /// Every GPU of the machine in its own order (`0,1,...`): a `ROCR_VISIBLE_DEVICES` of
    /// that value renumbers nothing.
    identity: String,
}

/// The variables vLLM sets in each worker from its GPU's NIC (`VLLM_NIC_SELECTION_VARS`):
/// the device name, and with `:1` its port, as `resolve::nics` names an RDMA NIC.
fn vllm_nic_vars() -> String {
    format!("{NCCL_IB_HCA},{UCX_NET_DEVICES}:1")
}

/// The variables a launcher sets for every rank by itself: the numbering, and the GPUs each
/// sees (the script sets `CUDA_VISIBLE_DEVICES` for the server).
fn set_by_the_launch(name: &str) -> bool {
    TORCHRUN_NUMBERING.contains(&name) || NODE_PLACE.contains(&name) || VISIBILITY.contains(&name)
}

/// The engine's launch of `job`, and what it cannot say of the plan (W0221): a job of one
/// group whose every rank is one GPU worker.
pub fn view(
    job: &JobPlan,
    origin: &Origin,
    engine: Engine,
) -> Result<(JobView<EngineLists, ()>, Vec<Warning>), EmitError> {
    let kind = [EmitKind::Vllm, EmitKind::Sglang]
        .into_iter()
        .find(|k| k.engine() == Some(engine))
        .unwrap_or(EmitKind::Sglang);
    let plan = super::view::one_node_shape(job, kind)?;
    let warnings = losses(plan, engine)?;
    let lists = lists(plan, engine);
    Ok((job_view(job, origin, lists, |_, _| ()), warnings))
}

fn lists(plan: &Plan, engine: Engine) -> EngineLists {
    EngineLists {
        gpus: plan
            .ranks
            .iter()
            .map(|r| r.gpus[0].index.to_string())
            .collect(),
        nodes_list: plan.ranks.iter().map(|r| home(r).to_string()).collect(),
        cpus_list: plan.ranks.iter().map(|r| r.cpus.to_string()).collect(),
        shared_env: shared(plan)
            .into_iter()
            .map(|(name, value)| EnvVar { name, value })
            .collect(),
        nic_mapping: match engine {
            Engine::Vllm => nic_mapping(plan),
            _ => None,
        },
        nic_vars: vllm_nic_vars(),
        planned_nics: plan.ranks.iter().any(|r| !r.nics.is_empty()),
        uuids: plan
            .ranks
            .iter()
            .map(|r| r.gpus[0].uuid.clone())
            .collect::<Option<Vec<String>>>()
            .map(|u| u.join(",")),
        identity: (0..plan.machine.gpus)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// vLLM's `GPU_BUS_ID=NIC_BUS_ID,...` of the plan, where every rank's NIC is an RDMA NIC
/// whose PCI address the plan knows (a worker whose GPU the table lacks fails to start).
fn nic_mapping(plan: &Plan) -> Option<String> {
    let pairs: Option<Vec<String>> = plan
        .ranks
        .iter()
        .map(|r| {
            let nic = mapped_nic(r)?;
            Some(format!("{}={nic}", r.gpus.first()?.pci))
        })
        .collect();
    pairs.filter(|p| !p.is_empty()).map(|p| p.join(","))
}

/// The PCI address vLLM names a rank's NIC by: its first NIC's, where that is an RDMA verbs
/// device (InfiniBand, RoCE) of known address.
fn mapped_nic(r: &RankBinding) -> Option<PciAddr> {
    let nic = r.nics.first()?;
    nic.kind.filter(|k| k.is_verbs())?;
    nic.pci
}

/// A rank's home node: every rank with a GPU has one (a CPU-only rank spanning nodes has no
/// GPU, and is refused first).
fn home(r: &RankBinding) -> u32 {
    r.numa_node.map(|n| n.0).unwrap_or_default()
}

/// Whether `engine` can launch the plan at all: the spec names no other engine, and every rank
/// is one GPU worker.
fn launchable(plan: &Plan, engine: Engine) -> Result<(), EmitError> {
    same_engine(plan, engine)?;
    plan.ranks.iter().try_for_each(|r| one_gpu(r, engine))
}

/// A worker of vLLM and SGLang drives one GPU.
fn one_gpu(r: &RankBinding, engine: Engine) -> Result<(), EmitError> {
    match (r.gpus.len(), r.numa_node) {
        (1, Some(_)) => Ok(()),
        (gpus, _) => Err(EmitError::EngineRankGpus {
            engine: engine.title(),
            rank: r.local_rank,
            gpus,
        }),
    }
}

/// The variables every rank has with the same value, but those the launch sets itself.
fn shared(plan: &Plan) -> BTreeMap<String, String> {
    let Some(first) = plan.ranks.first() else {
        return BTreeMap::new();
    };
    first
        .env
        .iter()
        .filter(|(k, v)| {
            !set_by_the_launch(k) && plan.ranks.iter().all(|r| r.env.get(*k) == Some(v))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What the plan says that `engine`'s launch cannot, each a W0221 naming what the engine
/// does instead; first, a plan it cannot launch at all.
fn losses(plan: &Plan, engine: Engine) -> Result<Vec<Warning>, EmitError> {
    launchable(plan, engine)?;
    let mapped = engine == Engine::Vllm && nic_mapping(plan).is_some();
    let name = engine.title();
    let mut lost = Vec::new();
    let not_bound: Vec<String> = plan
        .ranks
        .iter()
        .filter(|r| {
            !(r.memory.policy == MemPolicy::Bind
                && r.memory.nodes == r.numa_node.into_iter().collect::<Vec<_>>())
        })
        .map(|r| format!("rank {} {}", r.local_rank, r.memory.numa_maps()))
        .collect();
    if !not_bound.is_empty() {
        lost.push(format!(
            "{name} binds each worker's memory to its node (`numactl --membind`), not as the \
             plan says ({}); say `memory: {{policy: bind}}` to plan what it does",
            not_bound.join(", ")
        ));
    }
    if engine == Engine::Sglang {
        lost.extend(sglang_cannot_say(plan));
    }
    if plan.ranks.iter().any(|r| !r.helpers.is_empty()) {
        lost.push(format!(
            "{name} runs each worker on all of its rank's CPUs: the helper cores \
             (`cpu.helpers`) are not set apart"
        ));
    }
    if plan
        .ranks
        .iter()
        .any(|r| r.openmp.as_ref().is_some_and(|o| !o.places.is_empty()))
    {
        lost.push(format!(
            "{name} starts its workers with one environment: each rank's OpenMP places \
             (`openmp:`) are not given to its worker"
        ));
    }
    // vLLM sets the NIC's variables in each worker itself from the mapping.
    let differing: Vec<String> = differing(plan)
        .into_iter()
        .filter(|k| !(mapped && [NCCL_IB_HCA, UCX_NET_DEVICES].contains(&k.as_str())))
        .collect();
    if mapped {
        lost.extend(prefix_names(plan));
    }
    if engine == Engine::Vllm && !mapped {
        lost.extend(unmapped_nics(plan));
    }
    if !differing.is_empty() {
        lost.push(format!(
            "{name} starts its workers with the server's environment, so a variable whose \
             value differs between ranks reaches none of them: {}",
            differing.join(", ")
        ));
    }
    if !plan.command.is_empty() {
        lost.push(format!(
            "the spec's `command` is not run: the script starts {name} itself and passes its \
             own arguments on to it"
        ));
    }
    Ok(lost
        .into_iter()
        .map(|m| Warning::new(codes::W0221_ENGINE_CANNOT_SAY, m))
        .collect())
}

/// What SGLang's own binding loses beside vLLM's: it binds a worker to all of its node's CPUs
/// within the server's, and relaxes a memory policy it cannot set.
fn sglang_cannot_say(plan: &Plan) -> Vec<String> {
    let mut lost = Vec::new();
    let mut by_node: BTreeMap<u32, Vec<&RankBinding>> = BTreeMap::new();
    for r in &plan.ranks {
        by_node.entry(home(r)).or_default().push(r);
    }
    let shared: Vec<String> = by_node
        .iter()
        .filter(|(_, ranks)| ranks.iter().any(|r| r.cpus != ranks[0].cpus))
        .map(|(node, ranks)| {
            let cpus: crate::cpuset::CpuSet = ranks.iter().map(|r| &r.cpus).collect();
            let names: Vec<String> = ranks.iter().map(|r| r.local_rank.to_string()).collect();
            format!("ranks {} share node {node}'s CPUs {cpus}", names.join(", "))
        })
        .collect();
    if !shared.is_empty() {
        lost.push(format!(
            "SGLang gives each worker all of its node's CPUs that the server may use, not its \
             rank's own: {}; plan one rank per NUMA node (or `cpu: {{policy: node}}`) to plan \
             what it does",
            shared.join("; ")
        ));
    }
    if plan
        .ranks
        .iter()
        .any(|r| r.memory.required && r.memory.policy != MemPolicy::None)
    {
        lost.push(
            "SGLang relaxes a memory policy the node refuses (`--membind`, then `--preferred`, \
             then none) and starts the worker anyway: the plan's required memory policy is not \
             kept there; say `memory: {required: false}` to plan what it does"
                .to_string(),
        );
    }
    lost
}

/// vLLM names a worker's NIC to NCCL without the `=` that makes NCCL take that name alone
/// (`NCCL_IB_HCA=mlx5_1` takes `mlx5_10` too): said where a rank's NIC's name begins another
/// NIC's of the machine (or, of a plan that does not list the machine's, another rank's).
fn prefix_names(plan: &Plan) -> Option<String> {
    let mut names: Vec<&str> = plan.machine_nics.iter().map(String::as_str).collect();
    names.extend(
        plan.ranks
            .iter()
            .flat_map(|r| &r.nics)
            .map(|n| n.name.as_str()),
    );
    names.sort();
    names.dedup();
    let mut also: Vec<String> = plan
        .ranks
        .iter()
        .filter_map(|r| r.nics.first())
        .flat_map(|nic| {
            let nic = nic.name.as_str();
            names
                .iter()
                .filter(move |other| **other != nic && other.starts_with(nic))
                .map(move |other| format!("{nic} also {other}"))
        })
        .collect();
    also.dedup();
    (!also.is_empty()).then(|| {
        format!(
            "vLLM names each worker's NIC to NCCL without the `=` that makes NCCL take that \
             name alone (`NCCL_IB_HCA=mlx5_1`, not `=mlx5_1`), so NCCL takes every NIC whose name \
             begins with it: {}",
            also.join(", ")
        )
    })
}

/// The ranks' NICs that vLLM cannot be told (no RDMA NIC with a PCI address in the plan),
/// where the plan gives NICs and vLLM gets no table.
fn unmapped_nics(plan: &Plan) -> Option<String> {
    let mut names: Vec<&str> = plan
        .ranks
        .iter()
        .filter(|r| mapped_nic(r).is_none())
        .filter_map(|r| r.nics.first())
        .map(|n| n.name.as_str())
        .collect();
    names.dedup();
    (!names.is_empty()).then(|| {
        format!(
            "vLLM names a worker's NIC by its PCI address (`VLLM_GPU_NIC_PCIE_MAPPING`), and \
             the topology gives none as an RDMA NIC's for {}: the workers are told no NIC",
            names.join(", ")
        )
    })
}

/// The variables whose value differs between ranks, but those the launch sets itself.
fn differing(plan: &Plan) -> Vec<String> {
    let shared = shared(plan);
    let mut names: Vec<String> = plan
        .ranks
        .iter()
        .flat_map(|r| r.env.keys())
        .filter(|k| !set_by_the_launch(k) && !shared.contains_key(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Refused where the spec names another engine than the one emitted for.
fn same_engine(plan: &Plan, engine: Engine) -> Result<(), EmitError> {
    match plan.engine {
        Some(e) if e != engine => Err(EmitError::OtherEngine {
            emitted: engine.word(),
            spec: e.word(),
        }),
        _ => Ok(()),
    }
}
