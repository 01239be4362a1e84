//! `numaplan exec`: start the plan's ranks on this node, each bound (CPU affinity and memory
//! policy) in the child before `exec`, supervise them like torchrun, and verify bindings from
//! `/proc`. Imports only `plan`, `ids`, `cpuset` (and `spec`'s `MemPolicy` enum).

pub mod affinity;
pub mod counters;
pub mod error;
pub mod hostlist;
pub mod launcher;
pub mod local_rank;
pub mod matching;
pub mod numa_maps;
pub mod process;
pub mod relay;
pub mod replaced;
pub mod verify;
pub mod visible;
pub mod watch;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use affinity::Binding;
pub use error::{ExecError, NodeMismatch};

use crate::cpuset::CpuSet;
use crate::plan::{MachineShape, Plan, RankBinding};

/// Where the node sits in a multi-node job, decided by `app` from flags or Slurm's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePlace {
    pub node_rank: u32,
    pub nodes: u32,
    pub master_addr: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Each line of a rank's stdout/stderr prefixed `[3] ` on numaplan's stdout/stderr.
    Prefixed,
    /// The ranks write straight to numaplan's stdout/stderr.
    Plain,
    /// `DIR/rank-3.out` and `.err`; `tee` also copies prefixed lines to the terminal.
    LogDir { dir: PathBuf, tee: bool },
}

#[derive(Clone, Debug)]
pub struct ExecOptions {
    pub place: NodePlace,
    pub output: OutputMode,
    /// Between TERM and KILL when stopping ranks.
    pub grace: Duration,
    pub verify: bool,
    /// With `verify`: the share of a rank's memory that must be on its planned nodes (0 to 1),
    /// as `verify::min_local` takes it.
    pub min_local: Option<f64>,
    /// With `verify`: keep watching the ranks while they run (`--watch`, `--repin`).
    pub watch: Option<watch::WatchOptions>,
    /// Appended to the plan's command for every rank (the command itself when the plan has
    /// none), byte for byte.
    pub extra_args: Vec<OsString>,
}

/// One rank's launch: what `exec` runs and what `--dry-run` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub local_rank: u32,
    /// Global rank (node rank x ranks per node + local rank): what output prefixes, log file
    /// names and error messages show, so that lines of a multi-node job name their rank.
    pub rank: u32,
    pub argv: Vec<OsString>,
    /// Set on top of numaplan's own environment.
    pub env: BTreeMap<String, String>,
}

/// The launches of every local rank: the plan's command and environment, plus the node's place
/// in a multi-node job (global `RANK`, `NODE_RANK`/`GROUP_RANK`, `MASTER_ADDR`).
pub fn launches(plan: &Plan, opts: &ExecOptions) -> Result<Vec<Launch>, ExecError> {
    if plan.command.is_empty() && opts.extra_args.is_empty() {
        return Err(ExecError::NoCommand { spec: true });
    }
    if opts.place.nodes != plan.nodes {
        return Err(ExecError::NodeCount {
            plan: plan.nodes,
            job: opts.place.nodes,
        });
    }
    if opts.place.node_rank >= opts.place.nodes {
        return Err(ExecError::NodeRank {
            node_rank: opts.place.node_rank,
            nodes: opts.place.nodes,
        });
    }
    Ok(plan
        .ranks
        .iter()
        .map(|r| {
            let mut env = r.env.clone();
            // Which rank it is, for `verify --match` and a nested `numaplan bind`.
            env.insert(
                launcher::NUMAPLAN_LOCAL_RANK.into(),
                r.local_rank.to_string(),
            );
            let node = opts.place.node_rank;
            let rank = node * plan.ranks_per_node + r.local_rank;
            if plan.nodes > 1 {
                env.insert("RANK".into(), rank.to_string());
                env.insert("NODE_RANK".into(), node.to_string());
                env.insert("GROUP_RANK".into(), node.to_string());
                env.insert("MASTER_ADDR".into(), opts.place.master_addr.clone());
            }
            let mut argv: Vec<OsString> = plan.command.iter().map(OsString::from).collect();
            argv.extend(opts.extra_args.iter().cloned());
            Launch {
                local_rank: r.local_rank,
                rank,
                argv,
                env,
            }
        })
        .collect())
}

/// What `exec` knows of the node it runs on, read by `app` from `/proc` and `/sys`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    pub host: String,
    /// Counted as the generated launchers count (`/sys`): CPUs, NUMA nodes, GPUs.
    pub shape: MachineShape,
    /// This process's CPU affinity.
    pub allowed: CpuSet,
    /// `/sys/devices/system/cpu/online`.
    pub online_cpus: CpuSet,
    /// `/sys/devices/system/node/online`.
    pub online_nodes: CpuSet,
}

/// Refuses a plan this node cannot run: a machine of another shape than the plan's topology
/// (unless `force`), or `ranks` (exec: all of the node's; bind: its own) on CPUs this machine
/// lacks or this process may not use, or memory nodes the kernel does not have.
pub fn check_node(
    plan: &Plan,
    ranks: &[RankBinding],
    node: &NodeFacts,
    force: Force,
) -> Result<(), ExecError> {
    let refuse = |why: NodeMismatch, detail: String| ExecError::NotThisNode {
        host: node.host.clone(),
        detail,
        why,
    };
    let differences = plan.machine.differences(&node.shape);
    if !differences.is_empty() && force == Force::No {
        return Err(refuse(
            NodeMismatch::Shape,
            format!(
                "it has {}; it does not look like topology `{}`",
                differences.join("; "),
                plan.topology
            ),
        ));
    }
    for r in ranks {
        let missing = r.cpus.difference(&node.allowed);
        let absent = missing.difference(&node.online_cpus);
        if !absent.is_empty() {
            return Err(refuse(
                NodeMismatch::CpusAbsent,
                format!(
                    "rank {} is planned on CPUs {}, and CPUs {absent} do not exist here (this machine has CPUs {})",
                    r.local_rank, r.cpus, node.online_cpus
                ),
            ));
        }
        if !missing.is_empty() {
            return Err(refuse(
                NodeMismatch::CpusNotAllowed,
                format!(
                    "rank {} is planned on CPUs {}, and CPUs {missing} are outside this process's affinity (it may use CPUs {}: a taskset, cgroup cpuset, Slurm step or MPI binding narrows it)",
                    r.local_rank, r.cpus, node.allowed
                ),
            ));
        }
        for n in &r.memory.nodes {
            if !node.online_nodes.contains(n.0) {
                return Err(refuse(
                    NodeMismatch::MemoryNode,
                    format!(
                        "rank {} binds memory to NUMA node {n}, which this node does not have (online: {})",
                        r.local_rank, node.online_nodes
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether to start on a node of another shape than the plan's topology (`--force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Force {
    No,
    Yes,
}

/// A started rank.
struct Running {
    local_rank: u32,
    /// Global rank, for messages.
    rank: u32,
    /// Also its process group's id.
    pid: u32,
    status: Option<ExitStatus>,
}

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
    affinity::catch_signals().map_err(|source| ExecError::Syscall {
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

/// How many forked ranks may wait to be confirmed (each holds a pipe) before the oldest is.
const UNCONFIRMED: usize = 32;

/// Forks every rank, one after another from this thread, never from helper threads: the kernel
/// sends PR_SET_PDEATHSIG when the *thread* that forked a rank exits, so a rank forked from a
/// short-lived thread would be killed as soon as that thread ends. A rank's start is confirmed
/// (it reached its program) after later ranks are forked, so that they start in parallel.
/// Returns the ranks started, their output pipes, and the error that stops the job when a
/// rank could not start: the ranks already running are then stopped as a failing rank stops
/// them.
fn start_all(
    launches: &[Launch],
    plan: &Plan,
    prepared: &[process::Prepared],
    stdin: &OwnedFd,
    guard: &process::Guard,
    output: &OutputMode,
) -> (Vec<Running>, Vec<relay::Output>, Option<ExecError>) {
    let mut running = Vec::new();
    let mut pipes = Vec::new();
    let mut unconfirmed = std::collections::VecDeque::new();
    let mut failure = None;
    let confirm = |(launch, started): (&Launch, process::Started), failure: &mut Option<_>| {
        if let Err((step, source)) = started.confirm() {
            let binding = &plan.ranks[launch.local_rank as usize];
            failure.get_or_insert(start_failed(launch, binding, step, source));
        }
    };
    for (launch, rank) in launches.iter().zip(prepared) {
        let started = outputs(launch, output).and_then(|(streams, relayed)| {
            let streams = process::Streams {
                stdin,
                stdout: streams.0,
                stderr: streams.1,
            };
            let started =
                process::start(rank, streams).map_err(|source| spawn_failed(launch, source))?;
            pipes.extend(relayed);
            Ok(started)
        });
        let started = match started {
            Ok(started) => started,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        running.push(Running {
            local_rank: launch.local_rank,
            rank: launch.rank,
            pid: started.pid,
            status: None,
        });
        let watched = guard.watch(started.pid);
        unconfirmed.push_back((launch, started));
        if let Err(source) = watched {
            failure = Some(ExecError::Syscall {
                what: "tell the guard a rank's process group",
                source,
            });
            break;
        }
        if unconfirmed.len() > UNCONFIRMED {
            confirm(unconfirmed.pop_front().expect("not empty"), &mut failure);
            if failure.is_some() {
                break; // no more ranks once one could not start
            }
        }
    }
    for pending in unconfirmed {
        confirm(pending, &mut failure);
    }
    (running, pipes, failure)
}

/// The rank's program, environment and binding, ready to fork.
fn prepare(
    preparer: &mut process::Preparer,
    launch: &Launch,
    binding: &RankBinding,
) -> Result<process::Prepared, ExecError> {
    let bind = Binding::new(&binding.cpus, &binding.memory)
        .map_err(|source| bind_failed(launch, binding, source))?;
    preparer
        .prepare(&launch.argv, &launch.env, bind)
        .map_err(|source| spawn_failed(launch, source))
}

/// A rank that was forked and did not reach its program: the step that failed, as an error.
fn start_failed(
    launch: &Launch,
    binding: &RankBinding,
    step: process::Step,
    source: std::io::Error,
) -> ExecError {
    match step {
        process::Step::Bind => bind_failed(launch, binding, source),
        process::Step::Setup | process::Step::Exec => spawn_failed(launch, source),
    }
}

fn bind_failed(launch: &Launch, binding: &RankBinding, source: std::io::Error) -> ExecError {
    ExecError::Bind {
        rank: launch.rank,
        cpus: binding.cpus.to_string(),
        source,
    }
}

fn spawn_failed(launch: &Launch, source: std::io::Error) -> ExecError {
    ExecError::Spawn {
        rank: launch.rank,
        program: launch.argv[0].to_string_lossy().into_owned(),
        source,
    }
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

fn pids_of(running: &[Running]) -> Vec<(u32, u32)> {
    running.iter().map(|r| (r.local_rank, r.pid)).collect()
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
    let mismatch = (!table.ok()).then(|| ExecError::Verify {
        mismatches: table.mismatches(),
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

/// Where a rank's output goes: numaplan's own streams, or pipes to the relay with (for
/// `--tee`) a log file each, or log files only. Returns stdout and stderr, and the pipes to
/// relay.
fn outputs(
    launch: &Launch,
    output: &OutputMode,
) -> Result<((process::Sink, process::Sink), Vec<relay::Output>), ExecError> {
    use process::Sink;
    let open = |dir: &std::path::Path, stream: relay::Stream| {
        let path = dir.join(format!("rank-{}.{}", launch.rank, stream.ext()));
        std::fs::File::create(&path).map_err(|source| ExecError::LogDir { path, source })
    };
    let piped = |copies: [Option<std::fs::File>; 2]| {
        let mut sinks = Vec::new();
        let mut relayed = Vec::new();
        for (stream, copy) in [relay::Stream::Out, relay::Stream::Err]
            .into_iter()
            .zip(copies)
        {
            let (pipe, sink) = process::pipe().map_err(|source| ExecError::Syscall {
                what: "create a pipe for a rank's output",
                source,
            })?;
            sinks.push(Sink::Fd(sink));
            relayed.push(relay::Output {
                rank: launch.rank,
                stream,
                pipe,
                copy,
            });
        }
        let err = sinks.pop().expect("two sinks");
        let out = sinks.pop().expect("two sinks");
        Ok(((out, err), relayed))
    };
    let (out, err) = (relay::Stream::Out, relay::Stream::Err);
    match output {
        OutputMode::Plain => Ok(((Sink::Inherit, Sink::Inherit), Vec::new())),
        OutputMode::Prefixed => piped([None, None]),
        OutputMode::LogDir { dir, tee: true } => {
            piped([Some(open(dir, out)?), Some(open(dir, err)?)])
        }
        OutputMode::LogDir { dir, tee: false } => Ok((
            (
                Sink::Fd(open(dir, out)?.into()),
                Sink::Fd(open(dir, err)?.into()),
            ),
            Vec::new(),
        )),
    }
}

fn rank_failed(r: &Running, status: ExitStatus) -> ExecError {
    ExecError::RankFailed {
        rank: r.rank,
        how: describe(status),
        code: exit_code(status),
    }
}

/// `0`, `3`, `SIGKILL`: how a process ended, in a table cell.
fn short_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => affinity::signal_name(s),
        _ => "?".into(),
    }
}

/// Waits for every rank. The first failure (or `stopped_by`, a failure before supervision)
/// stops the others (TERM, then KILL after `grace`); a signal to numaplan is forwarded to
/// every rank's process group.
fn supervise(
    running: &mut [Running],
    grace: Duration,
    stopped_by: Option<ExecError>,
) -> Result<(), ExecError> {
    // A rank reaped before supervision (during `--verify`) may already have failed.
    let mut failure = stopped_by.or_else(|| {
        running
            .iter()
            .find_map(|r| r.status.filter(|s| !s.success()).map(|s| rank_failed(r, s)))
    });
    let mut kill_at: Option<Instant> = None;
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(signal) = affinity::take_signal() {
            for r in running.iter().filter(|r| r.status.is_none()) {
                process::signal_group(r.pid, signal);
            }
            if failure.is_none() {
                failure = Some(ExecError::Interrupted { signal });
            }
            kill_at.get_or_insert(Instant::now() + grace);
        }
        for r in running.iter_mut().filter(|r| r.status.is_none()) {
            if let Ok(Some(status)) = process::ended(r.pid) {
                r.status = Some(status);
                pause = Duration::from_micros(200);
                if !status.success() && failure.is_none() {
                    failure = Some(rank_failed(r, status));
                }
            }
        }
        let live: Vec<u32> = running
            .iter()
            .filter(|r| r.status.is_none())
            .map(|r| r.pid)
            .collect();
        if live.is_empty() {
            break;
        }
        if failure.is_some() && kill_at.is_none() {
            for &pid in &live {
                process::signal_group(pid, libc::SIGTERM);
            }
            kill_at = Some(Instant::now() + grace);
        }
        if kill_at.is_some_and(|t| Instant::now() >= t) {
            for &pid in &live {
                process::signal_group(pid, libc::SIGKILL);
            }
        }
        // Poll fast while things happen (a short job ends within milliseconds), then back off
        // to 50 ms for long-running ranks.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    // Whatever a rank left running in its process group (a background child) goes too.
    for r in running.iter() {
        process::signal_group(r.pid, libc::SIGKILL);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `exited with status 3`, `was killed by SIGKILL`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by {}", affinity::signal_name(s)),
        _ => "ended".into(),
    }
}

/// The shell's convention: the status, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
