//! `numaplan exec`'s launcher: start the plan's ranks on this node, each bound (CPU affinity
//! and memory policy) in the child before `execve`, and supervise them like torchrun. `start`
//! returns a `Job` that owns the ranks' processes; observing them meanwhile (`--verify`,
//! `--watch`) is `observe`'s, composed by `app`.

mod error;
mod job;
mod launch;
mod node;
pub mod pod;
mod relay;
mod start;
mod status;
mod supervise;

use std::os::fd::OwnedFd;

pub use error::{ExecError, Input, NodeMismatch, Refusal, refusal_cause};
pub use job::Job;
pub use launch::{Check, ExecOptions, Launch, NodePlace, OutputMode, launches};
pub use node::{Force, NodeFacts, check_node, machine_shape};
pub use start::{binding, memory_probe};
use start::{prepare, start_all};
pub use status::{describe, exit_code, short_status};

use crate::plan::Plan;
use crate::sys::{pgrp, process, signals};

/// Starts every rank of the plan bound, in parallel, and returns the running job. When a rank
/// cannot start (its program, its binding, a syscall), the ranks already started are stopped
/// and reaped, and the error says which rank and why: nothing is left running.
pub fn start(plan: &Plan, opts: &ExecOptions) -> Result<Job, ExecError> {
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
        .map(|(launch, binding)| prepare(&mut preparer, launch, binding, opts.check))
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
    let guard = pgrp::Guard::start(launches.len()).map_err(|source| ExecError::Syscall {
        what: "start the process that guards the ranks' process groups",
        source,
    })?;
    let (running, outputs, failed) =
        start_all(&launches, plan, &prepared, &stdin, &guard, &opts.output);
    // The relay starts once every rank is running (a rank that fills its pipe before then
    // waits a moment), and only when some output is relayed.
    let stop = relay::Stop::default();
    let relays = relay::start(outputs, stop.clone());
    let job = Job::new(running, guard, relays, stop, opts.grace);
    match failed {
        None => Ok(job),
        Some(e) => Err(job
            .wait(Some(e), &|| None, &mut std::io::sink())
            .expect_err("a job stopped by a failure fails")),
    }
}
