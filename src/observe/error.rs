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
    #[error("`{flag}` names process {pid}, which does not exist")]
    NoSuchProcess { pid: u32, flag: &'static str },
    #[error("process {pid} is a kernel thread, no rank of any plan")]
    KernelThread { pid: u32 },
    #[error("which rank of the plan process {pid} is cannot be told: {why}")]
    RankUnknown { pid: u32, why: String },
    #[error("local rank {rank} is past the plan's {ranks_per_node} rank(s) per node")]
    RankPastPlan { rank: u32, ranks_per_node: u32 },
    #[error("`--pids` names process {pid} twice")]
    PidTwice { pid: u32 },
    #[error("{mismatches} rank(s) are not bound as planned")]
    Verify { mismatches: usize },
    #[error("{ranks} rank(s) could not be read in full, and nothing read differs from the plan")]
    Unknown { ranks: usize },
    /// `exec --stop-on-drift`: a change a watch saw stayed a problem.
    #[error("{}; the ranks were stopped (`--stop-on-drift`)", change.text())]
    Drifted { change: Change },
}
