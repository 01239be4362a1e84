//! `numaplan verify`: which processes are the plan's ranks (`--pids`, `--match`), what `/proc`
//! shows of them against the plan, then `--watch`, `--repin` and `--counters`, as text or JSON.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use super::input::{PlanMachine, load_subject};
use super::{emit, json};
use crate::cli::{ReportFormat, VerifyArgs, WatchArgs};
use crate::error::Error;
use crate::exec::counters::{self, Counted};
use crate::exec::matching::{self, Candidate, Found};
use crate::exec::{ExecError, verify, watch};
use crate::plan::Plan;
use crate::sys::proc;
use crate::variables::NUMAPLAN_LOCAL_RANK;

mod counted;
mod report;

use counted::counters_text;
pub(crate) use report::{VerifyReport, WatchEvent};

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
    let vars = proc::environ(pid)?;
    std::iter::once(NUMAPLAN_LOCAL_RANK)
        .chain(crate::rank::local_rank_variables())
        .find_map(|var| Some((vars.get(var)?.parse().ok()?, var.to_string())))
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
    let numaplan = proc::exe("self");
    let is_numaplan = |pid: u32| numaplan.is_some() && proc::exe(&pid.to_string()) == numaplan;
    let mut found: Vec<Candidate> = proc::pids()
        .into_iter()
        .filter(|&pid| !is_numaplan(pid))
        .filter_map(|pid| {
            let command = proc::command_line(pid)?;
            if !command.contains(name) {
                return None;
            }
            let (_, ppid) = proc::stat(pid)?;
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
