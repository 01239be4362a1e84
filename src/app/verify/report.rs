//! The JSON forms of `verify` (`numaplan_verify`) and of `--watch`'s lines (`numaplan_watch`),
//! whose schemas are in `schemas/`.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::counted::CountersReport;
use crate::observe::counters::Counted;
use crate::observe::matching::Found;
use crate::observe::{verify, watch};

/// `verify --format json` (`"numaplan_verify": 1`, schemas/verify.schema.json): per rank what
/// was planned and what /proc shows.
#[derive(Serialize, JsonSchema)]
pub(crate) struct VerifyReport {
    numaplan_verify: u32,
    /// Every rank bound as planned (exited ranks are not counted against it).
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
    /// As numa_maps shows it (`bind:3`).
    planned_memory: String,
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
    problems: Vec<String>,
    /// How the rank ended, when it had exited before it was read.
    exited: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct SkippedProcess {
    pid: u32,
    /// Its command line, shortened.
    command: String,
    why: String,
}

impl VerifyReport {
    pub(super) fn new(
        table: &verify::Table,
        found: &Found,
        counted: Option<&Counted>,
    ) -> VerifyReport {
        let counters = counted.map(|counted| CountersReport::new(&found.ranks, counted));
        VerifyReport {
            numaplan_verify: 1,
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
                    problems: r.problems.clone(),
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

/// One line of `verify --watch --format json` after the report (`"numaplan_watch": 1`,
/// schemas/watch.schema.json): a change, or the summary at the end.
#[derive(Serialize, JsonSchema)]
pub(crate) struct WatchEvent {
    numaplan_watch: u32,
    /// `thread-left`, `thread-back`, `thread-ended`, `memory-low`, `memory-back`,
    /// `rank-exited`, or `summary` (the last line).
    event: String,
    /// Seconds since the watch began.
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<f64>,
    /// The line the text output prints.
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// The thread's name (`/proc/PID/task/TID/comm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<String>,
    /// The CPUs the thread may run on.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    planned_cpus: Option<String>,
    /// `--repin`: whether the thread was put back on its rank's CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    repinned: Option<bool>,
    /// Why it could not be put back.
    #[serde(skip_serializing_if = "Option::is_none")]
    repin_error: Option<String>,
    /// The share of the rank's memory on its planned nodes (0 to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    local_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_nodes: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_local: Option<f64>,
    /// Summary: the readings made.
    #[serde(skip_serializing_if = "Option::is_none")]
    readings: Option<u64>,
    /// Summary: changes by event (`left`, `repinned`, `back`, `memory-low`, `memory-back`,
    /// `exited`) and `troubled`, the ranks with a problem that stayed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    counts: Option<BTreeMap<String, usize>>,
}

impl WatchEvent {
    fn blank(event: &str, text: String) -> WatchEvent {
        WatchEvent {
            numaplan_watch: 1,
            event: event.into(),
            t: None,
            text,
            rank: None,
            pid: None,
            tid: None,
            thread: None,
            cpus: None,
            planned_cpus: None,
            repinned: None,
            repin_error: None,
            local_share: None,
            memory_bytes: None,
            memory_nodes: None,
            min_local: None,
            readings: None,
            counts: None,
        }
    }

    pub(super) fn of(c: &watch::Change, at: Duration) -> WatchEvent {
        use watch::Change;
        let kind = match c {
            Change::ThreadLeft { .. } => "thread-left",
            Change::ThreadBack { cpus: Some(_), .. } => "thread-back",
            Change::ThreadBack { cpus: None, .. } => "thread-ended",
            Change::Memory { back: false, .. } => "memory-low",
            Change::Memory { back: true, .. } => "memory-back",
            Change::RankExited { .. } => "rank-exited",
        };
        let mut e = WatchEvent::blank(kind, c.text());
        e.t = Some((at.as_secs_f64() * 1000.0).round() / 1000.0);
        match c {
            Change::ThreadLeft {
                rank,
                pid,
                thread,
                planned,
                repinned,
            } => {
                (e.rank, e.pid, e.tid) = (Some(*rank), Some(*pid), Some(thread.tid));
                e.thread = Some(thread.name.clone());
                e.cpus = Some(thread.cpus.to_string());
                e.planned_cpus = Some(planned.to_string());
                e.repinned = repinned.as_ref().map(Result::is_ok);
                e.repin_error = repinned.as_ref().and_then(|r| r.clone().err());
            }
            Change::ThreadBack {
                rank,
                pid,
                tid,
                name,
                cpus,
            } => {
                (e.rank, e.pid, e.tid) = (Some(*rank), Some(*pid), Some(*tid));
                e.thread = Some(name.clone());
                e.cpus = cpus.as_ref().map(ToString::to_string);
            }
            Change::Memory {
                rank,
                pid,
                share,
                bytes,
                nodes,
                min,
                ..
            } => {
                (e.rank, e.pid) = (Some(*rank), Some(*pid));
                e.local_share = Some(*share);
                e.memory_bytes = Some(*bytes);
                e.memory_nodes = Some(nodes.iter().map(|n| n.0).collect());
                e.min_local = Some(*min);
            }
            Change::RankExited { rank, pid } => (e.rank, e.pid) = (Some(*rank), Some(*pid)),
        }
        e
    }

    pub(super) fn summary(seen: &watch::Watch) -> WatchEvent {
        let mut e = WatchEvent::blank("summary", seen.summary());
        e.readings = Some(seen.rounds);
        let mut counts: BTreeMap<String, usize> = seen
            .counts()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        counts.insert("troubled".into(), seen.troubled());
        e.counts = Some(counts);
        e
    }

    pub(super) fn line(&self) -> String {
        serde_json::to_string(self).expect("invariant: reports serialize") + "\n"
    }
}
