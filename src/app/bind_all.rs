//! `numaplan bind --all-ranks`: this process bound to the CPUs of every local rank of the plan
//! together, with no memory policy, then CMD in its place. For a server that starts the ranks'
//! workers and binds each itself: SGLang binds a worker to its node's CPUs within the
//! server's own, so within the union each worker gets its rank's node's planned CPUs
//! (`--emit sglang`, docs/engines.md).

use std::collections::BTreeMap;
use std::io::Write;

use super::bind::{bind_and_exec, forced, subject};
use super::program;
use crate::cli::BindArgs;
use crate::diag::report::Reporter;
use crate::error::Error;
use crate::exec::{self, ExecError};
use crate::plan::{MemoryBinding, Plan, RankBinding};
use crate::spec::MemPolicy;
use crate::sys::node::environment;
use crate::variables::NUMAPLAN_PLAN;

pub fn bind_all(
    args: &BindArgs,
    stdout: &mut dyn Write,
    warnings: &mut Reporter,
) -> Result<(), Error> {
    let subject = subject(args)?;
    // In a pod, the plan as the pod runs it (`NUMAPLAN_POD`).
    let env = environment();
    let (plan, pod_note) = super::pod::fitted(None, subject.plan, &env)?;
    let mut shown = plan.warnings.clone();
    shown.extend(pod_note);
    shown.extend(program::engine_unsaid(&plan, &args.command));
    warnings.plan_warnings(&subject.input, &shown, &plan.allowed_warnings)?;
    // All or nothing: every rank's CPUs must be allowed here, as `exec` checks them.
    let facts = super::node::facts()?;
    exec::check_node(&plan, &plan.ranks, &facts, forced(args, &env))?;
    if args.command.is_empty() {
        return Err(ExecError::NoCommand {
            input: exec::Input::Given,
        }
        .into());
    }
    let set: BTreeMap<String, String> = program::plan_source(&args.input)
        .map(|s| (NUMAPLAN_PLAN.to_string(), s))
        .into_iter()
        .collect();
    Err(bind_and_exec(
        &every_rank(&plan),
        &args.command,
        &set,
        stdout,
    ))
}

/// The ranks together as one binding: their CPUs and GPUs, no memory policy (each worker's is
/// its own), none of their variables.
fn every_rank(plan: &Plan) -> RankBinding {
    RankBinding {
        local_rank: 0,
        gpus: plan.ranks.iter().flat_map(|r| r.gpus.clone()).collect(),
        numa_node: None,
        cpus: plan.ranks.iter().map(|r| &r.cpus).collect(),
        cores: plan.ranks.iter().map(|r| r.cores).sum(),
        memory: MemoryBinding {
            policy: MemPolicy::None,
            nodes: Vec::new(),
            required: false,
        },
        nics: Vec::new(),
        env: BTreeMap::new(),
        threads: 1,
        helpers: Default::default(),
        openmp: None,
    }
}
