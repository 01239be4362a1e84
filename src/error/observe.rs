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
            .help("`--match` looks for NAME in the command lines of processes that say which local rank they are (NUMAPLAN_LOCAL_RANK, set by exec and bind, or a launcher's variable); `--pids` names them"),
        ObserveError::Verify { .. } => Diagnostic::error(E0416_VERIFY, message)
            .help("each rank's row (or its `problems`, in JSON) says what differs from the plan"),
        ObserveError::Drifted { .. } => Diagnostic::error(E0439_STOPPED_ON_DRIFT, message)
            .note("without `--stop-on-drift`, a change is a line of the watch and the job runs on")
            .help("`--repin` puts threads back on their rank's CPUs; see where the rank's memory is with `numaplan verify`"),
    }
}
