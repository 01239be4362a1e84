//! The JSON forms of `verify` (`numaplan_verify`) and of `--watch`'s lines (`numaplan_watch`),
//! whose schemas are in `schemas/`.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::counters_report::CountersReport;
use crate::observe::counters::Counted;
use crate::observe::matching::Found;
use crate::observe::{Problem, verify, watch};
use crate::plan::{Plan, ShownPolicy};
use crate::variables::NIC_VARIABLES;

/// `verify --format json` (`"numaplan_verify": 2`, schemas/verify.schema.json): per rank what
/// was planned and what /proc shows. Version 2 reports each problem as an object with its
/// `kind` and fields (version 1 had only the text).
#[derive(Serialize, JsonSchema)]
pub(crate) struct VerifyReport {
    numaplan_verify: u32,
    /// Every rank bound as planned (exited ranks are not counted against it; a rank whose
    /// binding could not be read in full, its `unreadable` problem, is).
    ok: bool,
    mismatches: usize,
    ranks: Vec<VerifyRank>,
    /// `--match`: local ranks of the plan that no process claims (each a mismatch).
    missing: Vec<u32>,
    /// `--match`: processes whose command line matched but that are no rank, and why.
    skipped: Vec<SkippedProcess>,
    /// `--counters`: what the node-load counters showed, or why there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<CountersReport>,
}

#[derive(Serialize, JsonSchema)]
struct VerifyRank {
    rank: u32,
    pid: u32,
    threads: usize,
    planned_cpus: String,
    /// The union of its threads' CPUs.
    actual_cpus: String,
    /// Threads on a strict subset of the rank's CPUs (allowed: a runtime binding its threads).
    narrowed: usize,
    /// As numa_maps shows it (`bind:3`); `default` for a rank that runs without its memory
    /// policy by design (`without_memory_policy`).
    planned_memory: String,
    /// The rank's mark says it runs without the plan's memory policy: refused where it started
    /// (a container without CAP_SYS_NICE), and not required (W0217). Not a mismatch.
    without_memory_policy: bool,
    actual_memory: String,
    /// The rank's own memory (anonymous, shared memory, huge pages) per NUMA node, in bytes,
    /// from numa_maps; page cache of files is left out.
    memory_bytes: BTreeMap<String, u64>,
    /// The nodes the plan puts its memory on.
    memory_nodes: Vec<u32>,
    /// The share of its memory on `memory_nodes` (0 to 1); absent without memory or without
    /// planned nodes.
    local_share: Option<f64>,
    /// The share under which the rank is a mismatch (`--min-local`; 0.9 under `bind`).
    min_local: Option<f64>,
    /// What differs from the plan, each with its `kind` and the line the text output prints.
    problems: Vec<ProblemReport>,
    /// The variables the plan sets for the rank's NIC (`NCCL_IB_HCA`, `UCX_NET_DEVICES`...),
    /// which a process can compare with its own environment (`numaplan.check_binding()`).
    nic_env: BTreeMap<String, String>,
    /// How the rank ended, when it had exited before it was read.
    exited: Option<String>,
}

/// One way a rank differs from its plan.
#[derive(Serialize, JsonSchema)]
struct ProblemReport {
    /// The problem as the text output says it.
    text: String,
    #[serde(flatten)]
    kind: ProblemKind,
}

/// What the problem is, by `kind`; CPU sets in cpulist syntax (`0-3,8`).
#[derive(Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum ProblemKind {
    /// The process claims a local rank the plan does not have.
    NotInPlan { local_rank: u32 },
    /// The process has no thread left.
    Gone { pid: u32 },
    /// A thread may run on CPUs outside the rank's.
    ThreadOutside {
        tid: u32,
        /// The thread's name (`/proc/PID/task/TID/comm`).
        thread: String,
        /// The CPUs outside the rank's that it may run on.
        outside_cpus: String,
    },
    /// A thread narrowed to CPUs across the rank's compute CPUs and its helper pool.
    AcrossPlaces {
        tid: u32,
        thread: String,
        cpus: String,
        compute_cpus: String,
        helper_cpus: String,
    },
    /// The process shows no memory mappings (it is exiting).
    NoMappings,
    /// A file of the process's that verify may not read (another user's process).
    Unreadable { file: String },
    /// Its memory policy is not the plan's.
    MemoryPolicy {
        actual: PolicyReport,
        planned: PolicyReport,
    },
    /// Less than `min_local` of its memory is on its planned nodes.
    MemoryShort {
        /// The share on `memory_nodes` (0 to 1).
        local_share: f64,
        memory_bytes: u64,
        memory_nodes: Vec<u32>,
        min_local: f64,
    },
    /// Several processes claim the rank.
    ClaimedTwice { local_rank: u32, pids: Vec<u32> },
    /// A variable the plan sets for the rank's NIC has another value in the environment the
    /// process started with (`actual`: null where it has none).
    NicVariable {
        variable: String,
        actual: Option<String>,
        planned: String,
    },
}

/// A memory policy as numa_maps shows it: `bind:0-1` is mode `bind`, nodes `[0, 1]`.
#[derive(Serialize, JsonSchema)]
struct PolicyReport {
    /// The kernel's word, with its flags (`default`, `prefer`, `bind`, `interleave`,
    /// `bind=static`, ...).
    mode: String,
    nodes: Vec<u32>,
}

impl PolicyReport {
    fn of(shown: &ShownPolicy) -> PolicyReport {
        PolicyReport {
            mode: shown.mode.clone(),
            nodes: shown.nodes.iter().map(|n| n.0).collect(),
        }
    }
}

impl ProblemReport {
    fn of(problem: &Problem) -> ProblemReport {
        let kind = match problem {
            Problem::NotInPlan { rank } => ProblemKind::NotInPlan { local_rank: *rank },
            Problem::Gone { pid } => ProblemKind::Gone { pid: *pid },
            Problem::ThreadOutside { tid, name, outside } => ProblemKind::ThreadOutside {
                tid: *tid,
                thread: name.clone(),
                outside_cpus: outside.to_string(),
            },
            Problem::AcrossPlaces {
                tid,
                name,
                cpus,
                compute,
                helpers,
            } => ProblemKind::AcrossPlaces {
                tid: *tid,
                thread: name.clone(),
                cpus: cpus.to_string(),
                compute_cpus: compute.to_string(),
                helper_cpus: helpers.to_string(),
            },
            Problem::NoMappings => ProblemKind::NoMappings,
            Problem::Unreadable { file, .. } => ProblemKind::Unreadable { file: file.clone() },
            Problem::MemoryPolicy { actual, planned } => ProblemKind::MemoryPolicy {
                actual: PolicyReport::of(actual),
                planned: PolicyReport::of(planned),
            },
            Problem::MemoryShort {
                share,
                bytes,
                nodes,
                min,
            } => ProblemKind::MemoryShort {
                local_share: *share,
                memory_bytes: *bytes,
                memory_nodes: nodes.iter().map(|n| n.0).collect(),
                min_local: *min,
            },
            Problem::NicVariable {
                name,
                actual,
                planned,
            } => ProblemKind::NicVariable {
                variable: name.clone(),
                actual: actual.clone(),
                planned: planned.clone(),
            },
            Problem::ClaimedTwice { rank, pids } => ProblemKind::ClaimedTwice {
                local_rank: *rank,
                pids: pids.clone(),
            },
        };
        ProblemReport {
            text: problem.to_string(),
            kind,
        }
    }
}

#[derive(Serialize, JsonSchema)]
struct SkippedProcess {
    pid: u32,
    /// Its command line, shortened.
    command: String,
    why: String,
}

/// The NIC variables the plan sets for local rank `rank`.
fn nic_env(plan: &Plan, rank: u32) -> BTreeMap<String, String> {
    plan.ranks
        .iter()
        .filter(|r| r.local_rank == rank)
        .flat_map(|r| &r.env)
        .filter(|(k, _)| NIC_VARIABLES.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

impl VerifyReport {
    pub(crate) fn new(
        table: &verify::Table,
        found: &Found,
        counted: Option<&Counted>,
        plan: &Plan,
    ) -> VerifyReport {
        let counters = counted.map(|counted| CountersReport::new(&found.ranks, counted));
        VerifyReport {
            numaplan_verify: 2,
            ok: table.ok(),
            mismatches: table.mismatches(),
            ranks: table
                .rows
                .iter()
                .map(|r| VerifyRank {
                    rank: r.rank,
                    pid: r.pid,
                    threads: r.tids.len(),
                    planned_cpus: r.planned_cpus.to_string(),
                    actual_cpus: r.actual_cpus.to_string(),
                    narrowed: r.narrowed,
                    planned_memory: r.planned_memory.clone(),
                    without_memory_policy: found.without_memory.iter().any(|w| w.pid == r.pid),
                    actual_memory: r.actual_memory.clone(),
                    memory_bytes: r
                        .residence
                        .bytes
                        .iter()
                        .map(|(n, b)| (n.to_string(), *b))
                        .collect(),
                    memory_nodes: r.memory_nodes.iter().map(|n| n.0).collect(),
                    local_share: r
                        .residence
                        .share_on(&r.memory_nodes)
                        .filter(|_| !r.memory_nodes.is_empty()),
                    min_local: r.min_local,
                    problems: r.problems.iter().map(ProblemReport::of).collect(),
                    nic_env: nic_env(plan, r.rank),
                    exited: r.exited.clone(),
                })
                .collect(),
            missing: table.missing.clone(),
            skipped: found
                .skipped
                .iter()
                .map(|s| SkippedProcess {
                    pid: s.pid,
                    command: s.command.clone(),
                    why: s.why.to_string(),
                })
                .collect(),
            counters,
        }
    }
}

/// One line of `verify --watch --format json` after the report (`"numaplan_watch": 2`,
/// schemas/watch.schema.json): a change, or the summary at the end. Version 2 counts changes in
/// the summary by their event names (version 1 had a vocabulary of its own for them).
#[derive(Serialize, JsonSchema)]
pub(crate) struct WatchLine {
    numaplan_watch: u32,
    /// Seconds since the watch began.
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<f64>,
    /// The line the text output prints.
    text: String,
    #[serde(flatten)]
    event: WatchEvent,
}

/// What happened, by `event`.
#[derive(Serialize, JsonSchema)]
#[serde(tag = "event", rename_all = "kebab-case")]
enum WatchEvent {
    /// A thread may run outside its rank's CPUs.
    ThreadLeft {
        #[serde(flatten)]
        thread: ThreadOf,
        /// The CPUs the thread may run on.
        cpus: String,
        planned_cpus: String,
        /// `--repin`: whether the thread was put back on its rank's CPUs.
        #[serde(skip_serializing_if = "Option::is_none")]
        repinned: Option<bool>,
        /// Why it could not be put back.
        #[serde(skip_serializing_if = "Option::is_none")]
        repin_error: Option<String>,
    },
    /// A thread that had left is back inside its rank's CPUs.
    ThreadBack {
        #[serde(flatten)]
        thread: ThreadOf,
        cpus: String,
    },
    /// A thread that had left has ended.
    ThreadEnded {
        #[serde(flatten)]
        thread: ThreadOf,
    },
    /// The share of the rank's memory on its planned nodes fell under the threshold.
    MemoryLow(MemoryShare),
    /// It is at or over the threshold again.
    MemoryBack(MemoryShare),
    RankExited {
        rank: u32,
        pid: u32,
    },
    /// The last line.
    Summary {
        /// The readings made.
        readings: u64,
        /// Changes by event name (`thread-left`, `thread-back`, `thread-ended`, `memory-low`,
        /// `memory-back`, `rank-exited`), `repinned` (threads put back) and `troubled` (ranks
        /// with a problem that stayed one).
        counts: BTreeMap<String, usize>,
    },
}

/// A rank's thread.
#[derive(Serialize, JsonSchema)]
struct ThreadOf {
    rank: u32,
    pid: u32,
    tid: u32,
    /// The thread's name (`/proc/PID/task/TID/comm`).
    thread: String,
}

/// A rank's memory against its threshold.
#[derive(Serialize, JsonSchema)]
struct MemoryShare {
    rank: u32,
    pid: u32,
    /// The share of the rank's memory on its planned nodes (0 to 1).
    local_share: f64,
    memory_bytes: u64,
    memory_nodes: Vec<u32>,
    min_local: f64,
}

impl WatchLine {
    pub(crate) fn of(c: &watch::Change, at: Duration) -> WatchLine {
        use watch::Change;
        let event = match c {
            Change::ThreadLeft {
                rank,
                pid,
                thread,
                planned,
                repinned,
            } => WatchEvent::ThreadLeft {
                thread: ThreadOf {
                    rank: *rank,
                    pid: *pid,
                    tid: thread.tid,
                    thread: thread.name.clone(),
                },
                cpus: thread.cpus.to_string(),
                planned_cpus: planned.to_string(),
                repinned: repinned.as_ref().map(Result::is_ok),
                repin_error: repinned.as_ref().and_then(|r| r.clone().err()),
            },
            Change::ThreadBack {
                rank,
                pid,
                tid,
                name,
                cpus,
            } => {
                let thread = ThreadOf {
                    rank: *rank,
                    pid: *pid,
                    tid: *tid,
                    thread: name.clone(),
                };
                match cpus {
                    Some(cpus) => WatchEvent::ThreadBack {
                        thread,
                        cpus: cpus.to_string(),
                    },
                    None => WatchEvent::ThreadEnded { thread },
                }
            }
            Change::Memory {
                rank,
                pid,
                share,
                bytes,
                nodes,
                min,
                back,
            } => {
                let share = MemoryShare {
                    rank: *rank,
                    pid: *pid,
                    local_share: *share,
                    memory_bytes: *bytes,
                    memory_nodes: nodes.iter().map(|n| n.0).collect(),
                    min_local: *min,
                };
                match back {
                    false => WatchEvent::MemoryLow(share),
                    true => WatchEvent::MemoryBack(share),
                }
            }
            Change::RankExited { rank, pid } => WatchEvent::RankExited {
                rank: *rank,
                pid: *pid,
            },
        };
        WatchLine {
            numaplan_watch: 2,
            t: Some((at.as_secs_f64() * 1000.0).round() / 1000.0),
            text: c.text(),
            event,
        }
    }

    pub(crate) fn summary(seen: &watch::Watch) -> WatchLine {
        WatchLine {
            numaplan_watch: 2,
            t: None,
            text: seen.summary(),
            event: WatchEvent::Summary {
                readings: seen.rounds,
                counts: seen
                    .counts()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            },
        }
    }

    pub(crate) fn line(&self) -> String {
        serde_json::to_string(self).expect("invariant: reports serialize") + "\n"
    }
}
