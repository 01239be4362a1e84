//! `Job`: the ranks `exec` started, and the one owner of their processes until they are
//! reaped. Whoever observes the ranks meanwhile (`--verify`, `--watch`) reads them through
//! `ranks()`; `wait` supervises them to the end. A job dropped without `wait` (an error between
//! start and supervision) kills its ranks' process groups and reaps them: nothing outlives it.

use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::time::Duration;

use super::supervise::{Running, supervise};
use super::{ExecError, relay};
use crate::ids::RankPid;
use crate::sys::pgrp;

pub struct Job {
    running: Vec<Running>,
    /// Until the job ends: the guard kills every rank's group should numaplan die.
    guard: Option<pgrp::Guard>,
    /// The thread that relays the ranks' output, and how to tell it they have all exited.
    relays: Option<(relay::Relays, relay::Stop)>,
    /// Between TERM and KILL when stopping ranks.
    grace: Duration,
}

impl Job {
    pub(super) fn new(
        running: Vec<Running>,
        guard: pgrp::Guard,
        relays: relay::Relays,
        stop: relay::Stop,
        grace: Duration,
    ) -> Job {
        Job {
            running,
            guard: Some(guard),
            relays: Some((relays, stop)),
            grace,
        }
    }

    /// Every rank's local rank and process, in rank order.
    pub fn ranks(&self) -> Vec<RankPid> {
        self.running
            .iter()
            .map(|r| RankPid {
                rank: r.local_rank,
                pid: r.pid,
            })
            .collect()
    }

    /// How the rank with this pid ended, if it has (it stays unreaped, and supervision keeps
    /// its status).
    pub fn ended(&mut self, pid: u32) -> Option<ExitStatus> {
        let r = self.running.iter_mut().find(|r| r.pid == pid)?;
        if r.status.is_none() {
            r.status = pgrp::ended(pid).ok().flatten();
        }
        r.status
    }

    /// Supervises the ranks until every one has exited: the first failure, `stopped_by` (a
    /// failure found before supervision), or what `outside` returns at any turn (a check that
    /// stops the job) stops the others. Then ends the guard, reaps the ranks, drains their
    /// output and says on `report` which ranks' output a leftover process held open. `E` is the
    /// caller's error type, which an `ExecError` converts into.
    pub fn wait<E: From<ExecError>>(
        mut self,
        stopped_by: Option<E>,
        outside: &dyn Fn() -> Option<E>,
        report: &mut dyn std::io::Write,
    ) -> Result<(), E> {
        let outcome = self.supervise(stopped_by, outside);
        self.end(report);
        outcome
    }

    /// `wait`'s first half: supervises the ranks until every one has exited.
    pub fn supervise<E: From<ExecError>>(
        &mut self,
        stopped_by: Option<E>,
        outside: &dyn Fn() -> Option<E>,
    ) -> Result<(), E> {
        supervise(&mut self.running, self.grace, stopped_by, outside)
    }

    /// `wait`'s second half, once the ranks have exited: ends the job and says on `report`
    /// which ranks' output a leftover process held open.
    pub fn end(mut self, report: &mut dyn std::io::Write) {
        report_held_open(self.finish(), report);
    }

    /// Ends the job: the guard first (until it has ended, no rank is reaped, so no group id it
    /// holds can be another process's), then every rank reaped and the relay drained. Returns
    /// the streams a leftover process still held open.
    fn finish(&mut self) -> Vec<(u32, relay::Stream)> {
        if let Some(guard) = self.guard.take() {
            guard.finish();
            for r in &self.running {
                pgrp::reap(r.pid);
            }
        }
        match self.relays.take() {
            Some((relays, stop)) => {
                stop.now();
                relays.join()
            }
            None => Vec::new(),
        }
    }
}

impl Drop for Job {
    /// A job never waited for: its ranks are killed, then reaped.
    fn drop(&mut self) {
        if self.guard.is_some() {
            for r in &self.running {
                pgrp::signal(r.pid, libc::SIGKILL);
            }
        }
        self.finish();
    }
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
