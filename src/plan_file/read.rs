//! Reading a plan file back: every entry checked and turned into the `Plan` it describes; a
//! problem is the key it is at and what is wrong there.

use super::format::{FORMAT_VERSION, OpenMpEntry, PlanFile, RankEntry, WarningEntry};
use crate::cpuset::CpuSet;
use crate::diag::Warning;
use crate::diag::codes::{W0200_PLAN_WARNING, warning_code};
use crate::ids::{GpuIndex, NodeId};
use crate::nic_kind::NicKind;
use crate::plan::place::Place;
use crate::plan::{
    MachineShape, MemoryBinding, OpenMpBinding, Plan, PlannedGpu, PlannedNic, RankBinding,
};
use crate::spec::validate::MAX_PER_NODE;
use crate::spec::{Engine, MemPolicy, Policy, ProcBind, SlurmSpec};
use crate::variables::{MASTER_PORT, OMP_NUM_THREADS, omp_threads};

pub(super) type Problem = (String, String);

/// A rank's `openmp:` entry; `at` names a key of it for errors.
fn openmp_binding(o: &OpenMpEntry, at: &dyn Fn(&str) -> String) -> Result<OpenMpBinding, Problem> {
    let bind = [
        ProcBind::Close,
        ProcBind::Spread,
        ProcBind::Master,
        ProcBind::None,
    ]
    .into_iter()
    .find(|b| b.name() == o.bind)
    .ok_or_else(|| (at("bind"), format!("unknown OMP_PROC_BIND `{}`", o.bind)))?;
    let places = o
        .places
        .iter()
        .enumerate()
        .map(|(k, text)| {
            text.parse::<CpuSet>().map_err(|e| {
                (
                    at(&format!("places[{k}]")),
                    format!("`{text}` is not a CPU list: {e}"),
                )
            })
        })
        .collect::<Result<Vec<_>, Problem>>()?;
    Ok(OpenMpBinding {
        places,
        bind,
        threads: o.threads,
    })
}

/// A CPU list of the plan file at `path`.
fn cpus(path: String, text: &str) -> Result<CpuSet, Problem> {
    text.parse::<CpuSet>()
        .map_err(|e| (path, format!("`{text}` is not a CPU list: {e}")))
}

/// A rank entry's GPUs, each with its PCI address and, where listed, its UUID.
fn planned_gpus(r: &RankEntry, at: &dyn Fn(&str) -> String) -> Result<Vec<PlannedGpu>, Problem> {
    r.gpus
        .iter()
        .enumerate()
        .map(|(j, &g)| {
            let pci = match r.gpu_pci.get(j) {
                Some(text) => text
                    .parse()
                    .map_err(|e: crate::pci_addr::PciAddrParseError| {
                        (at("gpu_pci"), e.to_string())
                    })?,
                None => {
                    return Err((at("gpu_pci"), "each GPU needs its PCI address".to_string()));
                }
            };
            Ok(PlannedGpu {
                index: GpuIndex(g),
                pci,
                uuid: r.gpu_uuid.get(j).cloned(),
            })
        })
        .collect::<Result<Vec<_>, Problem>>()
}

/// A rank entry's NICs, each with its kind and PCI address where listed (all or none).
fn planned_nics(r: &RankEntry, at: &dyn Fn(&str) -> String) -> Result<Vec<PlannedNic>, Problem> {
    for (key, len) in [("nic_kind", r.nic_kind.len()), ("nic_pci", r.nic_pci.len())] {
        if len != 0 && len != r.nics.len() {
            return Err((at(key), format!("`{key}` and `nics` differ in length")));
        }
    }
    r.nics
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let kind = match r.nic_kind.get(j) {
                None => None,
                Some(word) => Some(NicKind::named(word).ok_or_else(|| {
                    (
                        at(&format!("nic_kind[{j}]")),
                        format!("unknown NIC kind `{word}`"),
                    )
                })?),
            };
            let pci = match r.nic_pci.get(j) {
                None => None,
                Some(text) => Some(text.parse().map_err(
                    |e: crate::pci_addr::PciAddrParseError| {
                        (at(&format!("nic_pci[{j}]")), e.to_string())
                    },
                )?),
            };
            Ok(PlannedNic {
                name: name.clone(),
                kind,
                pci,
            })
        })
        .collect()
}

/// The `i`-th rank entry as a `RankBinding`; its `rank` is `first_rank` + its local rank (the
/// first node's ranks: of the job, or of a group whose first global rank is `first_rank`).
fn rank_from_entry(i: usize, r: &RankEntry, first_rank: u64) -> Result<RankBinding, Problem> {
    let at = |key: &str| format!("ranks[{i}].{key}");
    if u64::from(r.rank) != first_rank + u64::from(r.local_rank) {
        let whose = match first_rank {
            0 => "whose ranks are their local ranks".to_string(),
            n => format!("whose ranks are {n} + their local ranks (the group's `first_rank`)"),
        };
        return Err((
            at("rank"),
            format!(
                "rank {} is listed with local_rank {}: the plan lists the first node's ranks, \
                 {whose}",
                r.rank, r.local_rank
            ),
        ));
    }
    if r.gpu_pci.len() != r.gpus.len() && !r.gpu_pci.is_empty() {
        return Err((
            at("gpu_pci"),
            "`gpu_pci` and `gpus` differ in length".into(),
        ));
    }
    if r.gpu_uuid.len() != r.gpus.len() && !r.gpu_uuid.is_empty() {
        return Err((
            at("gpu_uuid"),
            "`gpu_uuid` and `gpus` differ in length".into(),
        ));
    }
    let gpus = planned_gpus(r, &at)?;
    let nics = planned_nics(r, &at)?;
    let mem_policy = MemPolicy::ALL
        .into_iter()
        .find(|p| p.name() == r.memory.policy)
        .ok_or_else(|| {
            (
                at("memory.policy"),
                format!("unknown memory policy `{}`", r.memory.policy),
            )
        })?;
    let mem_nodes = cpus(at("memory.nodes"), &r.memory.nodes)?;
    let rank_cpus = cpus(at("cpus"), &r.cpus)?;
    Ok(RankBinding {
        local_rank: r.local_rank,
        gpus,
        numa_node: r.numa_node.map(NodeId),
        // The file says it as the variable; a value that is no count, as its CPUs.
        threads: r
            .env
            .get(OMP_NUM_THREADS)
            .and_then(|v| omp_threads(v))
            .unwrap_or(rank_cpus.len() as u32),
        cpus: rank_cpus,
        cores: r.cores,
        memory: MemoryBinding {
            policy: mem_policy,
            nodes: mem_nodes.iter().map(NodeId).collect(),
            required: r.memory.required.unwrap_or(true) || mem_policy == MemPolicy::None,
        },
        nics,
        env: r.env.clone(),
        helpers: match &r.helpers {
            Some(text) => cpus(at("helpers"), text)?,
            None => CpuSet::new(),
        },
        openmp: r
            .openmp
            .as_ref()
            .map(|o| openmp_binding(o, &|k: &str| at(&format!("openmp.{k}"))))
            .transpose()?,
    })
}

fn warning_from_entry(i: usize, entry: &WarningEntry) -> Result<Warning, Problem> {
    match entry {
        WarningEntry::Coded { code, message } => warning_code(code)
            .map(|code| Warning::new(code, message.clone()))
            .map_err(|e| (format!("warnings[{i}].code"), e)),
        WarningEntry::Plain(message) => Ok(Warning::new(W0200_PLAN_WARNING, message.clone())),
    }
}

/// Every count of a plan file within what a machine can have, before anything is sized by one:
/// a plan is input, and a count of 2^64 GPUs would otherwise size the lists that number them.
/// A machine has at most `MAX_CPU` CPUs, and as many NUMA nodes and GPUs; a job numbers its
/// ranks in a `u32` (`WORLD_SIZE`), as a job spec's validation says.
fn counts_bounded(f: &PlanFile) -> Result<(), Problem> {
    let machine = [
        ("topology.cpus", f.topology.cpus, "CPUs"),
        ("topology.numa_nodes", f.topology.numa_nodes, "NUMA nodes"),
        ("topology.gpus", f.topology.gpus, "GPUs"),
        (
            "ranks_per_node",
            f.ranks_per_node as usize,
            "ranks on a node",
        ),
    ];
    for (key, count, what) in machine {
        if count > MAX_PER_NODE as usize {
            return Err((
                key.into(),
                format!("{count} {what}: more than the {MAX_PER_NODE} a machine can have"),
            ));
        }
    }
    let world = u64::from(f.nodes) * u64::from(f.ranks_per_node);
    if f.nodes == 0 || world > u64::from(u32::MAX) {
        return Err((
            "nodes".into(),
            format!(
                "{} node(s) of {} ranks: a job has at least one node, and at most {} ranks",
                f.nodes,
                f.ranks_per_node,
                u32::MAX
            ),
        ));
    }
    Ok(())
}

/// A plan file's plan; of a group of a plan of several groups, `place` is its place (`None`:
/// a plan of one group, the whole job).
/// The plan's policy and engine, read by their names.
fn policy_and_engine(f: &PlanFile) -> Result<(Policy, Option<Engine>), Problem> {
    let policy = Policy::named(&f.policy).ok_or_else(|| {
        (
            "policy".to_string(),
            format!("unknown policy `{}`", f.policy),
        )
    })?;
    let engine = match f.engine.as_deref() {
        None => None,
        Some(word) => Some(Engine::from_word(word).ok_or_else(|| {
            (
                "engine".to_string(),
                format!("unknown engine `{word}` (`vllm`, `sglang` or `trtllm`)"),
            )
        })?),
    };
    Ok((policy, engine))
}

pub(super) fn from_file(f: &PlanFile, place: Option<Place>) -> Result<Plan, Problem> {
    if f.numaplan_plan != FORMAT_VERSION {
        return Err((
            "numaplan_plan".into(),
            format!(
                "plan format version {} is not {FORMAT_VERSION}, the one this numaplan reads",
                f.numaplan_plan
            ),
        ));
    }
    counts_bounded(f)?;
    let place = place.unwrap_or_else(|| Place::whole_job(f.nodes, f.ranks_per_node));
    let first_rank = place.first_rank;
    let (policy, engine) = policy_and_engine(f)?;
    let reserved = cpus("reserved_cpus".into(), &f.reserved_cpus)?;
    let excluded = cpus("excluded_cpus".into(), &f.excluded_cpus)?;
    let ranks = f
        .ranks
        .iter()
        .enumerate()
        .map(|(i, r)| rank_from_entry(i, r, first_rank))
        .collect::<Result<Vec<_>, Problem>>()?;
    let port = ranks
        .first()
        .and_then(|r| r.env.get(MASTER_PORT))
        .and_then(|p| p.parse().ok())
        .unwrap_or(crate::spec::validate::DEFAULT_PORT);
    let plan = Plan {
        name: f.name.clone(),
        command: f.command.clone(),
        topology: f.topology.name.clone(),
        machine: MachineShape {
            cpus: f.topology.cpus,
            numa_nodes: f.topology.numa_nodes,
            gpus: f.topology.gpus,
        },
        machine_nics: f.topology.nics.clone(),
        policy,
        nodes: f.nodes,
        ranks_per_node: f.ranks_per_node,
        ranks,
        reserved,
        excluded,
        warnings: f
            .warnings
            .iter()
            .enumerate()
            .map(|(i, w)| warning_from_entry(i, w))
            .collect::<Result<_, Problem>>()?,
        allowed_warnings: f
            .allow_warnings
            .iter()
            .enumerate()
            .map(|(i, c)| warning_code(c).map_err(|e| (format!("allow_warnings[{i}]"), e)))
            .collect::<Result<_, Problem>>()?,
        port,
        slurm: SlurmSpec::default(),
        flux: Default::default(),
        mpirun: Default::default(),
        kubernetes: Default::default(),
        engine,
        place,
    };
    let allowed: CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
    plan.check(&allowed)?;
    Ok(plan)
}
