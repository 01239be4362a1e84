//! `numaplan exec` and `numaplan verify`: the edge around `exec` that reads the environment
//! (Slurm's variables, this process's affinity, the kernel's NUMA nodes) and prints.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use super::bind::Memory;
use super::input::{PlanMachine, load_subject};
use super::node::{environment, node_facts};
use super::{emit, json};
use crate::cli::{ExecArgs, NprocPerNode, ReportFormat, VerifyArgs};
use crate::diag::report::Reporter;
use crate::emit::templates::sh;
use crate::error::Error;
use crate::exec::{
    self, ExecError, ExecOptions, Force, NodePlace, OutputMode, hostlist, launcher, verify,
};
use crate::plan::Plan;
use crate::yaml::Override;

pub fn exec(args: &ExecArgs, stdout: &mut dyn Write, warnings: &mut Reporter) -> Result<(), Error> {
    // `--nproc-per-node N` is `--set ranks_per_node=N`, before the user's own `--set`s.
    let nproc = match args.nproc_per_node {
        Some(NprocPerNode::Count(n)) => Some(Override {
            flag: Some("--nproc-per-node"),
            ..Override::set("ranks_per_node", n.to_string())
        }),
        Some(NprocPerNode::Gpu) | None => None,
    };
    let overrides: Vec<Override> = nproc
        .into_iter()
        .chain(args.overrides.set.clone())
        .collect();
    let subject = load_subject(
        args.input.as_deref(),
        args.topology.as_deref(),
        PlanMachine::NotNeeded,
        &overrides,
    )?;
    let plan = subject.plan;
    let shown = launcher::warnings(&plan, &plan.ranks, &environment());
    warnings.plan_warnings(&subject.input, &shown)?;
    let opts = ExecOptions {
        place: node_place(args, &plan)?,
        output: match (&args.log_dir, args.no_prefix) {
            (Some(dir), _) => OutputMode::LogDir {
                dir: dir.clone(),
                tee: args.tee,
            },
            (None, true) => OutputMode::Plain,
            (None, false) => OutputMode::Prefixed,
        },
        grace: Duration::from_secs_f64(args.grace.clamp(0.0, 3600.0)),
        verify: args.verify,
        extra_args: args.extra.clone(),
    };
    let force = if args.force { Force::Yes } else { Force::No };
    let checked = exec::check_node(&plan, &plan.ranks, &node_facts()?, force);
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
    let _ = stdout.flush();
    let mut report = std::io::stderr();
    Ok(exec::run(&plan, &opts, &mut report)?)
}

pub fn verify(args: &VerifyArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let plan = load_subject(
        Some(&args.input),
        args.topology.as_deref(),
        PlanMachine::NotNeeded,
        &[],
    )?
    .plan;
    let pids: Vec<u32> = match &args.match_name {
        Some(name) => find_processes(name),
        None => args.pids.clone(),
    };
    let mut ranked: Vec<(u32, u32)> = pids
        .iter()
        .enumerate()
        .map(|(i, &pid)| (local_rank_of(pid).unwrap_or(i as u32), pid))
        .collect();
    ranked.sort();
    if ranked.is_empty() {
        let pattern = args.match_name.clone().unwrap_or_default();
        return Err(ExecError::NoProcesses { pattern }.into());
    }
    let table = verify::check(&plan, &ranked);
    let text = match args.format {
        ReportFormat::Text => table.render(),
        ReportFormat::Json => json(&VerifyReport::new(&table)),
    };
    emit(stdout, None, &text)?;
    if table.ok() {
        Ok(())
    } else {
        Err(ExecError::Verify {
            mismatches: table.mismatches(),
        }
        .into())
    }
}

/// This node's place: flags, else Slurm's environment, else a single-node job.
fn node_place(args: &ExecArgs, plan: &Plan) -> Result<NodePlace, ExecError> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let node_rank = args.node_rank.or_else(|| env("SLURM_NODEID")?.parse().ok());
    let nodes = args
        .nodes
        .or_else(|| env("SLURM_NNODES")?.parse().ok())
        .unwrap_or(plan.nodes);
    let master = args
        .master_addr
        .clone()
        .or_else(|| hostlist::first_host(&env("SLURM_JOB_NODELIST")?));
    if plan.nodes > 1 && (node_rank.is_none() || master.is_none()) {
        return Err(ExecError::NoNodePlace { nodes: plan.nodes });
    }
    let single_node_master = plan
        .ranks
        .first()
        .and_then(|r| r.env.get("MASTER_ADDR").cloned())
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
            verify::numa_maps_policy(&r.memory),
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
                nics: r.nics.clone(),
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

/// `verify --format json` (`"numaplan_verify": 1`, schemas/verify.schema.json): per rank what
/// was planned and what /proc shows.
#[derive(Serialize, JsonSchema)]
pub(crate) struct VerifyReport {
    numaplan_verify: u32,
    /// Every rank bound as planned (exited ranks are not counted against it).
    ok: bool,
    mismatches: usize,
    ranks: Vec<VerifyRank>,
}

#[derive(Serialize, JsonSchema)]
struct VerifyRank {
    rank: u32,
    pid: u32,
    threads: usize,
    planned_cpus: String,
    /// The union of its threads' CPUs.
    actual_cpus: String,
    /// Threads on a strict subset of the rank's CPUs (allowed: a runtime binding its threads).
    narrowed: usize,
    /// As numa_maps shows it (`bind:3`).
    planned_memory: String,
    actual_memory: String,
    problems: Vec<String>,
    /// How the rank ended, when it had exited before it was read.
    exited: Option<String>,
}

impl VerifyReport {
    fn new(table: &verify::Table) -> VerifyReport {
        VerifyReport {
            numaplan_verify: 1,
            ok: table.ok(),
            mismatches: table.mismatches(),
            ranks: table
                .rows
                .iter()
                .map(|r| VerifyRank {
                    rank: r.rank,
                    pid: r.pid,
                    threads: r.threads,
                    planned_cpus: r.planned_cpus.to_string(),
                    actual_cpus: r.actual_cpus.to_string(),
                    narrowed: r.narrowed,
                    planned_memory: r.planned_memory.clone(),
                    actual_memory: r.actual_memory.clone(),
                    problems: r.problems.clone(),
                    exited: r.exited.clone(),
                })
                .collect(),
        }
    }
}

/// `LOCAL_RANK` from a process's environment.
fn local_rank_of(pid: u32) -> Option<u32> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let vars: BTreeMap<&[u8], &[u8]> = environ
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let eq = kv.iter().position(|&b| b == b'=')?;
            Some((&kv[..eq], &kv[eq + 1..]))
        })
        .collect();
    std::str::from_utf8(vars.get(&b"LOCAL_RANK"[..])?)
        .ok()?
        .parse()
        .ok()
}

/// Processes whose command line contains `name`, other than numaplan's own (this `verify`, an
/// `exec` supervisor whose arguments name the program): those are not ranks.
fn find_processes(name: &str) -> Vec<u32> {
    let numaplan = std::fs::read_link("/proc/self/exe").ok();
    let is_numaplan = |pid: u32| {
        numaplan.is_some() && std::fs::read_link(format!("/proc/{pid}/exe")).ok() == numaplan
    };
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid: &u32| !is_numaplan(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c: Vec<u8> = c.iter().map(|&b| if b == 0 { b' ' } else { b }).collect();
                String::from_utf8_lossy(&c).contains(name)
            })
        })
        .collect();
    pids.sort();
    pids
}
