//! `Change`: what a watch reports between two readings of the ranks (a thread that left or came
//! back, memory under or over its threshold, a rank that exited), its kind by the name the JSON
//! lines and the summary use, and its line of text.

use super::verify::Thread;
use crate::cpuset::CpuSet;
use crate::ids::{NodeId, node_list};
use crate::phrase::size;

/// A change between two readings of the ranks.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A thread that may run outside its rank's CPUs; `repinned`: what putting it back did.
    ThreadLeft {
        rank: u32,
        pid: u32,
        thread: Thread,
        planned: CpuSet,
        repinned: Option<Result<(), String>>,
    },
    /// A thread that had left is back inside its rank's CPUs (`cpus`), or has ended (`None`).
    ThreadBack {
        rank: u32,
        pid: u32,
        tid: u32,
        name: String,
        cpus: Option<CpuSet>,
    },
    /// The rank's memory share on its planned nodes fell under the threshold (`back`: false),
    /// or came back over it (`back`: true).
    Memory {
        rank: u32,
        pid: u32,
        share: f64,
        bytes: u64,
        nodes: Vec<NodeId>,
        min: f64,
        back: bool,
    },
    RankExited {
        rank: u32,
        pid: u32,
    },
}

impl Change {
    /// The change as one line: `rank 2 thread 4711 (nccl-proxy): CPUs 0-255, planned 32-47`.
    pub fn text(&self) -> String {
        match self {
            Change::ThreadLeft {
                rank,
                thread,
                planned,
                repinned,
                ..
            } => {
                let done = match repinned {
                    None => String::new(),
                    Some(Ok(())) => format!("; put back on {planned}"),
                    Some(Err(e)) => format!("; not put back: {e}"),
                };
                format!(
                    "rank {rank} thread {} ({}): CPUs {}, planned {planned}{done}",
                    thread.tid, thread.name, thread.cpus
                )
            }
            Change::ThreadBack {
                rank,
                tid,
                name,
                cpus,
                ..
            } => match cpus {
                Some(cpus) => format!("rank {rank} thread {tid} ({name}): back inside CPUs {cpus}"),
                None => format!("rank {rank} thread {tid} ({name}): ended"),
            },
            Change::Memory {
                rank,
                share,
                bytes,
                nodes,
                min,
                back,
                ..
            } => format!(
                "rank {rank}: {:.1}% of its memory ({}) on node {}, {}",
                share * 100.0,
                size(*bytes),
                node_list(nodes),
                match back {
                    true => format!("{:.0}% or more again", min * 100.0),
                    false => format!("under {:.0}%", min * 100.0),
                }
            ),
            Change::RankExited { rank, pid } => format!("rank {rank} (pid {pid}) exited"),
        }
    }

    /// What kind of change it is.
    pub fn kind(&self) -> Kind {
        match self {
            Change::ThreadLeft { .. } => Kind::ThreadLeft,
            Change::ThreadBack { cpus: Some(_), .. } => Kind::ThreadBack,
            Change::ThreadBack { cpus: None, .. } => Kind::ThreadEnded,
            Change::Memory { back: false, .. } => Kind::MemoryLow,
            Change::Memory { back: true, .. } => Kind::MemoryBack,
            Change::RankExited { .. } => Kind::RankExited,
        }
    }

    /// The rank's process.
    pub fn pid(&self) -> u32 {
        match self {
            Change::ThreadLeft { pid, .. }
            | Change::ThreadBack { pid, .. }
            | Change::Memory { pid, .. }
            | Change::RankExited { pid, .. } => *pid,
        }
    }

    /// Whether the change is a problem that stays one (not a return, not a thread put back).
    pub fn is_problem(&self) -> bool {
        match self {
            Change::ThreadLeft { repinned, .. } => !matches!(repinned, Some(Ok(()))),
            Change::Memory { back, .. } => !back,
            Change::ThreadBack { .. } | Change::RankExited { .. } => false,
        }
    }
}

/// The kinds of change, by the names the JSON lines and the summary's counts use: one
/// vocabulary for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    ThreadLeft,
    ThreadBack,
    ThreadEnded,
    MemoryLow,
    MemoryBack,
    RankExited,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::ThreadLeft => "thread-left",
            Kind::ThreadBack => "thread-back",
            Kind::ThreadEnded => "thread-ended",
            Kind::MemoryLow => "memory-low",
            Kind::MemoryBack => "memory-back",
            Kind::RankExited => "rank-exited",
        }
    }
}
