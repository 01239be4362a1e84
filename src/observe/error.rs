//! `ObserveError`: no process to verify, or ranks not bound as planned.

use super::matching::Skipped;
use super::watch::Change;

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("no running process matches `{pattern}`")]
    NoProcesses {
        pattern: String,
        /// The processes that matched but are no rank, and why.
        skipped: Vec<Skipped>,
    },
    #[error("`--pids` names process {pid}, which does not exist")]
    NoSuchProcess { pid: u32 },
    #[error("`--pids` names process {pid} twice")]
    PidTwice { pid: u32 },
    #[error("{mismatches} rank(s) are not bound as planned")]
    Verify { mismatches: usize },
    /// `exec --stop-on-drift`: a change a watch saw stayed a problem.
    #[error("{}; the ranks were stopped (`--stop-on-drift`)", change.text())]
    Drifted { change: Change },
}
