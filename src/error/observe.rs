//! How `verify`'s failures read: no process to verify, ranks not bound as planned.

use crate::diag::Diagnostic;
use crate::diag::codes::*;
use crate::observe::ObserveError;

pub(super) fn observe(e: &ObserveError) -> Diagnostic {
    let message = e.to_string();
    match e {
        ObserveError::NoProcesses { skipped, .. } => skipped
            .iter()
            .fold(Diagnostic::error(E0417_NO_PROCESSES, message), |d, s| {
                d.note(s.to_string())
            })
            .help("`--match` looks for NAME in the command lines of processes that say which rank they are (the mark NUMAPLAN_BOUND of exec and bind, numaplan.bind()'s mark file, or a launcher's variable, or a serving engine's worker title such as VLLM::Worker_TP1); `--pids` names them"),
        ObserveError::NoSuchProcess { .. } => Diagnostic::error(E0440_NO_SUCH_PROCESS, message)
            .help("`ps` or `pgrep -f NAME` lists the ranks' pids; `--match NAME` finds them by their command line"),
        ObserveError::KernelThread { .. } => Diagnostic::error(E0440_NO_SUCH_PROCESS, message)
            .help("name the rank's own process: `pgrep -f NAME` lists them"),
        ObserveError::RankUnknown { .. } => Diagnostic::error(E0449_RANK_UNKNOWN, message)
            .note("nothing was checked: taking it for any rank would report a correctly bound process as a mismatch")
            .help("say which rank it is: `--local-rank N`, or `--local-rank gpu`: the rank of the GPUs it sees (in Python, of the GPU it drives)"),
        ObserveError::RankPastPlan { .. } => Diagnostic::error(E0433_LOCAL_RANK_PAST_PLAN, message)
            .help("name one of the plan's local ranks (0 to its ranks per node - 1)"),
        ObserveError::PidTwice { .. } => Diagnostic::error(E0423_USAGE, message)
            .help("name each rank's process once"),
        ObserveError::Unknown { .. } => Diagnostic::error(E0450_VERIFY_UNKNOWN, message)
            .note("what could not be read is unknown: neither bound as planned nor a mismatch")
            .help("run verify as the ranks' user or as root, where the kernel lets it read /proc/PID/numa_maps (in a container: CAP_SYS_PTRACE)"),
        ObserveError::Verify { .. } => Diagnostic::error(E0416_VERIFY, message)
            .help("each rank's row (or its `problems`, in JSON) says what differs from the plan"),
        ObserveError::Drifted { .. } => Diagnostic::error(E0439_STOPPED_ON_DRIFT, message)
            .note("without `--stop-on-drift`, a change is a line of the watch and the job runs on")
            .help("`--repin` puts threads back on their rank's CPUs; see where the rank's memory is with `numaplan verify`"),
    }
}
