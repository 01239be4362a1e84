//! What a per-rank trampoline (`numaplan bind`) learns from the launcher that started it: its
//! local rank (`local_rank.rs`) checked against the plan and the launcher's sizes, the global
//! numbering to fill in where the launcher sets none, and the warnings of running here. Pure:
//! the environment comes in as a map.

use std::collections::BTreeMap;

use super::ExecError;
use super::hostlist;
use super::visible::VISIBILITY;
use crate::diag::Warning;
use crate::diag::codes::W0214_GPUS_RENUMBERED;
use crate::plan::{Plan, RankBinding};

pub use super::local_rank::{
    LocalRank, LocalRankChoice, NUMAPLAN_LOCAL_RANK, local_rank, local_rank_variables,
};

/// Environment variables by name.
pub type Env = BTreeMap<String, String>;

/// The variables that give the job's size, torchrun's first.
const WORLD_SIZE: [&str; 5] = [
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "FLUX_JOB_SIZE",
    "SLURM_NTASKS",
];

/// Checks the local rank, the launcher's local size and the job's size (nodes x ranks per node)
/// against the plan; returns the rank's binding. A worker chosen by its GPUs (`by_gpu`) is no
/// launcher's rank: the launchers' sizes are not its job's.
pub fn rank_of<'p>(
    plan: &'p Plan,
    local: &LocalRank,
    env: &Env,
) -> Result<&'p RankBinding, ExecError> {
    // The local size first: where it differs, it is what to change (a world size that differs
    // too follows from it).
    if let Some((n, var)) = &local.size
        && *n != plan.ranks_per_node
    {
        return Err(ExecError::LocalSizeMismatch {
            var: var.clone(),
            launcher: *n,
            plan: plan.ranks_per_node,
        });
    }
    if let Some((var, value)) = WORLD_SIZE
        .iter()
        .filter(|_| !local.by_gpu)
        .find_map(|v| Some((*v, env.get(*v).filter(|x| !x.is_empty())?)))
    {
        let size: u64 = value
            .trim()
            .parse()
            .map_err(|_| ExecError::LauncherVariable {
                var: var.into(),
                value: value.clone(),
            })?;
        let planned = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
        if size != planned {
            return Err(ExecError::WorldSizeMismatch {
                var: var.into(),
                launcher: size,
                nodes: plan.nodes,
                ranks_per_node: plan.ranks_per_node,
            });
        }
    }
    plan.ranks
        .get(local.rank as usize)
        .ok_or_else(|| ExecError::LocalRankPastPlan {
            rank: local.rank,
            via: local.via.clone(),
            ranks: plan.ranks.len() as u32,
        })
}

/// torchrun's numbering, which a launcher sets (torchrun itself) or `bind` fills in.
const NUMBERING: [&str; 8] = [
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
];

/// The variables `bind` sets for a rank: the plan's NIC, visibility, OpenMP and user variables
/// always (but not the visibility of a worker chosen by its GPUs: its own already names them);
/// torchrun's numbering only where the environment has none, from the launcher's global
/// variables (Open MPI, MPICH/PMI, PALS, Flux, Slurm), else from the plan.
pub fn rank_environment(
    plan: &Plan,
    rank: &RankBinding,
    local: &LocalRank,
    env: &Env,
) -> BTreeMap<String, String> {
    let first = |vars: &[&str]| {
        vars.iter()
            .find_map(|v| env.get(*v).filter(|x| !x.is_empty()).cloned())
    };
    let rpn = plan.ranks_per_node;
    let global = first(&[
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PALS_RANKID",
        "FLUX_TASK_RANK",
        "SLURM_PROCID",
    ]);
    let node = first(&["SLURM_NODEID", "PALS_NODEID"]).or_else(|| {
        let g: u32 = global.as_ref()?.parse().ok()?;
        Some((g / rpn.max(1)).to_string())
    });
    let filled: BTreeMap<&str, Option<String>> = BTreeMap::from([
        ("RANK", global.clone()),
        ("WORLD_SIZE", first(&WORLD_SIZE[1..])),
        ("LOCAL_RANK", Some(local.rank.to_string())),
        (
            "LOCAL_WORLD_SIZE",
            Some(local.size.as_ref().map_or(rpn, |(n, _)| *n).to_string()),
        ),
        ("GROUP_RANK", node.clone()),
        ("NODE_RANK", node),
        (
            "MASTER_ADDR",
            env.get("SLURM_JOB_NODELIST")
                .and_then(|l| hostlist::first_host(l)),
        ),
        ("MASTER_PORT", None),
    ]);
    let mut out = BTreeMap::new();
    // Which rank it is, for `verify --match` and a nested `numaplan bind`.
    out.insert(NUMAPLAN_LOCAL_RANK.to_string(), rank.local_rank.to_string());
    for (k, v) in &rank.env {
        let keeps_own = local.by_gpu && VISIBILITY.contains(&k.as_str());
        if !NUMBERING.contains(&k.as_str()) && !keeps_own {
            out.insert(k.clone(), v.clone());
        }
    }
    for var in NUMBERING {
        if env.get(var).is_some_and(|v| !v.is_empty()) {
            continue; // the launcher's own numbering stays
        }
        let value = filled
            .get(var)
            .cloned()
            .flatten()
            .or_else(|| rank.env.get(var).cloned());
        if let Some(v) = value {
            out.insert(var.to_string(), v);
        }
    }
    out
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
