//! `Problem`: one way a running rank differs from its plan, as `verify` finds it. What a watch
//! follows over time (a thread outside the rank's CPUs, memory under its threshold) is told
//! apart from what it does not by kind, never by counting.

use std::fmt;

use crate::cpuset::CpuSet;
use crate::ids::{NodeId, node_list};
use crate::phrase::size;
use crate::plan::ShownPolicy;

#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// The process claims a local rank the plan does not have.
    NotInPlan { rank: u32 },
    /// The process has no thread left.
    Gone { pid: u32 },
    /// A thread may run on CPUs outside the rank's (`outside`: those CPUs).
    ThreadOutside {
        tid: u32,
        name: String,
        outside: CpuSet,
    },
    /// A thread narrowed to CPUs across the rank's compute CPUs and its helper pool.
    AcrossPlaces {
        tid: u32,
        name: String,
        cpus: CpuSet,
        compute: CpuSet,
        helpers: CpuSet,
    },
    /// The process shows no memory mappings (it is exiting).
    NoMappings,
    /// A file of the process's that `verify` may not read (`mine`: the process is this user's,
    /// which the kernel still keeps from it), so nothing is known of what the file shows.
    Unreadable { file: String, mine: bool },
    /// Its memory policy (as numa_maps shows it) is not the plan's.
    MemoryPolicy {
        actual: ShownPolicy,
        planned: ShownPolicy,
    },
    /// Less than `min` of its memory is on its planned nodes.
    MemoryShort {
        share: f64,
        bytes: u64,
        nodes: Vec<NodeId>,
        min: f64,
    },
    /// Several processes claim the rank.
    ClaimedTwice { rank: u32, pids: Vec<u32> },
    /// A variable the plan sets for the rank's NIC (`NCCL_IB_HCA`...) has another value in the
    /// environment the process started with, or none.
    NicVariable {
        name: String,
        actual: Option<String>,
        planned: String,
    },
}

impl Problem {
    /// What could not be read: nothing is known there, neither ok nor a mismatch.
    pub fn unknown(&self) -> bool {
        matches!(self, Problem::Unreadable { .. })
    }

    /// Whether a watch follows this problem from one reading to the next (then the watch, not
    /// the first reading, says whether it stayed one).
    pub fn watched(&self) -> bool {
        matches!(
            self,
            Problem::ThreadOutside { .. } | Problem::MemoryShort { .. }
        )
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotInPlan { rank } => write!(f, "the plan has no local rank {rank}"),
            Problem::Gone { pid } => write!(f, "process {pid} is gone"),
            Problem::ThreadOutside { tid, name, outside } => write!(
                f,
                "thread {tid} ({name}) may run on CPUs {outside} outside the plan"
            ),
            Problem::AcrossPlaces {
                tid,
                name,
                cpus,
                compute,
                helpers,
            } => write!(
                f,
                "thread {tid} ({name}) may run on CPUs {cpus}, across its compute CPUs \
                 {compute} and its helper CPUs {helpers}"
            ),
            Problem::NoMappings => f.write_str("numa_maps is empty (the rank has exited)"),
            Problem::Unreadable { file, mine: false } => write!(
                f,
                "permission denied reading {file}: another user's process, which only that \
                 user or root may read; its memory is unknown, not a mismatch"
            ),
            Problem::Unreadable { file, mine: true } => write!(
                f,
                "permission denied reading {file}, though the process is this user's: the \
                 kernel's ptrace check keeps it (another user namespace, a container without \
                 CAP_SYS_PTRACE, Yama's ptrace_scope); its memory is unknown, not a mismatch"
            ),
            Problem::MemoryPolicy { actual, planned } => {
                write!(f, "memory policy is {actual}, planned {planned}")
            }
            Problem::MemoryShort {
                share,
                bytes,
                nodes,
                min,
            } => write!(
                f,
                "{:.1}% of its memory ({}) is on node {}, under {:.0}%",
                share * 100.0,
                size(*bytes),
                node_list(nodes),
                min * 100.0
            ),
            Problem::NicVariable {
                name,
                actual,
                planned,
            } => {
                let actual = match actual {
                    Some(v) => format!("'{v}'"),
                    None => "unset".to_string(),
                };
                write!(f, "{name} is {actual}, planned '{planned}'")
            }
            Problem::ClaimedTwice { rank, pids } => {
                let list: Vec<String> = pids.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "processes {} all claim local rank {rank}",
                    list.join(", ")
                )
            }
        }
    }
}
