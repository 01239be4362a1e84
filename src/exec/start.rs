//! Starting the ranks: each one's program, environment and binding prepared before any
//! starts, then started one after another with its output sent where `OutputMode` says.

use std::os::fd::OwnedFd;

use super::supervise::Running;
use super::{ExecError, Launch, OutputMode, relay};
use crate::cpuset::CpuSet;
use crate::plan::{MemoryBinding, Plan, RankBinding};
use crate::spec::MemPolicy;
use crate::sys::affinity::{Binding, Memory, MemoryMode};
use crate::sys::{pgrp, pipe, process};

/// Starts every rank, one after another from this thread, never from helper threads: the kernel
/// sends PR_SET_PDEATHSIG when the *thread* that started a rank exits, so a rank started from
/// a short-lived thread would be killed as soon as that thread ends. `process::start` returns
/// once the child has exec'd, so the ranks' programs run in parallel while later ones start.
/// Returns the ranks started, their output pipes, and the error that stops the job when a
/// rank could not start: the ranks already running are then stopped as a failing rank stops
/// them (and the one that failed is reaped with them).
pub(super) fn start_all(
    launches: &[Launch],
    plan: &Plan,
    prepared: &[process::Prepared],
    stdin: &OwnedFd,
    guard: &pgrp::Guard,
    output: &OutputMode,
) -> (Vec<Running>, Vec<relay::Output>, Option<ExecError>) {
    let mut running = Vec::new();
    let mut pipes = Vec::new();
    let mut stack = match process::ChildStack::new() {
        Ok(stack) => stack,
        Err(source) => {
            let what = "map the stack the ranks start on";
            return (running, pipes, Some(ExecError::Syscall { what, source }));
        }
    };
    for ((launch, rank), binding) in launches.iter().zip(prepared).zip(&plan.ranks) {
        let started = outputs(launch, output).and_then(|(streams, relayed)| {
            let streams = process::Streams {
                stdin,
                stdout: streams.0,
                stderr: streams.1,
            };
            let started = process::start(rank, streams, &mut stack)
                .map_err(|source| spawn_failed(launch, source))?;
            pipes.extend(relayed);
            Ok(started)
        });
        let started = match started {
            Ok(started) => started,
            Err(e) => return (running, pipes, Some(e)),
        };
        running.push(Running {
            local_rank: launch.local_rank,
            rank: launch.rank,
            pid: started.pid,
            status: None,
        });
        if let Err(source) = guard.watch(started.pid) {
            let what = "tell the guard a rank's process group";
            return (running, pipes, Some(ExecError::Syscall { what, source }));
        }
        if let Err(failed) = started.confirm() {
            // No more ranks once one could not start.
            return (running, pipes, Some(start_failed(launch, binding, failed)));
        }
    }
    (running, pipes, None)
}

/// The rank's program, environment and binding, ready to start.
pub(super) fn prepare(
    preparer: &mut process::Preparer,
    launch: &Launch,
    binding: &RankBinding,
    check: process::Check,
) -> Result<process::Prepared, ExecError> {
    let bind = self::binding(&binding.cpus, &binding.memory)
        .map_err(|source| ExecError::bind(launch.rank, binding, None, source))?;
    preparer
        .prepare(&launch.argv, &launch.env, bind, check)
        .map_err(|source| spawn_failed(launch, source))
}

/// Whether this node lets the ranks have their memory policies, tried before any rank starts
/// (`Binding::memory_allowed`, on a thread that then ends) with the first rank's that has one:
/// a container's seccomp profile refuses them all alike. The error is the one that rank's start
/// would have failed with.
pub fn memory_probe(ranks: &[RankBinding]) -> Result<(), ExecError> {
    let Some(r) = ranks.iter().find(|r| r.memory.policy != MemPolicy::None) else {
        return Ok(());
    };
    let failed = |call, source| ExecError::bind(r.local_rank, r, call, source);
    binding(&r.cpus, &r.memory)
        .map_err(|e| failed(None, e))?
        .memory_allowed()
        .map_err(|refused| failed(Some(refused.call), refused.error))
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

/// A rank that was started and did not reach its program: the step that failed, as an error.
fn start_failed(launch: &Launch, binding: &RankBinding, failed: process::Failed) -> ExecError {
    match failed.step {
        process::Step::Bind => ExecError::bind(launch.rank, binding, failed.call, failed.error),
        process::Step::ReadBack => ExecError::ReadBack {
            rank: launch.rank,
            planned_cpus: binding.cpus.clone(),
            actual_cpus: failed.read_back.as_ref().and_then(|r| r.cpus()),
            planned_memory: binding.memory.numa_maps(),
            actual_memory: failed.read_back.as_ref().and_then(|r| r.memory()),
        },
        process::Step::Setup | process::Step::Exec => spawn_failed(launch, failed.error),
    }
}

fn spawn_failed(launch: &Launch, source: std::io::Error) -> ExecError {
    ExecError::Spawn {
        rank: launch.rank,
        program: launch.argv[0].to_string_lossy().into_owned(),
        source,
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
            let (pipe, sink) = pipe::pipe().map_err(|source| ExecError::Syscall {
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
