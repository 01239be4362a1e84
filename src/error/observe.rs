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
            .help("`--match` looks for NAME in the command lines of processes that say which rank they are (the mark NUMAPLAN_BOUND of exec and bind, numaplan.bind()'s mark file, or a launcher's variable); `--pids` names them"),
        ObserveError::NoSuchProcess { .. } => Diagnostic::error(E0440_NO_SUCH_PROCESS, message)
            .help("`ps` or `pgrep -f NAME` lists the ranks' pids; `--match NAME` finds them by their command line"),
        ObserveError::PidTwice { .. } => Diagnostic::error(E0423_USAGE, message)
            .help("name each rank's process once"),
        ObserveError::Verify { .. } => Diagnostic::error(E0416_VERIFY, message)
            .help("each rank's row (or its `problems`, in JSON) says what differs from the plan"),
        ObserveError::Drifted { .. } => Diagnostic::error(E0439_STOPPED_ON_DRIFT, message)
            .note("without `--stop-on-drift`, a change is a line of the watch and the job runs on")
            .help("`--repin` puts threads back on their rank's CPUs; see where the rank's memory is with `numaplan verify`"),
    }
}
