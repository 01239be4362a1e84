//! What `exec` checks of the ranks it started, and when.
//!
//! - `--verify` checks the binding exec applied, in each rank before its program starts (the
//!   child reads its CPUs and memory policy back; a rank whose binding differs is not started,
//!   and nothing is left running), then prints the table of what was read back. Whatever a
//!   program does to its threads afterwards is the program's, not a failed start.
//! - `--watch` (and `--repin`, which watches) reads the running ranks from /proc from the first
//!   moment on and reports each change as a line; `--repin` puts threads back. A change never
//!   stops the job, unless `--stop-on-drift` says so (E0439); the job's exit status is the
//!   ranks' own.

use std::io::Write;
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::super::verify::{VerifyReport, WatchLine, watch_options};
use crate::cli::{ExecArgs, ReportFormat};
use crate::error::Error;
use crate::exec::{ExecOptions, Job};
use crate::observe::matching::Found;
use crate::observe::{ObserveError, verify, watch};
use crate::plan::Plan;
use crate::sys::pipe;

/// What `exec` checks of the ranks it started.
pub(super) struct Checks {
    /// `--verify`: each rank reads its binding back before its program starts.
    pub(super) verify: bool,
    /// The share of a rank's memory that must be on its planned nodes (0 to 1), as
    /// `verify::min_local` takes it.
    min_local: Option<f64>,
    /// Keep watching the ranks while they run (`--watch`, `--repin`).
    watch: Option<watch::WatchOptions>,
    /// `--stop-on-drift`: a change that stays a problem stops the job.
    stop_on_drift: bool,
    /// Text on stderr, or JSON Lines on stdout.
    format: ReportFormat,
}

impl Checks {
    /// The checks `args` ask for: `--watch` and `--repin` imply `--verify`. JSON Lines go to
    /// stdout, which the ranks' output then may not share (`--log-dir` without `--tee`).
    pub(super) fn of(args: &ExecArgs) -> Result<Checks, Error> {
        let watching = args.watch.watch || args.watch.repin;
        let checks = Checks {
            verify: args.verify || watching,
            min_local: args.watch.min_local,
            watch: watching.then(|| watch_options(&args.watch)),
            stop_on_drift: args.stop_on_drift,
            format: args.format,
        };
        if args.stop_on_drift && !watching {
            return Err(Error::Usage {
                message:
                    "`--stop-on-drift` stops the job on what a watch sees, and nothing watches"
                        .into(),
                help: "add `--watch` (or `--repin`)".into(),
            });
        }
        let json_lines = args.format == ReportFormat::Json && !args.dry_run;
        if json_lines && (!checks.verify || args.log_dir.is_none() || args.tee) {
            return Err(Error::Usage {
                message: "`exec --format json` writes the verification and the watch as JSON \
                          Lines on stdout, where the ranks' output would be mixed in"
                    .into(),
                help: json_lines_help(checks.verify, args),
            });
        }
        Ok(checks)
    }

    /// Where the checks' lines go, and its file descriptor.
    fn sink(&self) -> (Box<dyn Write + Send>, RawFd) {
        match self.format {
            ReportFormat::Text => (Box::new(std::io::stderr()), libc::STDERR_FILENO),
            ReportFormat::Json => (Box::new(std::io::stdout()), libc::STDOUT_FILENO),
        }
    }
}

/// What `exec --format json` lacks, and only that: a check to write (`--verify` or `--watch`),
/// the ranks' output sent to files (`--log-dir DIR`), or that output kept off the terminal
/// (`--tee`); or a dry run instead.
fn json_lines_help(verifying: bool, args: &ExecArgs) -> String {
    let mut needed = Vec::new();
    if !verifying {
        needed.push("add `--verify` or `--watch`");
    }
    match (&args.log_dir, args.tee) {
        (None, _) => needed.push("send the ranks' output to files with `--log-dir DIR`"),
        (Some(_), true) => needed.push("leave out `--tee`, which copies the ranks' output there"),
        (Some(_), false) => {}
    }
    format!(
        "{}; or use `--dry-run --format json`",
        needed.join(", and ")
    )
}

/// The job's ranks observed as `checks` say (the table of the bindings read back, then the
/// watch beside supervision), and supervised to the end: the job's outcome.
pub(super) fn observe_and_wait(
    plan: &Plan,
    opts: &ExecOptions,
    checks: &Checks,
    job: Job,
    report: &mut dyn Write,
) -> Result<(), Error> {
    let never = || None;
    let (mut sink, _) = checks.sink();
    if checks.verify {
        read_back_table(plan, opts, checks, &job, &mut sink);
    }
    match &checks.watch {
        None => job.wait(None, &never, report),
        Some(watching) => supervise_watched(plan, checks, watching, job, report),
    }
}

/// `--verify`'s table: every rank's binding as it read it back before its program started
/// (a rank whose binding differed was not started: `exec::start` failed).
fn read_back_table(
    plan: &Plan,
    opts: &ExecOptions,
    checks: &Checks,
    job: &Job,
    out: &mut dyn Write,
) {
    let table = verify::read_back(plan, &job.ranks());
    let text = match checks.format {
        ReportFormat::Text => {
            let place = &opts.place;
            plan.node_heading(place.node_rank, place.nodes) + &table.render()
        }
        ReportFormat::Json => {
            let found = Found {
                ranks: job.ranks(),
                ..Found::default()
            };
            serde_json::to_string(&VerifyReport::new(&table, &found, None, plan))
                .expect("invariant: reports serialize")
                + "\n"
        }
    };
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Supervises the ranks while a thread watches them (`--watch`): its lines as they come (text
/// on stderr, `numaplan: +1.2s ...`; or JSON Lines on stdout), the summary at the end. A
/// closed output ends the watch, not the job.
fn supervise_watched(
    plan: &Plan,
    checks: &Checks,
    watching: &watch::WatchOptions,
    mut job: Job,
    report: &mut dyn Write,
) -> Result<(), Error> {
    let pids = job.ranks();
    let first = verify::check(plan, &pids, checks.min_local);
    let done = AtomicBool::new(false);
    let drift: Mutex<Option<watch::Change>> = Mutex::new(None);
    let (mut sink, fd) = checks.sink();
    let format = checks.format;
    let (outcome, seen) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let stop = || done.load(Ordering::Relaxed) || pipe::reader_gone(fd);
            let mut line = |c: &watch::Change, at: Duration| {
                if checks.stop_on_drift && c.is_problem() {
                    drift.lock().expect("lock").get_or_insert_with(|| c.clone());
                }
                let text = match format {
                    ReportFormat::Text => {
                        format!("numaplan: +{:.1}s {}\n", at.as_secs_f64(), c.text())
                    }
                    ReportFormat::Json => WatchLine::of(c, at).line(),
                };
                let _ = sink.write_all(text.as_bytes());
                let _ = sink.flush();
            };
            let min_local = checks.min_local;
            watch::run(plan, &pids, &first, watching, min_local, &stop, &mut line)
        });
        let stopped = || {
            let change = drift.lock().expect("lock").take()?;
            Some(ObserveError::Drifted { change }.into())
        };
        let outcome = job.supervise(None, &stopped);
        done.store(true, Ordering::Relaxed);
        (outcome, watcher.join())
    });
    if let Ok(seen) = seen
        && !pipe::reader_gone(fd)
    {
        let (mut sink, _) = checks.sink();
        let summary = match format {
            ReportFormat::Text => format!("numaplan: {}\n", seen.summary()),
            ReportFormat::Json => WatchLine::summary(&seen).line(),
        };
        let _ = sink.write_all(summary.as_bytes());
    }
    job.end(report);
    outcome
}
