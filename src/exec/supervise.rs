//! Supervising started ranks like torchrun: wait for all, stop the rest when one fails or
//! numaplan is signalled, and say how each ended.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::ExecError;
use crate::sys::{pgrp, signals};

/// A started rank.
pub(super) struct Running {
    pub(super) local_rank: u32,
    /// Global rank, for messages.
    pub(super) rank: u32,
    /// Also its process group's id.
    pub(super) pid: u32,
    pub(super) status: Option<ExitStatus>,
}

fn rank_failed(r: &Running, status: ExitStatus) -> ExecError {
    ExecError::RankFailed {
        rank: r.rank,
        status,
    }
}

/// Waits for every rank. The first failure (or `stopped_by`, a failure before supervision, or
/// what `outside` returns at any turn) stops the others (TERM, then KILL after `grace`); a
/// signal to numaplan is forwarded to every rank's process group. `E` is the caller's error:
/// a failure outside the launcher (a check of the ranks) stops the job as a rank's does.
pub(super) fn supervise<E: From<ExecError>>(
    running: &mut [Running],
    grace: Duration,
    stopped_by: Option<E>,
    outside: &dyn Fn() -> Option<E>,
) -> Result<(), E> {
    // A rank whose end was seen before supervision (during `--verify`) may already have failed.
    let mut failure: Option<E> = stopped_by.or_else(|| {
        running.iter().find_map(|r| {
            r.status
                .filter(|s| !s.success())
                .map(|s| rank_failed(r, s).into())
        })
    });
    let mut kill_at: Option<Instant> = None;
    let mut pause = Duration::from_micros(200);
    let exits = pgrp::Exits::open(running.iter().filter(|r| r.status.is_none()).map(|r| r.pid));
    loop {
        if let Some(signal) = signals::take_signal() {
            for r in running.iter().filter(|r| r.status.is_none()) {
                pgrp::signal(r.pid, signal);
            }
            if failure.is_none() {
                failure = Some(ExecError::Interrupted { signal }.into());
            }
            kill_at.get_or_insert(Instant::now() + grace);
        }
        for r in running.iter_mut().filter(|r| r.status.is_none()) {
            if let Ok(Some(status)) = pgrp::ended(r.pid) {
                r.status = Some(status);
                pause = Duration::from_micros(200);
                if !status.success() && failure.is_none() {
                    failure = Some(rank_failed(r, status).into());
                }
            }
        }
        if failure.is_none() {
            failure = outside();
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
                pgrp::signal(pid, libc::SIGTERM);
            }
            kill_at = Some(Instant::now() + grace);
        }
        if kill_at.is_some_and(|t| Instant::now() >= t) {
            for &pid in &live {
                pgrp::signal(pid, libc::SIGKILL);
            }
        }
        // Until a rank ends or a signal comes: at first briefly, for the checks `outside`
        // makes while ranks start, then at most 50 ms for long-running ranks.
        exits.wait(&live, pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    // Whatever a rank left running in its process group (a background child) goes too.
    for r in running.iter() {
        pgrp::signal(r.pid, libc::SIGKILL);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
