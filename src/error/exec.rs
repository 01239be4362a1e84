//! How `exec` and `bind` failures read: a node that is not the plan's, a rank that failed,
//! a launcher whose world differs from the plan's.

use crate::diag::Diagnostic;
use crate::diag::codes::*;
use crate::exec::error::Input;
use crate::exec::{ExecError, NodeMismatch};

pub(super) fn exec(e: &ExecError) -> Diagnostic {
    let message = e.to_string();
    match e {
        ExecError::NoCommand { input: Input::Given } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("add the program each rank runs to the job spec, e.g. `command: [python, train.py]`, or give it after `--`"),
        ExecError::NoCommand { input: Input::None } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("give the program each rank runs after `--`, e.g. `numaplan exec --nproc-per-node 2 -- python train.py`"),
        ExecError::NodeCount { .. } | ExecError::NodeRank { .. } | ExecError::NoNodePlace { .. } => {
            Diagnostic::error(E0410_NODE_PLACE, message).help(
                "run one `numaplan exec` per node under Slurm (`srun --ntasks-per-node=1`), or pass `--node-rank K --nodes N --master-addr HOST`",
            )
        }
        ExecError::NotThisNode { why, .. } => Diagnostic::error(E0411_NOT_THIS_NODE, message)
            .note("nothing was started")
            .help(match why {
                NodeMismatch::Shape => "compile the plan for this machine (`numaplan topo` shows it) or run it where it was made for; `--force` starts despite a different CPU, NUMA node or GPU count",
                NodeMismatch::CpusAbsent | NodeMismatch::MemoryNode => "this is another machine's plan: compile the job for this machine (`numaplan compile job.yaml` discovers it), or run the plan where it was made for",
                NodeMismatch::CpusNotAllowed => "run with those CPUs allowed (a wider taskset or cgroup, `srun --cpu-bind=none`, `mpirun --bind-to none`), or compile the job inside this allocation: discovery plans within this process's affinity",
            }),
        ExecError::Bind { .. } => Diagnostic::error(E0412_BIND, message)
            .note("no rank was left running")
            .help("check the plan's CPUs and memory nodes against `numaplan topo` on this node"),
        ExecError::Spawn { .. } | ExecError::LogDir { .. } | ExecError::Syscall { .. } => {
            Diagnostic::error(E0413_SPAWN, message).note("no rank was left running")
        }
        ExecError::RankFailed { .. } => Diagnostic::error(E0414_RANK_FAILED, message)
            .note("the other ranks were stopped (TERM, then KILL after the grace period)")
            .help("the rank's own output above says why"),
        ExecError::Interrupted { .. } => Diagnostic::error(E0415_INTERRUPTED, message)
            .note("the signal was forwarded to every rank's process group"),
        ExecError::NoProcesses { skipped, .. } => skipped
            .iter()
            .fold(Diagnostic::error(E0417_NO_PROCESSES, message), |d, line| {
                d.note(line.trim_end().to_string())
            })
            .help("`--match` looks for NAME in the command lines of processes that say which local rank they are (NUMAPLAN_LOCAL_RANK, set by exec and bind, or a launcher's variable); `--pids` names them"),
        ExecError::Verify { .. } => Diagnostic::error(E0416_VERIFY, message)
            .help("the table above shows planned and actual bindings per rank"),
        ExecError::NoLocalRank { looked } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note(format!("looked for {looked}"))
            .help("run under a launcher (torchrun, srun, mpirun), or pass `--local-rank N`"),
        ExecError::LocalRankDisagree { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("pass `--local-rank N`, or unset the variable of the launcher that does not start this process"),
        ExecError::TorchrunLocalRank { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note("under `torchrun --virtual-local-rank` every worker has LOCAL_RANK=0 and sees one GPU (CUDA_VISIBLE_DEVICES), which tells numaplan to take the rank RANK gives; here nothing says which is right")
            .help("run under torchrun as it sets them (a wrapper changed one), or pass `--local-rank N`"),
        ExecError::LauncherVariable { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("unset the variable, or pass `--local-rank N`"),
        ExecError::LocalRankPastSize { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note("a launcher numbers its local ranks from 0 to the local size less one")
            .help("fix the launcher's variables (a wrapper that sets them by hand), or pass `--local-rank N`"),
        ExecError::LocalRankValue { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("set it to this process's local rank, or to `gpu` for the rank whose GPUs it sees"),
        ExecError::NoGpuVisible { .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .help("start the worker with its GPU visible (Ray's `num_gpus`, `CUDA_VISIBLE_DEVICES`), or pass `--local-rank N`"),
        ExecError::VisibleGpuUnknown { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("make one rank's GPUs visible to the worker, by index or UUID, or pass `--local-rank N`"),
        ExecError::NoRankForGpus { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("make each worker see exactly one rank's GPUs (one worker per GPU for one GPU per rank), or pass `--local-rank N`"),
        ExecError::RanksShareGpus { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("give each rank its own GPUs in the job spec, or pass `--local-rank N` to say which rank this is"),
        ExecError::LocalRankPastPlan { ranks, .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help(format!("start {ranks} ranks per node, as the plan has, or recompile the plan for more")),
        ExecError::LocalSizeMismatch { launcher, plan, .. } => Diagnostic::error(E0420_LOCAL_SIZE, message)
            .help(format!("start the launcher with {plan} ranks per node (`--nproc-per-node {plan}`, `--ntasks-per-node={plan}`), or recompile the plan with `--set ranks_per_node={launcher}`")),
        ExecError::WorldSizeMismatch { launcher, nodes, ranks_per_node, .. } => Diagnostic::error(E0420_LOCAL_SIZE, message)
            .help(world_size_help(*launcher, *nodes, *ranks_per_node)),
        ExecError::BindExec { .. } => Diagnostic::error(E0413_SPAWN, message)
            .note("the binding was applied; the program could not replace numaplan"),
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
