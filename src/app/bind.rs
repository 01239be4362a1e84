//! `numaplan bind`: one local rank's part of a plan applied to this process (CPU affinity and
//! memory policy, as `exec` applies them, and the rank's environment), then CMD in numaplan's
//! place (`execve`): no child, no supervisor; the outer launcher owns the process.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt as _;

use schemars::JsonSchema;
use serde::Serialize;

use super::input::{self, PlanMachine, Request, Subject};
use super::memory::without_refused_policies;
use super::program;
use super::write::{emit, json};
use crate::cli::{BindArgs, ReportFormat};
use crate::diag::report::{Reporter, Voice};
use crate::error::Error;
use crate::exec::{self, ExecError, Force};
use crate::ids::{Mark, PlanId, node_list};
use crate::plan::{Plan, RankBinding};
use crate::plan_file;
use crate::rank::{self, Env, LocalRank, launcher_binding, numbering, visible};
use crate::shell::quote as sh;
use crate::sys::node::environment;
use crate::variables::{NUMAPLAN_PLAN, RANK};

pub fn bind(args: &BindArgs, stdout: &mut dyn Write, warnings: &mut Reporter) -> Result<(), Error> {
    let env = environment();
    let subject = subject(args)?;
    // The mark carries the reviewed plan's id, which `verify` of it finds the rank by; in a
    // pod, the plan as the pod runs it (`NUMAPLAN_POD`).
    let plan_id = plan_file::id(&subject.plan);
    let (plan, pod_note) = super::pod::fitted(None, subject.plan, &env)?;
    let local = rank::local_rank(args.local_rank, &plan, &env)?;
    // Local rank 0 speaks for the node; the others would print the same warnings again.
    let voice = [Voice::Silent, Voice::Speaks][usize::from(local.rank == 0)];
    let rank = numbering::rank_of(&plan, &local, &env)?;
    // A worker chosen by the GPUs it sees renumbers them by design: no visibility warning.
    let mut shown = match local.by_gpu {
        true => plan.warnings.clone(),
        false => visible::warnings(&plan, std::slice::from_ref(rank), &env),
    };
    let node = super::node::facts()?;
    let facts = launcher_binding_replaced(node, &env, &local, rank, &mut shown);
    program::one_server(&plan, &program(args, &plan), "numaplan bind")?;
    // The spec's own command was looked at when it was compiled (W0220 is in the plan).
    shown.extend(program::engine(&plan, &args.command));
    shown.extend(pod_note);
    warnings.plan_warnings_as(voice, &subject.input, &shown, &plan.allowed_warnings)?;
    // What is this rank's own is said by every rank it is true of, whichever speaks for the
    // node: a memory policy this node refuses (an error, or not required: none), numbering.
    let mut rank = rank.clone();
    let allowed = &plan.allowed_warnings;
    // Only this rank's CPUs must be allowed: the others are other processes, and a process
    // already bound as this rank (numaplan.spawn's child calling numaplan.bind) binds again.
    let checked = exec::check_node(
        &plan,
        std::slice::from_ref(&rank),
        &facts,
        forced(args, &env),
    );
    // The memory policy is probed on a node that can run the plan (another machine's plan
    // names nodes this one may lack: that is E0411, said by the check).
    let without_memory = match checked {
        Ok(()) => {
            let refused = std::slice::from_mut(&mut rank);
            without_refused_policies(refused, &subject.input, allowed, Voice::Speaks, warnings)
                .map_err(alone)?
        }
        Err(_) => false,
    };
    let mark = Mark {
        plan: plan_id.clone(),
        local_rank: rank.local_rank,
        without_memory,
    };
    let mut set = numbering::rank_environment(&plan, &mark, &rank, &local, &env);
    set.extend(program::plan_source(&args.input).map(|s| (NUMAPLAN_PLAN.to_string(), s)));
    let own: Vec<_> = numbering::unknown_numbering(&plan, &local, &set, &env)
        .into_iter()
        .collect();
    warnings.plan_warnings_as(Voice::Speaks, &subject.input, &own, allowed)?;
    let argv = program(args, &plan);
    let report = Report::new(&rank, &plan, &plan_id, &local, &set, &env, &argv);
    if args.dry_run {
        let text = match args.format {
            ReportFormat::Text => report.text(),
            ReportFormat::Json => json(&report),
        };
        emit(stdout, None, &text)?;
        // A dry run says what the real run would do, a refusal included.
        return Ok(checked?);
    }
    checked?;
    if argv.is_empty() {
        return Err(ExecError::NoCommand {
            input: exec::Input::Given,
        }
        .into());
    }
    if args.verbose {
        warnings.info(&report.verbose_line());
    }
    Err(bind_and_exec(&rank, &argv, &set, stdout))
}

/// The plan `bind` binds by: its input, as a plan or a job spec compiled for this machine.
pub(super) fn subject(args: &BindArgs) -> Result<Subject, Error> {
    let request = Request {
        arg: Some(&args.input),
        topology: args.topology.as_ref(),
        machine: PlanMachine::NotNeeded,
        overrides: &args.overrides.set,
        needs_command: false,
    };
    input::this_nodes(&request, args.group.as_deref())
}

/// The program the rank runs: the command line's, else the plan's `command`.
fn program(args: &BindArgs, plan: &Plan) -> Vec<OsString> {
    match args.command.is_empty() {
        true => plan.command.iter().map(OsString::from).collect(),
        false => args.command.clone(),
    }
}

/// A refused binding of this process, which binds itself alone: no other rank was started.
fn alone(e: Error) -> Error {
    match e {
        Error::Exec(e) => Error::Exec(e.alone()),
        other => other,
    }
}

/// Binds this process as `rank` (all or nothing) and replaces it with `argv`; returns only on
/// failure.
pub(super) fn bind_and_exec(
    rank: &RankBinding,
    argv: &[OsString],
    set: &BTreeMap<String, String>,
    stdout: &mut dyn Write,
) -> Error {
    let failed = |call, source| ExecError::bind(rank.local_rank, rank, call, source);
    let applied = exec::binding(&rank.cpus, &rank.memory)
        .map_err(|e| failed(None, e))
        .and_then(|b| b.apply().map_err(|r| failed(Some(r.call), r.error)));
    if let Err(e) = applied {
        return e.alone().into();
    }
    let _ = stdout.flush();
    let source = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .envs(set)
        .exec();
    ExecError::BindExec {
        program: argv[0].to_string_lossy().into_owned(),
        source,
    }
    .into()
}

/// `--force`, or `NUMAPLAN_FORCE=1`, which says it for a process started by someone else's code
/// (a Ray actor, a server's worker), as it does for the batch files.
pub(super) fn forced(args: &BindArgs, env: &Env) -> Force {
    match args.force || env.get("NUMAPLAN_FORCE").is_some_and(|v| v == "1") {
        true => Force::Yes,
        false => Force::No,
    }
}

/// A launcher's own binding (Open MPI's default, srun's `--cpu-bind`) is replaced, and said
/// (W0215): the rank's CPUs must then lie within what the cgroup allows, not within the
/// launcher's binding. A narrower affinity no launcher made (a `taskset`) stays the bound.
fn launcher_binding_replaced(
    mut facts: exec::NodeFacts,
    env: &Env,
    local: &LocalRank,
    rank: &RankBinding,
    shown: &mut Vec<crate::diag::Warning>,
) -> exec::NodeFacts {
    // An affinity of every online CPU is no narrower than the cgroup's: no file to read.
    let may_use = || match facts.allowed == facts.online_cpus {
        true => facts.online_cpus.clone(),
        false => crate::sys::cgroup::cgroup_cpus(&facts.online_cpus),
    };
    if let Some(found) = launcher_binding::launcher_binding(env, &facts.allowed, may_use) {
        shown.extend(found.warning(local.rank, &rank.cpus));
        facts.allowed = found.may_use;
    }
    facts
}

/// What `bind --dry-run` shows: the rank's binding, the variables it sets, the argv. Its JSON
/// form (`"numaplan_bind": 1`, schemas/bind.schema.json) is what the Python package reads.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Report {
    numaplan_bind: u32,
    /// The plan's identity, which the rank's mark (`NUMAPLAN_BOUND` in `env`) carries, and
    /// which `numaplan.bind()` writes to its mark file.
    plan_id: String,
    /// The global rank, when the launcher or the plan says it.
    rank: Option<u32>,
    local_rank: u32,
    /// The plan's ranks on one node (what `numaplan.spawn` starts).
    ranks_per_node: u32,
    /// `--local-rank`, or the launcher variable the local rank came from.
    via: String,
    cpus: String,
    cores: u32,
    numa_node: Option<u32>,
    memory: Memory,
    gpus: Vec<u32>,
    gpu_pci: Vec<String>,
    nics: Vec<String>,
    /// The variables bind sets (the launcher's own numbering is kept where it has one).
    env: BTreeMap<String, String>,
    argv: Vec<String>,
}

/// A rank's memory policy in the JSON reports of `bind` and `exec --dry-run`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Memory {
    /// `bind`, `preferred`, `interleave` or `none`.
    policy: String,
    /// Node list (`0-1`); empty for `none`.
    nodes: String,
    /// As `/proc/PID/numa_maps` shows it: `bind:3`, `default`.
    numa_maps: String,
}

impl Memory {
    pub(crate) fn of(memory: &crate::plan::MemoryBinding) -> Memory {
        Memory {
            policy: memory.policy.name().into(),
            nodes: node_list(&memory.nodes),
            numa_maps: memory.numa_maps(),
        }
    }
}

impl Report {
    fn new(
        rank: &RankBinding,
        plan: &Plan,
        plan_id: &PlanId,
        local: &LocalRank,
        set: &BTreeMap<String, String>,
        env: &Env,
        argv: &[OsString],
    ) -> Report {
        Report {
            numaplan_bind: 1,
            plan_id: plan_id.to_string(),
            rank: set.get(RANK).or(env.get(RANK)).and_then(|r| r.parse().ok()),
            local_rank: local.rank,
            ranks_per_node: plan.ranks_per_node,
            via: local.via.clone(),
            cpus: rank.cpus.to_string(),
            cores: rank.cores,
            numa_node: rank.numa_node.map(|n| n.0),
            memory: Memory::of(&rank.memory),
            gpus: rank.gpus.iter().map(|g| g.index.0).collect(),
            gpu_pci: rank.gpus.iter().map(|g| g.pci.to_string()).collect(),
            nics: rank.nic_names(),
            env: set.clone(),
            argv: argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        }
    }

    /// `rank 3: CPUs 48-55 memory bind:3 via LOCAL_RANK`, as `srun --cpu-bind=verbose` tells.
    fn verbose_line(&self) -> String {
        format!(
            "rank {}: CPUs {} memory {} via {}",
            self.rank.unwrap_or(self.local_rank),
            self.cpus,
            self.memory.numa_maps,
            self.via
        )
    }

    fn text(&self) -> String {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", sh(v.clone())))
            .collect();
        let argv: Vec<String> = self.argv.iter().map(|a| sh(a.clone())).collect();
        format!(
            "{} (local rank {})\n  env {}\n  argv {}\n",
            self.verbose_line(),
            self.local_rank,
            env.join(" "),
            argv.join(" ")
        )
    }
}
