//! How `bind`'s rank errors read: no or disagreeing local ranks, a launcher whose world differs
//! from the plan's, a worker whose visible GPUs name no rank.

use crate::diag::Diagnostic;
use crate::diag::codes::*;
use crate::rank::RankError;
use crate::rank::error::ranks_text;
use crate::rank::group::groups_text;

pub(super) fn rank(e: &RankError) -> Diagnostic {
    let message = e.to_string();
    match e {
        RankError::NoLocalRank { looked } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note(format!("looked for {}", looked.join(", ")))
            .help("run under a launcher (torchrun, srun, mpirun), or pass `--local-rank N`"),
        RankError::LocalRankDisagree { .. } => Diagnostic::error(E0428_LOCAL_RANKS_DISAGREE, message)
            .help("unset the variable that is wrong (a NUMAPLAN_LOCAL_RANK exported by an outer job, a launcher's that does not start this process), or pass `--local-rank N`"),
        RankError::TorchrunLocalRank { .. } => Diagnostic::error(E0429_TORCHRUN_VARIABLES, message)
            .note("under `torchrun --virtual-local-rank` every worker has LOCAL_RANK=0 and sees one GPU (CUDA_VISIBLE_DEVICES), which tells numaplan to take the rank RANK gives; here nothing says which is right")
            .help("run under torchrun as it sets them (a wrapper changed one), or pass `--local-rank N`"),
        RankError::LauncherVariable { .. } => Diagnostic::error(E0430_NOT_A_COUNT, message)
            .help("unset the variable, or pass `--local-rank N`"),
        RankError::LocalRankPastSize { .. } => Diagnostic::error(E0431_LOCAL_RANK_PAST_SIZE, message)
            .note("a launcher numbers its local ranks from 0 to the local size less one")
            .help("fix the launcher's variables (a wrapper that sets them by hand), or pass `--local-rank N`"),
        RankError::LocalRankValue { .. } => Diagnostic::error(E0432_LOCAL_RANK_VALUE, message)
            .help("set it to this process's local rank, or to `gpu` for the rank whose GPUs it sees"),
        RankError::NoGpuVisible { .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .help("start the worker with its GPU visible (Ray's `num_gpus`, `CUDA_VISIBLE_DEVICES`), or pass `--local-rank N`"),
        RankError::VisibleGpuUnknown { ranks, .. } => Diagnostic::error(E0435_VISIBLE_GPU_UNKNOWN, message)
            .note(format!("the plan's ranks: {}", ranks_text(ranks)))
            .help("make one rank's GPUs visible to the worker, by index or UUID, or pass `--local-rank N`"),
        RankError::NoRankForGpus { ranks, .. } => Diagnostic::error(E0436_NO_RANK_FOR_GPUS, message)
            .note(format!("the plan's ranks: {}", ranks_text(ranks)))
            .help("make each worker see exactly one rank's GPUs (one worker per GPU for one GPU per rank), or pass `--local-rank N`"),
        RankError::RanksShareGpus { ranks, .. } => Diagnostic::error(E0437_RANKS_SHARE_GPUS, message)
            .note(format!("the plan's ranks: {}", ranks_text(ranks)))
            .help("give each rank its own GPUs in the job spec, or pass `--local-rank N` to say which rank this is"),
        RankError::LocalRankPastPlan { ranks, .. } => Diagnostic::error(E0433_LOCAL_RANK_PAST_PLAN, message)
            .help(format!("start {ranks} ranks per node, as the plan has, or recompile the plan for more")),
        RankError::LocalSizeMismatch { launcher, plan, .. } => Diagnostic::error(E0420_LOCAL_SIZE, message)
            .help(format!("start the launcher with {plan} ranks per node (`--nproc-per-node {plan}`, `--ntasks-per-node={plan}`), or recompile the plan with `--set ranks_per_node={launcher}`")),
        RankError::GroupUnknown { groups, .. } if groups.is_empty() => Diagnostic::error(E0442_GROUP_UNKNOWN, message)
            .note("the plan is of one group: it has no `groups:`")
            .help("drop `--group` (and NUMAPLAN_GROUP), or give the plan of several groups"),
        RankError::GroupUnknown { groups, .. } => Diagnostic::error(E0442_GROUP_UNKNOWN, message)
            .note(format!("the plan's groups: {}", groups_text(groups)))
            .help("name one of them (`--group NAME`, NUMAPLAN_GROUP)"),
        RankError::GroupNotFound { groups, .. } => Diagnostic::error(E0443_GROUP_NOT_FOUND, message)
            .note(format!("the plan's groups: {}", groups_text(groups)))
            .note("no `--group`, no NUMAPLAN_GROUP, and no heterogeneous Slurm component holds this host")
            .help("say which group this node runs: `--group NAME` (or NUMAPLAN_GROUP=NAME)"),
        RankError::GroupComponents { groups, .. } => Diagnostic::error(E0444_GROUP_COMPONENTS, message)
            .note(format!("the plan's groups: {}", groups_text(groups)))
            .help("submit the plan's own batch file (`numaplan compile --emit sbatch`), whose components are its groups in order, or pass `--group NAME`"),
        RankError::WorldSizeMismatch { groups: Some(world), .. } => Diagnostic::error(E0434_WORLD_SIZE, message)
            .help(format!("start every group's ranks in one job of {world} ranks (the plan's own scripts: `numaplan compile --emit`)")),
        RankError::WorldSizeMismatch { launcher, nodes, ranks_per_node, .. } => Diagnostic::error(E0434_WORLD_SIZE, message)
            .help(world_size_help(*launcher, *nodes, *ranks_per_node)),
    }
}

/// What to do when the launcher's world size is not the plan's: start the plan's count, or
/// recompile for the launcher's, by the node count or the ranks per node that give it (never a
/// value the plan already has, never zero).
fn world_size_help(launcher: u64, nodes: u32, ranks_per_node: u32) -> String {
    let planned = u64::from(nodes) * u64::from(ranks_per_node);
    let fits = |total: u64, by: u32| {
        (by > 0 && total > 0 && total % u64::from(by) == 0).then(|| total / u64::from(by))
    };
    let recompile = match (fits(launcher, ranks_per_node), fits(launcher, nodes)) {
        (Some(n), _) if n != u64::from(nodes) => {
            format!(", or recompile the plan for the job with `--set nodes={n}`")
        }
        (_, Some(r)) if r != u64::from(ranks_per_node) => {
            format!(", or recompile the plan for the job with `--set ranks_per_node={r}`")
        }
        _ => String::new(),
    };
    format!("start {planned} ranks in all ({nodes} x {ranks_per_node}), as the plan has{recompile}")
}
