//! One rank's launch, as `exec` runs it and `--dry-run` prints it: the plan's command and
//! environment, plus the node's place in a multi-node job and how the ranks' output is kept.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::ExecError;
use crate::ids::{Mark, PlanId};
use crate::plan::{Plan, environment};
pub use crate::sys::process::Check;
use crate::variables::NUMAPLAN_PLAN;

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
    /// Whether each rank reads its binding back before its program starts (`--verify`).
    pub check: Check,
    /// Appended to the plan's command for every rank (the command itself when the plan has
    /// none), byte for byte.
    pub extra_args: Vec<OsString>,
    /// The plan's identity, which each rank carries in its mark (`NUMAPLAN_BOUND`).
    pub plan_id: PlanId,
    /// Where a rank finds the plan again (`NUMAPLAN_PLAN`), when it came from a file.
    pub plan_source: Option<String>,
    /// Whether the ranks run without the plan's memory policies, which this node refused and
    /// the plan does not require (W0217): their marks say so, for `verify`.
    pub without_memory: bool,
}

/// One rank's launch: what `exec` runs and what `--dry-run` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub local_rank: u32,
    /// Global rank (node rank x ranks per node + local rank, after the ranks of the groups
    /// before its own): what output prefixes, log file names and error messages show, so that
    /// lines of a multi-node job name their rank.
    pub rank: u32,
    pub argv: Vec<OsString>,
    /// Set on top of numaplan's own environment.
    pub env: BTreeMap<String, String>,
}

/// The launches of every local rank: the plan's command and environment, plus the node's place
/// in a multi-node job (global `RANK`, `NODE_RANK`/`GROUP_RANK`, `MASTER_ADDR`).
pub fn launches(plan: &Plan, opts: &ExecOptions) -> Result<Vec<Launch>, ExecError> {
    if plan.command.is_empty() && opts.extra_args.is_empty() {
        return Err(ExecError::NoCommand {
            input: super::error::Input::Given,
        });
    }
    if opts.place.nodes != plan.nodes {
        return Err(ExecError::NodeCount {
            plan: plan.nodes,
            job: opts.place.nodes,
            group: plan.group().map(|g| g.name.clone()),
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
            let mark = Mark {
                plan: opts.plan_id.clone(),
                local_rank: r.local_rank,
                without_memory: opts.without_memory,
            };
            env.extend(environment::marks(plan, &mark));
            if let Some(source) = &opts.plan_source {
                env.insert(NUMAPLAN_PLAN.to_string(), source.clone());
            }
            let node = opts.place.node_rank;
            // Of a group, numbered in the whole job: after the groups before it.
            let rank = plan.global_rank(node, r.local_rank) as u32;
            if plan.world_nodes() > 1 {
                let numbering = environment::launch_numbering(
                    plan,
                    node,
                    r.local_rank,
                    &opts.place.master_addr,
                );
                env.extend(numbering.map(|(k, v)| (k.to_string(), v)));
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
