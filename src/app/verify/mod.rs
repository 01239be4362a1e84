//! `numaplan verify`: which processes are the plan's ranks (`--pids`, `--match`), what `/proc`
//! shows of them against the plan, then `--watch`, `--repin` and `--counters`, as text or JSON.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use super::input::{self, PlanMachine, Request};
use super::write::{emit, json};
use crate::cli::{ReportFormat, VerifyArgs, WatchArgs};
use crate::error::Error;
use crate::ids::RankPid;
use crate::observe::counters::{self, Counted};
use crate::observe::matching::{self, Found};
use crate::observe::{ObserveError, find, verify, watch};
use crate::plan::{MemoryBinding, Plan};
use crate::plan_file;
use crate::rank::LocalRankChoice;
use crate::spec::{Engine, MemPolicy};
use crate::sys::{pipe, proc};

mod counters_report;
mod report;

use counters_report::counters_text;
pub(crate) use report::{VerifyReport, WatchLine};

pub fn verify(args: &VerifyArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let request = Request {
        arg: Some(&args.input),
        topology: args.topology.as_ref(),
        machine: PlanMachine::NotNeeded,
        overrides: &[],
        needs_command: false,
    };
    let plan = input::this_nodes(&request, args.group.as_deref())?.plan;
    let found = ranks_of(args, &plan)?;
    // A rank marked as running without its memory policy by design is checked as it runs.
    let plan = as_run(plan, &found.without_memory);
    let plan = as_the_engine_binds(plan, &found.engine_workers);
    let ranked = found.ranks.clone();
    if ranked.is_empty() {
        let pattern = args.match_name.clone().unwrap_or_default();
        return Err(ObserveError::NoProcesses {
            pattern,
            skipped: found.skipped,
        }
        .into());
    }
    let min_local = args.watch.min_local;
    let mut table = verify::check(&plan, &ranked, min_local);
    verify::check_nic_variables(&mut table, &plan, &found.bound_in_process);
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
            skipped_lines(&found) + &table.render() + &counters_text(&ranked, counted.as_ref())
        }
        // JSON Lines under --watch: the report on one line, the events after it.
        ReportFormat::Json if watching => {
            serde_json::to_string(&VerifyReport::new(&table, &found, counted.as_ref(), &plan))
                .expect("invariant: reports serialize")
                + "\n"
        }
        ReportFormat::Json => json(&VerifyReport::new(&table, &found, counted.as_ref(), &plan)),
    };
    match emit(stdout, None, &text) {
        Err(Error::Stdout(e)) if watching && e.kind() == std::io::ErrorKind::BrokenPipe => {
            return Ok(());
        }
        written => written?,
    }
    let mut mismatched: BTreeSet<u32> = match watching {
        // The watch follows threads and memory from this reading on, repins included.
        true => table.mismatched_beyond_watch().collect(),
        false => table.mismatched_pids().collect(),
    };
    // A rank no process was found for counts once each (no pid to name it by).
    let missing = table.missing.len();
    if watching {
        match watch_after(args, &plan, &found, &table, stdout)? {
            Watched::Troubled(pids) => mismatched.extend(pids),
            // Its reader left (`| head -1`): there is nobody to tell more, and nothing failed.
            Watched::ReaderGone => return Ok(()),
        }
    }
    match (mismatched.len() + missing, table.unknown()) {
        (0, 0) => Ok(()),
        // Nothing found wrong, but not all known: not "as planned", and no mismatch either.
        (0, unknown) => Err(ObserveError::Unknown { ranks: unknown }.into()),
        (mismatches, _) => Err(ObserveError::Verify { mismatches }.into()),
    }
}

/// Which processes are the plan's ranks: by name (`--match`), one process alone
/// (`--process`), or the pids given.
fn ranks_of(args: &VerifyArgs, plan: &Plan) -> Result<Found, Error> {
    let plan_id = plan_file::id(plan);
    Ok(match (&args.match_name, args.process) {
        (Some(name), _) => matching::select(
            &find::matching(name, plan.ranks_per_node),
            &plan_id,
            plan.ranks_per_node,
            proc::effective_uid(),
        ),
        (None, Some(pid)) => {
            let local_rank = match args.local_rank {
                None => None,
                Some(LocalRankChoice::Number(n)) => Some(n),
                Some(LocalRankChoice::Gpu) => Some(rank_of_its_gpus(plan, pid)?),
            };
            find::alone(pid, local_rank, &plan_id, plan.ranks_per_node)?
        }
        (None, None) => find::given(&args.pids, &plan_id, plan.ranks_per_node)?,
    })
}

/// `--local-rank gpu`: the rank whose GPUs are those process `pid` sees, by the visibility
/// variables it started with (as `bind --local-rank gpu` finds its own).
fn rank_of_its_gpus(plan: &Plan, pid: u32) -> Result<u32, Error> {
    let env = proc::environ(pid).map_err(|_| ObserveError::NoSuchProcess {
        pid,
        flag: "--process",
    })?;
    Ok(crate::rank::visible::by_gpu(plan, &env)?.0)
}

/// How a watch of `verify` ended.
enum Watched {
    /// Its readings ran out or every rank exited: the pids of the ranks with a problem that
    /// stayed one.
    Troubled(Vec<u32>),
    /// Standard output's reader went away.
    ReaderGone,
}

/// `--watch` or `--repin` after the first reading (`first`): each change as it comes, the
/// summary at the end. A closed standard output (`| head -1`) ends it at once.
fn watch_after(
    args: &VerifyArgs,
    plan: &Plan,
    found: &Found,
    first: &verify::Table,
    stdout: &mut dyn Write,
) -> Result<Watched, Error> {
    let opts = watch::WatchOptions {
        hands_off: found.hands_off.clone(),
        ..watch_options(&args.watch)
    };
    let mut line = |c: &watch::Change, at: Duration| {
        let text = match args.format {
            ReportFormat::Text => format!("+{:.1}s {}\n", at.as_secs_f64(), c.text()),
            ReportFormat::Json => WatchLine::of(c, at).line(),
        };
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    };
    let reader_gone = || pipe::reader_gone(libc::STDOUT_FILENO);
    let min_local = args.watch.min_local;
    let seen = watch::run(
        plan,
        &found.ranks,
        first,
        &opts,
        min_local,
        &reader_gone,
        &mut line,
    );
    if reader_gone() {
        return Ok(Watched::ReaderGone);
    }
    let summary = match args.format {
        ReportFormat::Text => seen.summary() + "\n",
        ReportFormat::Json => WatchLine::summary(&seen).line(),
    };
    emit(stdout, None, &summary)?;
    Ok(Watched::Troubled(seen.troubled_pids().collect()))
}

pub(crate) fn watch_options(args: &WatchArgs) -> watch::WatchOptions {
    watch::WatchOptions {
        interval: Duration::from_secs_f64(args.interval.unwrap_or(1.0)),
        rounds: args.count,
        repin: args.repin,
        hands_off: Default::default(),
    }
}

/// `skipped process 4711 (mpiexec -n 2 ...): why`, a line each, and the ranks that run
/// without their memory policy by design.
fn skipped_lines(found: &Found) -> String {
    let skipped = found.skipped.iter().map(|s| format!("{s}\n"));
    let engines = found.engine_workers.iter().map(|(r, engine)| {
        let engine = engine.title();
        format!(
            "rank {} (pid {}) is {engine}'s worker of the rank's GPU, found by its title: \
             checked as {engine} binds it (docs/engines.md)\n",
            r.rank, r.pid
        )
    });
    let without = found.without_memory.iter().map(|r| {
        format!(
            "rank {} (pid {}) runs without its memory policy by design: refused where it \
             started, and the plan does not require it (W0217)\n",
            r.rank, r.pid
        )
    });
    skipped.chain(engines).chain(without).collect()
}

/// The plan as a serving engine binds the workers in `workers` (`--emit vllm|sglang`,
/// docs/engines.md): vLLM each to its rank's CPUs, SGLang each to the planned CPUs of its
/// rank's node (its node's CPUs within the server's, which `bind --all-ranks` makes every
/// rank's), and both its memory to that node (`numactl --membind`).
fn as_the_engine_binds(mut plan: Plan, workers: &[(RankPid, Engine)]) -> Plan {
    let planned = plan.ranks.clone();
    for (at, engine) in workers {
        let Some(rank) = plan.ranks.get_mut(at.rank as usize) else {
            continue;
        };
        let Some(node) = rank.numa_node else {
            continue;
        };
        if *engine == Engine::Sglang {
            rank.cpus = planned
                .iter()
                .filter(|r| r.numa_node == Some(node))
                .map(|r| &r.cpus)
                .collect();
        }
        rank.memory = MemoryBinding {
            policy: MemPolicy::Bind,
            nodes: vec![node],
            required: false,
        };
    }
    plan
}

/// The plan as the ranks in `without` run it: with no memory policy.
fn as_run(mut plan: Plan, without: &[RankPid]) -> Plan {
    for r in without {
        if let Some(rank) = plan.ranks.get_mut(r.rank as usize) {
            rank.memory = MemoryBinding {
                policy: MemPolicy::None,
                nodes: Vec::new(),
                required: true,
            };
        }
    }
    plan
}
