//! `numaplan exec`: the edge around `exec` that reads the environment (Slurm's variables,
//! this process's affinity, the kernel's NUMA nodes) and prints; `checks.rs` composes the
//! start with the checks of the running ranks.

mod checks;

use checks::Checks;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::bind::Memory;
use super::input::{self, PlanMachine, Request};
use super::memory::without_refused_policies;
use super::program;
use super::write::{emit, json};
use crate::cli::{ExecArgs, NprocPerNode, PodArg, ReportFormat};
use crate::diag::Warning;
use crate::diag::report::{Reporter, Voice};
use crate::error::Error;
use crate::exec::pod::PodMode;
use crate::exec::{self, Check, ExecError, ExecOptions, Force, Input, NodePlace, OutputMode};
use crate::ids::PlanId;
use crate::plan::Plan;
use crate::plan_file;
use crate::rank::{hostlist, visible};
use crate::resolve::ResolveErrorKind;
use crate::shell::quote as sh;
use crate::sys::node::environment;
use crate::variables::MASTER_ADDR;
use crate::yaml::Override;

pub fn exec(args: &ExecArgs, stdout: &mut dyn Write, warnings: &mut Reporter) -> Result<(), Error> {
    let nproc = nproc_per_node(args);
    let nproc_gpu = nproc.as_ref().is_some_and(|o| o.key == "gpus");
    let overrides: Vec<Override> = nproc
        .into_iter()
        .chain(args.overrides.set.clone())
        .collect();
    let request = Request {
        arg: args.input.as_deref(),
        topology: args.topology.as_ref(),
        machine: PlanMachine::NotNeeded,
        overrides: &overrides,
        needs_command: args.extra.is_empty(),
    };
    let subject =
        input::this_nodes(&request, args.group.as_deref()).map_err(|e| match nproc_gpu {
            true => in_the_flags_words(e),
            false => e,
        })?;
    let plan = subject.plan;
    if plan.command.is_empty() && args.extra.is_empty() {
        // Without a spec, the program can only come after `--`: say that, not "the spec".
        let input = match args.input {
            Some(_) => Input::Given,
            None => Input::None,
        };
        return Err(ExecError::NoCommand { input }.into());
    }
    // The environment, read once (its copy costs as much as much of the rest of a start).
    let env = environment();
    let (mut plan, plan_id, pod_note) = as_the_pod_runs_it(args.pod, plan, &env)?;
    let mut shown = visible::warnings(&plan, &plan.ranks, &env);
    shown.extend(pod_note);
    // The words after `--` are appended to the spec's command (W0220 of which is in the plan).
    let line: Vec<OsString> = plan
        .command
        .iter()
        .map(OsString::from)
        .chain(args.extra.clone())
        .collect();
    program::one_server(&plan, &line, "numaplan exec")?;
    if crate::spec::engine::runs(&plan.command).is_none() {
        shown.extend(program::engine(&plan, &line));
    }
    warnings.plan_warnings(&subject.input, &shown, &plan.allowed_warnings)?;
    let checks = Checks::of(args)?;
    let opts = options(args, &plan, plan_id, &checks)?;
    let force = if args.force { Force::Yes } else { Force::No };
    let checked = exec::check_node(&plan, &plan.ranks, &super::node::facts()?, force);
    if args.dry_run {
        let text = match args.format {
            ReportFormat::Text => dry_run(&plan, &opts)?,
            ReportFormat::Json => json(&DryRun::new(&plan, &opts)?),
        };
        emit(stdout, None, &text)?;
        // A dry run says what the real run would do, a refusal included.
        return Ok(checked?);
    }
    checked?;
    // A memory policy this node refuses: an error before anything starts, or (not required)
    // the ranks run without it, said once.
    let without_memory = without_refused_policies(
        &mut plan.ranks,
        &subject.input,
        &plan.allowed_warnings.clone(),
        Voice::Speaks,
        warnings,
    )?;
    let opts = ExecOptions {
        without_memory,
        ..opts
    };
    let _ = stdout.flush();
    let mut report = std::io::stderr();
    let job = exec::start(&plan, &opts)?;
    checks::observe_and_wait(&plan, &opts, &checks, job, &mut report)
}

/// In a pod (`--pod`, else `NUMAPLAN_POD`): the plan as the pod runs it, what changed (W0228),
/// and the reviewed plan's id, which the ranks' marks carry (`verify` of it finds them so).
fn as_the_pod_runs_it(
    pod: Option<PodArg>,
    plan: Plan,
    env: &BTreeMap<String, String>,
) -> Result<(Plan, PlanId, Option<Warning>), Error> {
    let plan_id = plan_file::id(&plan);
    let mode = pod.map(|arg| match arg {
        PodArg::Exact => PodMode::Exact,
        PodArg::Given => PodMode::Given,
    });
    let (plan, note) = super::pod::fitted(mode, plan, env)?;
    Ok((plan, plan_id, note))
}

/// How `exec` starts the plan's ranks, from its flags and the id its ranks' marks carry (the
/// memory fallback is found later).
fn options(
    args: &ExecArgs,
    plan: &Plan,
    plan_id: PlanId,
    checks: &Checks,
) -> Result<ExecOptions, Error> {
    Ok(ExecOptions {
        place: node_place(args, plan)?,
        output: match (&args.log_dir, args.no_prefix) {
            (Some(dir), _) => OutputMode::LogDir {
                dir: dir.clone(),
                tee: args.tee,
            },
            (None, true) => OutputMode::Plain,
            (None, false) => OutputMode::Prefixed,
        },
        grace: Duration::from_secs_f64(args.grace.clamp(0.0, 3600.0)),
        extra_args: args.extra.clone(),
        check: match checks.verify {
            true => Check::ReadBack,
            false => Check::None,
        },
        plan_id,
        plan_source: args.input.as_deref().and_then(program::plan_source),
        without_memory: false,
    })
}

/// `--nproc-per-node` as the override it stands for, before the user's own `--set`s: `N` is
/// `ranks_per_node=N`; `gpu` without a spec is `gpus=all`, one rank per GPU, which asks for
/// GPUs outright (none is E0201, not a CPU-only rank); with a spec, the spec says which GPUs.
fn nproc_per_node(args: &ExecArgs) -> Option<Override> {
    match args.nproc_per_node {
        Some(NprocPerNode::Count(n)) => Some(Override {
            flag: Some("--nproc-per-node"),
            ..Override::set("ranks_per_node", n.to_string())
        }),
        Some(NprocPerNode::Gpu) if args.input.is_none() => Some(Override {
            flag: Some("--nproc-per-node"),
            typed_value: Some("gpu"),
            ..Override::set("gpus", "all")
        }),
        Some(NprocPerNode::Gpu) | None => None,
    }
}

/// A machine without GPUs, asked for one rank per GPU by `--nproc-per-node gpu` (without a
/// spec, so the flag is all that asks for GPUs): said in the flag's words, with its way out.
fn in_the_flags_words(e: Error) -> Error {
    match e {
        Error::Resolve { mut error, map } => {
            if let ResolveErrorKind::NoGpus { asked, .. } = &mut error.kind {
                *asked = "--nproc-per-node gpu".into();
                error.help = "give a count of CPU-only ranks, `--nproc-per-node N`, or run on \
                              a machine with GPUs"
                    .into();
            }
            Error::Resolve { error, map }
        }
        e => e,
    }
}

/// This node's place: flags, else Slurm's environment, else a single-node job.
fn node_place(args: &ExecArgs, plan: &Plan) -> Result<NodePlace, ExecError> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut node_rank = args.node_rank.or_else(|| env("SLURM_NODEID")?.parse().ok());
    let mut nodes = args
        .nodes
        .or_else(|| env("SLURM_NNODES")?.parse().ok())
        .unwrap_or(plan.nodes);
    // A step over every component of a heterogeneous job (`srun A : B`) numbers the nodes of
    // the whole job, component by component: this group's start there.
    let place = &plan.place;
    if place.group.is_some()
        && args.node_rank.is_none()
        && args.nodes.is_none()
        && u64::from(nodes) == place.world_nodes
        && place.world_nodes != u64::from(plan.nodes)
    {
        nodes = plan.nodes;
        node_rank = node_rank.map(|k| {
            // A node before the group's start keeps a number past it, which is refused.
            (u64::from(k).checked_sub(place.first_node)).map_or(u32::MAX, |k| k as u32)
        });
    }
    // A job of several groups meets at its first group's first node: under Slurm, that of the
    // heterogeneous job's first component.
    let master = args.master_addr.clone().or_else(|| {
        let list = env("SLURM_JOB_NODELIST_HET_GROUP_0").or_else(|| env("SLURM_JOB_NODELIST"))?;
        hostlist::first_host(&list)
    });
    if plan.world_nodes() > 1 && (node_rank.is_none() || master.is_none()) {
        return Err(ExecError::NoNodePlace {
            nodes: plan.nodes,
            world: plan.world_nodes(),
            group: plan.group().map(|g| g.name.clone()),
        });
    }
    let single_node_master = plan
        .ranks
        .first()
        .and_then(|r| r.env.get(MASTER_ADDR).cloned())
        .unwrap_or_else(|| "127.0.0.1".into());
    Ok(NodePlace {
        node_rank: node_rank.unwrap_or(0),
        nodes,
        master_addr: master.unwrap_or(single_node_master),
    })
}

/// What `--dry-run` prints: per rank its binding, the environment it adds and the exact argv.
fn dry_run(plan: &Plan, opts: &ExecOptions) -> Result<String, ExecError> {
    let mut out = String::new();
    for (l, r) in exec::launches(plan, opts)?.iter().zip(&plan.ranks) {
        out.push_str(&format!(
            "rank {}: CPUs {}, memory {}\n  env {}\n  argv {}\n",
            l.local_rank,
            r.cpus,
            r.memory.numa_maps(),
            l.env
                .iter()
                .map(|(k, v)| format!("{k}={}", sh(v.clone())))
                .collect::<Vec<_>>()
                .join(" "),
            l.argv
                .iter()
                .map(|a| sh(a.to_string_lossy().into_owned()))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(out)
}

/// `exec --dry-run --format json` (`"numaplan_exec": 1`, schemas/exec.schema.json): this node's
/// place and, per rank, what exec would start and how it would bind it.
#[derive(Serialize, JsonSchema)]
pub(crate) struct DryRun {
    numaplan_exec: u32,
    node_rank: u32,
    nodes: u32,
    master_addr: String,
    ranks: Vec<DryRunRank>,
}

#[derive(Serialize, JsonSchema)]
struct DryRunRank {
    /// The global rank.
    rank: u32,
    local_rank: u32,
    cpus: String,
    memory: Memory,
    gpus: Vec<u32>,
    nics: Vec<String>,
    /// The variables exec sets on top of its own environment.
    env: BTreeMap<String, String>,
    argv: Vec<String>,
}

impl DryRun {
    fn new(plan: &Plan, opts: &ExecOptions) -> Result<DryRun, ExecError> {
        let ranks = exec::launches(plan, opts)?
            .into_iter()
            .zip(&plan.ranks)
            .map(|(l, r)| DryRunRank {
                rank: l.rank,
                local_rank: l.local_rank,
                cpus: r.cpus.to_string(),
                memory: Memory::of(&r.memory),
                gpus: r.gpus.iter().map(|g| g.index.0).collect(),
                nics: r.nic_names(),
                env: l.env,
                argv: l
                    .argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
            })
            .collect();
        Ok(DryRun {
            numaplan_exec: 1,
            node_rank: opts.place.node_rank,
            nodes: opts.place.nodes,
            master_addr: opts.place.master_addr.clone(),
            ranks,
        })
    }
}
