//! `numaplan verify`: which processes are the plan's ranks (`--pids`, `--match`), what `/proc`
//! shows of them against the plan, then `--watch`, `--repin` and `--counters`, as text or JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::input::{PlanMachine, load_subject};
use super::{emit, json};
use crate::cli::{ReportFormat, VerifyArgs, WatchArgs};
use crate::error::Error;
use crate::exec::counters::{self, Counted, Unavailable};
use crate::exec::matching::{self, Candidate, Found};
use crate::exec::{ExecError, launcher, verify, watch};
use crate::plan::Plan;

pub fn verify(args: &VerifyArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let plan = load_subject(
        Some(&args.input),
        args.topology.as_deref(),
        PlanMachine::NotNeeded,
        &[],
    )?
    .plan;
    let found = match &args.match_name {
        Some(name) => matching::select(&find_processes(name), plan.ranks_per_node),
        None => given_pids(&args.pids),
    };
    let ranked = found.ranks.clone();
    if ranked.is_empty() {
        let pattern = args.match_name.clone().unwrap_or_default();
        return Err(ExecError::NoProcesses {
            pattern,
            skipped: skipped_lines(&found),
        }
        .into());
    }
    let min_local = args.watch.min_local;
    let mut table = verify::check(&plan, &ranked, min_local);
    for (rank, pids) in &found.duplicates {
        table.claimed_twice(*rank, pids);
    }
    table.missing = found.missing.clone();
    let counted = args.counters.map(|seconds| Counted {
        seconds,
        counts: counters::count(&ranked, Duration::from_secs_f64(seconds)),
    });
    let watching = args.watch.watch || args.watch.repin;
    let text = match args.format {
        ReportFormat::Text => {
            skipped_lines(&found).join("")
                + &table.render()
                + &counters_text(&ranked, counted.as_ref())
        }
        // JSON Lines under --watch: the report on one line, the events after it.
        ReportFormat::Json if watching => {
            serde_json::to_string(&VerifyReport::new(&table, &found, counted.as_ref()))
                .expect("invariant: reports serialize")
                + "\n"
        }
        ReportFormat::Json => json(&VerifyReport::new(&table, &found, counted.as_ref())),
    };
    emit(stdout, None, &text)?;
    let mut mismatched: BTreeSet<u32> = match watching {
        // The watch follows threads and memory from this reading on, repins included.
        true => table.mismatched_beyond_watch().collect(),
        false => table.mismatched_pids().collect(),
    };
    // A rank no process was found for counts once each (no pid to name it by).
    let missing = table.missing.len();
    if watching {
        mismatched.extend(watch_after(args, &plan, &ranked, &table, stdout)?);
    }
    match mismatched.len() + missing {
        0 => Ok(()),
        mismatches => Err(ExecError::Verify { mismatches }.into()),
    }
}

/// `--watch` or `--repin` after the first reading (`first`): each change as it comes, the
/// summary at the end; returns the pids of the ranks with a problem that stayed one.
fn watch_after(
    args: &VerifyArgs,
    plan: &Plan,
    ranked: &[(u32, u32)],
    first: &verify::Table,
    stdout: &mut dyn Write,
) -> Result<Vec<u32>, Error> {
    // Without --watch, --repin puts back what this one reading found.
    let mut opts = watch_options(&args.watch);
    if !args.watch.watch {
        opts.rounds = Some(0);
    }
    let mut line = |c: &watch::Change, at: Duration| {
        let text = match args.format {
            ReportFormat::Text => format!("+{:.1}s {}\n", at.as_secs_f64(), c.text()),
            ReportFormat::Json => WatchEvent::of(c, at).line(),
        };
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    };
    let never = || false;
    let min_local = args.watch.min_local;
    let seen = watch::run(plan, ranked, first, &opts, min_local, &never, &mut line);
    let summary = match args.format {
        ReportFormat::Text => seen.summary() + "\n",
        ReportFormat::Json => WatchEvent::summary(&seen).line(),
    };
    emit(stdout, None, &summary)?;
    Ok(seen.troubled_pids().collect())
}

pub(super) fn watch_options(args: &WatchArgs) -> watch::WatchOptions {
    watch::WatchOptions {
        interval: Duration::from_secs_f64(args.interval),
        rounds: args.count,
        repin: args.repin,
    }
}

/// `--counters`' lines under the table: each rank's (`(local rank, pid)`) remote share, or why
/// there is none.
fn counters_text(ranks: &[(u32, u32)], counted: Option<&Counted>) -> String {
    let Some(Counted { seconds, counts }) = counted else {
        return String::new();
    };
    let counts = match counts {
        Ok(counts) => counts,
        Err(Unavailable(why)) => {
            return format!("counters: unavailable: {why}; pages only\n");
        }
    };
    let mut out = format!("counters over {seconds} s (node-loads, node-load-misses):\n");
    for &(rank, pid) in ranks {
        let c = counts.get(&pid).copied().unwrap_or_default();
        let share = match c.remote_share() {
            Some(share) => format!("{:.1}% remote", share * 100.0),
            None => "no loads counted".into(),
        };
        out.push_str(&format!(
            "  rank {rank}: {} node loads, {} missed the local node, {share}\n",
            c.loads, c.misses
        ));
    }
    out
}

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

#[derive(Serialize, JsonSchema)]
struct CountersReport {
    seconds: f64,
    /// Why the machine offers no counters (then `ranks` is empty).
    unavailable: Option<String>,
    ranks: Vec<CountedRank>,
}

#[derive(Serialize, JsonSchema)]
struct CountedRank {
    rank: u32,
    pid: u32,
    node_loads: u64,
    node_load_misses: u64,
    /// `node_load_misses / node_loads`; absent without loads.
    remote_share: Option<f64>,
}

impl CountersReport {
    /// Each rank's (`(local rank, pid)`) counts, or why the machine has none.
    fn new(ranks: &[(u32, u32)], Counted { seconds, counts }: &Counted) -> CountersReport {
        let ranks = match counts {
            Ok(counts) => ranks
                .iter()
                .map(|&(rank, pid)| {
                    let c = counts.get(&pid).copied().unwrap_or_default();
                    CountedRank {
                        rank,
                        pid,
                        node_loads: c.loads,
                        node_load_misses: c.misses,
                        remote_share: c.remote_share(),
                    }
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        CountersReport {
            seconds: *seconds,
            unavailable: counts.as_ref().err().map(|u| u.0.clone()),
            ranks,
        }
    }
}

impl VerifyReport {
    fn new(table: &verify::Table, found: &Found, counted: Option<&Counted>) -> VerifyReport {
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
                .map(|(pid, command, why)| SkippedProcess {
                    pid: *pid,
                    command: command.clone(),
                    why: why.clone(),
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

    fn of(c: &watch::Change, at: Duration) -> WatchEvent {
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

    fn summary(seen: &watch::Watch) -> WatchEvent {
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

    fn line(&self) -> String {
        serde_json::to_string(self).expect("invariant: reports serialize") + "\n"
    }
}

/// `--pids`: each process the local rank it claims, else its place in the list; two that claim
/// one rank are flagged as under `--match`.
fn given_pids(pids: &[u32]) -> Found {
    let mut found = Found::default();
    for (i, &pid) in pids.iter().enumerate() {
        let rank = claim_of(pid).map_or(i as u32, |(rank, _)| rank);
        found.ranks.push((rank, pid));
    }
    found.duplicates = matching::duplicates(&found.ranks);
    found.ranks.sort();
    found
}

/// The local rank a process claims and the variable that says so: `NUMAPLAN_LOCAL_RANK`
/// (set by exec and bind), else the first launcher variable `bind` reads.
fn claim_of(pid: u32) -> Option<(u32, String)> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let vars: BTreeMap<&[u8], &[u8]> = environ
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let eq = kv.iter().position(|&b| b == b'=')?;
            Some((&kv[..eq], &kv[eq + 1..]))
        })
        .collect();
    std::iter::once(launcher::NUMAPLAN_LOCAL_RANK)
        .chain(launcher::local_rank_variables())
        .find_map(|var| {
            let rank = std::str::from_utf8(vars.get(var.as_bytes())?)
                .ok()?
                .parse()
                .ok()?;
            Some((rank, var.to_string()))
        })
}

/// `skipped process 4711 (mpiexec -n 2 ...): why`, one line each.
fn skipped_lines(found: &Found) -> Vec<String> {
    found
        .skipped
        .iter()
        .map(|(pid, command, why)| format!("skipped process {pid} ({command}): {why}\n"))
        .collect()
}

/// Processes whose command line contains `name`, other than numaplan's own (this `verify`, an
/// `exec` supervisor whose arguments name the program): those are not ranks. Each with its
/// parent, its command line (shortened) and the local rank it claims.
fn find_processes(name: &str) -> Vec<Candidate> {
    let numaplan = std::fs::read_link("/proc/self/exe").ok();
    let is_numaplan = |pid: u32| {
        numaplan.is_some() && std::fs::read_link(format!("/proc/{pid}/exe")).ok() == numaplan
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Candidate> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid: &u32| !is_numaplan(pid))
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let command: String = String::from_utf8_lossy(&raw)
                .trim_end_matches('\0')
                .replace('\0', " ");
            if !command.contains(name) {
                return None;
            }
            let (_, ppid) = verify::stat(pid)?;
            Some(Candidate {
                pid,
                ppid,
                command: shorten(&command),
                claim: claim_of(pid),
            })
        })
        .collect();
    found.sort_by_key(|c| c.pid);
    found
}

/// A command line cut to 60 characters for a message.
fn shorten(command: &str) -> String {
    match command.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &command[..at]),
        None => command.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::counters::Counts;

    /// What `--counters` prints once a machine has counted (this one has no PMU to show it
    /// live): a share per rank, in the order of the ranks; a rank without loads says so.
    #[test]
    fn counted_ranks_read_as_remote_shares() {
        let ranks = [(0, 4711), (1, 4712), (2, 4713)];
        let counts = [
            (
                4711,
                Counts {
                    loads: 1_804_331,
                    misses: 259_486,
                },
            ),
            (
                4712,
                Counts {
                    loads: 1_000,
                    misses: 0,
                },
            ),
        ];
        let counted = Counted {
            seconds: 2.0,
            counts: Ok(counts.into_iter().collect()),
        };
        insta::assert_snapshot!(counters_text(&ranks, Some(&counted)));
        let report = serde_json::to_string_pretty(&CountersReport::new(&ranks, &counted))
            .expect("serializes");
        insta::assert_snapshot!(report);
        let refused = Counted {
            seconds: 2.0,
            counts: Err(Unavailable("the kernel has no perf_event_open".into())),
        };
        assert_eq!(
            counters_text(&ranks, Some(&refused)),
            "counters: unavailable: the kernel has no perf_event_open; pages only\n"
        );
        assert!(CountersReport::new(&ranks, &refused).ranks.is_empty());
        assert_eq!(counters_text(&ranks, None), "");
    }
}
