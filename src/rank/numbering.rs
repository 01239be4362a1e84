//! A rank's place in the launcher's job: its local rank checked against the plan and the
//! launcher's local and world sizes (`rank_of`), and torchrun's numbering filled in where the
//! launcher sets none (`rank_environment`).

use std::collections::BTreeMap;

use super::{Env, LocalRank, RankError, hostlist};
use crate::diag::Warning;
use crate::diag::codes::W0216_NUMBERING_UNKNOWN;
use crate::ids::Mark;
use crate::plan::{Plan, RankBinding, environment};
use crate::variables::{
    GLOBAL_RANK, GROUP_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NODE_ID,
    NODE_RANK, RANK, TORCHRUN_NUMBERING, VISIBILITY, WORLD_SIZE, WORLD_SIZES,
};

/// Checks the local rank, the launcher's local size and the job's size (nodes x ranks per node)
/// against the plan; returns the rank's binding. A worker chosen by its GPUs (`by_gpu`) is no
/// launcher's rank: the launchers' sizes are not its job's.
pub fn rank_of<'p>(
    plan: &'p Plan,
    local: &LocalRank,
    env: &Env,
) -> Result<&'p RankBinding, RankError> {
    // The local size first: where it differs, it is what to change (a world size that differs
    // too follows from it).
    if let Some((n, var)) = &local.size
        && *n != plan.ranks_per_node
    {
        return Err(RankError::LocalSizeMismatch {
            var: var.clone(),
            launcher: *n,
            plan: plan.ranks_per_node,
        });
    }
    if let Some((var, value)) = WORLD_SIZES
        .iter()
        .filter(|_| !local.by_gpu)
        .find_map(|v| Some((*v, env.get(*v).filter(|x| !x.is_empty())?)))
    {
        let size: u64 = value
            .trim()
            .parse()
            .map_err(|_| RankError::LauncherVariable {
                var: var.into(),
                value: value.clone(),
            })?;
        if size != plan.world_size() {
            return Err(RankError::WorldSizeMismatch {
                var: var.into(),
                launcher: size,
                nodes: plan.nodes,
                ranks_per_node: plan.ranks_per_node,
                groups: plan.group().map(|_| plan.world_size()),
            });
        }
    }
    plan.ranks
        .get(local.rank as usize)
        .ok_or_else(|| RankError::LocalRankPastPlan {
            rank: local.rank,
            via: local.via.clone(),
            ranks: plan.ranks.len() as u32,
        })
}

/// The variables `bind` sets for a rank: the plan's NIC, visibility, OpenMP and user variables
/// always (but not the visibility of a worker chosen by its GPUs: its own already names them);
/// torchrun's numbering only where the environment has none, from the launcher's global
/// variables (Open MPI, MPICH/PMI, PALS, Flux, Slurm), else from the plan.
pub fn rank_environment(
    plan: &Plan,
    mark: &Mark,
    rank: &RankBinding,
    local: &LocalRank,
    env: &Env,
) -> BTreeMap<String, String> {
    let first = |vars: &[&str]| {
        vars.iter()
            .find_map(|v| env.get(*v).filter(|x| !x.is_empty()).cloned())
    };
    let rpn = plan.ranks_per_node;
    let global = first(&GLOBAL_RANK);
    let node = first(&NODE_ID).or_else(|| {
        // Of a group: its node within the group, after the nodes of the groups before it.
        let g: u64 = global.as_ref()?.parse().ok()?;
        let first = plan.global_rank(0, 0);
        let within = g.checked_sub(first)? / u64::from(rpn.max(1));
        Some(plan.global_node(0).saturating_add(within).to_string())
    });
    let filled: BTreeMap<&str, Option<String>> = BTreeMap::from([
        (RANK, global.clone()),
        (WORLD_SIZE, first(&WORLD_SIZES[1..])),
        (LOCAL_RANK, Some(local.rank.to_string())),
        (
            LOCAL_WORLD_SIZE,
            Some(local.size.as_ref().map_or(rpn, |(n, _)| *n).to_string()),
        ),
        (GROUP_RANK, node.clone()),
        (NODE_RANK, node),
        // A heterogeneous job meets at its first component's first node; the step's node list
        // is sorted by name, not by component.
        (
            MASTER_ADDR,
            ["SLURM_JOB_NODELIST_HET_GROUP_0", "SLURM_JOB_NODELIST"]
                .iter()
                .find_map(|v| hostlist::first_host(env.get(*v)?)),
        ),
        (MASTER_PORT, None),
    ]);
    let mut out: BTreeMap<String, String> = environment::marks(plan, mark).into_iter().collect();
    for (k, v) in &rank.env {
        let keeps_own = local.by_gpu && VISIBILITY.contains(&k.as_str());
        if !TORCHRUN_NUMBERING.contains(&k.as_str()) && !keeps_own {
            out.insert(k.clone(), v.clone());
        }
    }
    for var in TORCHRUN_NUMBERING {
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

/// A rank of a multi-node plan whose launcher says neither its global rank, its node nor where
/// rank 0 is (a worker that Ray or a server started, bound by `--local-rank gpu`): the plan's
/// `WORLD_SIZE` is set, and nothing can say the rest (W0216), where a silent half would make
/// `torch.distributed` wait or fail. `set`: what `rank_environment` sets.
pub fn unknown_numbering(
    plan: &Plan,
    local: &LocalRank,
    set: &BTreeMap<String, String>,
    env: &Env,
) -> Option<Warning> {
    if plan.world_nodes() < 2 {
        return None;
    }
    let known = |var: &str| set.contains_key(var) || env.get(var).is_some_and(|v| !v.is_empty());
    let missing: Vec<&str> = [RANK, NODE_RANK, MASTER_ADDR]
        .into_iter()
        .filter(|v| !known(v))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let world = plan.world_size();
    Some(Warning::new(
        W0216_NUMBERING_UNKNOWN,
        format!(
            "local rank {} of a {}-node plan: nothing says its {} (no launcher variable; \
             WORLD_SIZE={world} comes from the plan): set {} in its environment, or start it \
             under a launcher that does (torchrun, srun, mpirun)",
            local.rank,
            plan.world_nodes(),
            crate::phrase::and_list(&missing),
            missing.join(", "),
        ),
    ))
}
