//! `ExecError`: why ranks could not be started, or how the job ended badly (E041x).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("{}", match input {
        Input::Given => "the plan has no `command` for the ranks to run",
        Input::None => "no command for the ranks to run: nothing follows `--`",
    })]
    /// `input`: whether a job spec or plan was given (where the command could go).
    NoCommand { input: Input },
    #[error("the plan is for {plan} node(s), but this job has {job}")]
    NodeCount { plan: u32, job: u32 },
    #[error("node rank {node_rank} is not below the node count {nodes}")]
    NodeRank { node_rank: u32, nodes: u32 },
    #[error("a plan for {nodes} nodes needs this node's place in the job")]
    NoNodePlace { nodes: u32 },
    #[error("this node ({host}) cannot run the plan: {detail}")]
    NotThisNode {
        host: String,
        detail: String,
        why: NodeMismatch,
    },
    #[error("cannot bind rank {rank} to CPUs {cpus}: {source}")]
    Bind {
        rank: u32,
        cpus: String,
        source: std::io::Error,
    },
    #[error("cannot start rank {rank} (`{program}`): {source}")]
    Spawn {
        rank: u32,
        program: String,
        source: std::io::Error,
    },
    #[error("cannot write rank logs to `{}`: {source}", path.display())]
    LogDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot {what}: {source}")]
    Syscall {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("rank {rank} {how}")]
    RankFailed { rank: u32, how: String, code: i32 },
    #[error("numaplan received {}; the ranks were stopped", crate::sys::signals::signal_name(*signal))]
    Interrupted { signal: i32 },
    #[error("cannot run `{program}`: {source}")]
    BindExec {
        program: String,
        source: std::io::Error,
    },
}

/// Whether a job spec or plan was given: where a missing command could go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Given,
    None,
}

/// Why a node cannot run a plan, which decides what can be done about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeMismatch {
    /// Another CPU, NUMA node or GPU count than the plan's topology (`--force` starts anyway).
    Shape,
    /// Planned CPUs this machine does not have.
    CpusAbsent,
    /// Planned CPUs outside this process's affinity (taskset, a cgroup, a Slurm step).
    CpusNotAllowed,
    /// A memory node this machine does not have.
    MemoryNode,
}

impl ExecError {
    /// The job's exit status: a failed rank's status (128 + signal for a signal death), 128 +
    /// the signal numaplan received, else 1 (bad input or a mismatch) or 3 (the environment).
    pub fn exit_code(&self) -> i32 {
        match self {
            ExecError::RankFailed { code, .. } => *code,
            ExecError::Interrupted { signal } => 128 + signal,
            // As `env`, `nice` and numactl: 127 when the program is not found, 126 otherwise.
            // `exec` too: the program a rank runs is not found (127) or cannot be run (126).
            ExecError::BindExec { source, .. } | ExecError::Spawn { source, .. } => {
                match source.kind() {
                    std::io::ErrorKind::NotFound => 127,
                    _ => 126,
                }
            }
            ExecError::Bind { .. } | ExecError::LogDir { .. } | ExecError::Syscall { .. } => 3,
            _ => 1,
        }
    }
}
