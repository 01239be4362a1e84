//! `numaplan exec`: start the plan's ranks on this node, each bound (CPU affinity and memory
//! policy) in the child before `exec`, supervise them like torchrun, and verify bindings from
//! `/proc`. Imports only `plan`, `ids`, `cpuset` (and `spec`'s `MemPolicy` enum).

pub mod error;
mod launch;
mod node;
pub mod relay;
mod start;
mod supervise;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

pub use error::{ExecError, NodeMismatch};
pub use launch::{ExecOptions, Launch, NodePlace, OutputMode, launches};
pub use node::{Force, NodeFacts, check_node};
use start::{prepare, start_all};
use supervise::{Running, short_status, supervise};
pub use supervise::{describe, exit_code};

use crate::cpuset::CpuSet;
use crate::ids::RankPid;
use crate::observe::{ObserveError, verify, watch};
use crate::plan::{MemoryBinding, Plan};
use crate::spec::MemPolicy;
use crate::sys::affinity::{Binding, Memory, MemoryMode};
use crate::sys::{process, signals};

/// Starts every rank bound, supervises until all have exited, and returns how the job ended.
/// `report` receives numaplan's own lines (the verification table, which rank failed).
pub fn run(
    plan: &Plan,
    opts: &ExecOptions,
    report: &mut dyn std::io::Write,
) -> Result<(), ExecError> {
    let launches = launches(plan, opts)?;
    if let OutputMode::LogDir { dir, .. } = &opts.output {
        std::fs::create_dir_all(dir).map_err(|source| ExecError::LogDir {
            path: dir.clone(),
            source,
        })?;
    }
    // Every rank's program, environment and binding before any starts: a program that is not
    // there or a CPU no mask can hold leaves nothing running.
    let mut preparer = process::Preparer::from_environment();
    let prepared = launches
        .iter()
        .zip(&plan.ranks)
        .map(|(launch, binding)| prepare(&mut preparer, launch, binding))
        .collect::<Result<Vec<_>, _>>()?;
    let stdin: OwnedFd = std::fs::File::open("/dev/null")
        .map_err(|source| ExecError::Syscall {
            what: "open /dev/null for the ranks' stdin",
            source,
        })?
        .into();
    signals::catch_signals().map_err(|source| ExecError::Syscall {
        what: "install signal handlers",
        source,
    })?;
    let guard = process::Guard::start(launches.len()).map_err(|source| ExecError::Syscall {
        what: "start the process that guards the ranks' process groups",
        source,
    })?;
    let (mut running, outputs, mut stopped_by) =
        start_all(&launches, plan, &prepared, &stdin, &guard, &opts.output);
    // The relay starts once every rank is running: forking a process whose threads keep
    // touching memory makes every fork pay copy-on-write faults for them (64 ranks: 13,000
    // faults and 55 ms). A rank that fills its pipe before then waits a moment.
    let stop = relay::Stop::default();
    let relays = relay::start(outputs, stop.clone());
    let mut first = None;
    if stopped_by.is_none() && opts.verify {
        let (table, mismatch) = verify_started(plan, opts, &mut running, report);
        (first, stopped_by) = (Some(table), mismatch);
    }
    let outcome = match (&opts.watch, first) {
        (Some(watching), Some(first)) if stopped_by.is_none() => {
            supervise_watched(plan, opts, watching, &first, &mut running, report)
        }
        _ => supervise(&mut running, opts.grace, stopped_by),
    };
    // The guard first: until it has ended, no rank is reaped, so no group id it holds can be
    // another process's.
    guard.finish();
    for r in &running {
        process::reap(r.pid);
    }
    stop.now();
    report_held_open(relays.join(), report);
    outcome
}

/// Supervises the ranks while a thread watches them (`--watch`), its lines on `report` as they
/// come, the watch's summary at the end.
fn supervise_watched(
    plan: &Plan,
    opts: &ExecOptions,
    watching: &watch::WatchOptions,
    first: &verify::Table,
    running: &mut [Running],
    report: &mut dyn std::io::Write,
) -> Result<(), ExecError> {
    let pids = pids_of(running);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (outcome, summary) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let stop = || done.load(std::sync::atomic::Ordering::Relaxed);
            let mut err = std::io::stderr();
            use std::io::Write as _;
            let mut print = |c: &watch::Change, at: Duration| {
                let _ = writeln!(err, "numaplan: +{:.1}s {}", at.as_secs_f64(), c.text());
            };
            watch::run(
                plan,
                &pids,
                first,
                watching,
                opts.min_local,
                &stop,
                &mut print,
            )
        });
        let outcome = supervise(running, opts.grace, None);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let summary = watcher.join().map(|w| w.summary());
        (outcome, summary)
    });
    if let Ok(summary) = summary {
        let _ = writeln!(report, "numaplan: {summary}");
    }
    outcome
}

fn pids_of(running: &[Running]) -> Vec<RankPid> {
    running
        .iter()
        .map(|r| RankPid {
            rank: r.local_rank,
            pid: r.pid,
        })
        .collect()
}

/// `--verify`: reads every started rank's binding back from /proc and reports the table; the
/// error that stops the job when a binding differs.
fn verify_started(
    plan: &Plan,
    opts: &ExecOptions,
    running: &mut [Running],
    report: &mut dyn std::io::Write,
) -> (verify::Table, Option<ExecError>) {
    let pids = pids_of(running);
    let mut table = verify::check(plan, &pids, opts.min_local);
    // A rank that ended before it was read (a short job) shows no binding: report how it
    // ended instead of a mismatch; its status is kept for supervision. An exiting rank
    // releases its memory (empty numa_maps) a moment before wait reports it, so a rank
    // with problems gets up to 100 ms to finish exiting.
    let patience = Instant::now() + Duration::from_millis(100);
    for r in running.iter_mut() {
        if !table.has_problems(r.pid) {
            continue;
        }
        loop {
            match process::ended(r.pid) {
                Ok(Some(status)) => {
                    r.status = Some(status);
                    table.exited(r.pid, short_status(status));
                    break;
                }
                Ok(None) if Instant::now() < patience => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => break,
            }
        }
    }
    if plan.nodes > 1 {
        let place = &opts.place;
        let _ = writeln!(report, "node {} of {}:", place.node_rank, place.nodes);
    }
    let _ = report.write_all(table.render().as_bytes());
    let mismatch = (!table.ok()).then(|| {
        ExecError::Observe(ObserveError::Verify {
            mismatches: table.mismatches(),
        })
    });
    (table, mismatch)
}

/// Says which ranks' output a leftover process held open after they exited.
fn report_held_open(held: Vec<(u32, relay::Stream)>, report: &mut dyn std::io::Write) {
    let mut by_rank: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for (rank, stream) in held {
        by_rank.entry(rank).or_default().push(stream.name());
    }
    for (rank, streams) in by_rank {
        let _ = writeln!(
            report,
            "numaplan: rank {rank} exited, but a process it started outside its process group (a \
             daemon) still holds its {}; numaplan stopped relaying it",
            streams.join(" and ")
        );
    }
}

/// A rank's CPUs and memory policy as the binding syscalls take them: what exec's child applies
/// before `execve`, and `bind` before its own.
pub fn binding(cpus: &CpuSet, memory: &MemoryBinding) -> std::io::Result<Binding> {
    let mode = match memory.policy {
        MemPolicy::None => None,
        MemPolicy::Preferred => Some(MemoryMode::Preferred),
        MemPolicy::Bind => Some(MemoryMode::Bind),
        MemPolicy::Interleave => Some(MemoryMode::Interleave),
    };
    Binding::new(
        cpus,
        Memory {
            mode,
            nodes: &memory.nodes,
        },
    )
}
