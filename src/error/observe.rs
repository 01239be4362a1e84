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
            .help("the table above shows planned and actual bindings per rank"),
    }
}
