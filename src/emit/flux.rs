//! `--emit flux`: the plan as Flux jobs (`templates/flux.sh.j2`), for the machines that run Flux
//! (LLNL's El Capitan class, where mpibind is Flux's own binding): a group's ranks are one
//! job's tasks, bound by Flux's job shell to the plan's CPUs (`-o cpu-affinity=map:`, one entry
//! per local task, every node's ranks being alike), and each run under `numaplan bind` for what
//! Flux cannot set (the memory policy, the GPUs the runtime sees, the NIC, the environment).
//! Flux's own GPU binding stays off: it numbers GPUs in hwloc's order, not the runtime's, which
//! a fixture does not carry. docs/flux.md.

use serde::Serialize;

use super::Origin;
use super::view::{JobView, job_view};
use crate::diag::{Warning, codes};
use crate::plan::Plan;
use crate::plan::job::JobPlan;

/// A group as one Flux job.
#[derive(Serialize)]
pub struct FluxGroup {
    /// `-o cpu-affinity=map:`'s list: each local rank's CPUs (an hwloc list), `;` between
    /// them, in local rank order.
    cpu_map: String,
    /// `-c`: each task's share of the ranks' cores (their sum over the ranks, where no two share
    /// a CPU; else 1). Flux allocates whole nodes (`--exclusive`); the map, not `-c`, places a
    /// task.
    cores_per_task: u32,
    /// `-g`: each task's share of the ranks' GPUs (0: none asked).
    gpus_per_task: usize,
    /// The spec's `flux:`.
    queue: String,
    requires: String,
    extra: Vec<String>,
}

/// The Flux script's view of `job`: a Flux job per group; and W0222 for each group of a job
/// of several that names no nodes of its own.
pub fn view(job: &JobPlan, origin: &Origin) -> (JobView<(), FluxGroup>, Vec<Warning>) {
    let unplaced = job.groups.iter().filter_map(|plan| {
        let group = plan.group().filter(|_| job.groups.len() > 1)?;
        let flux = &plan.flux;
        (flux.requires.is_none() && flux.queue.is_none()).then(|| {
            Warning::new(
                codes::W0222_FLUX_GROUP_UNPLACED,
                format!(
                    "group `{}` names no nodes of its own for its Flux job (`flux: {{requires: \
                     ...}}` or `queue`): Flux may run it on another group's nodes, which its \
                     ranks' `numaplan bind` refuses",
                    group.name
                ),
            )
        })
    });
    let warnings = unplaced.collect();
    (job_view(job, origin, (), |plan, _| group(plan)), warnings)
}

fn group(plan: &Plan) -> FluxGroup {
    let tasks = plan.ranks.len().max(1);
    let cores: u32 = plan.ranks.iter().map(|r| r.cores).sum();
    let mut gpus: Vec<u32> = plan
        .ranks
        .iter()
        .flat_map(|r| r.gpus.iter().map(|g| g.index.0))
        .collect();
    gpus.sort_unstable();
    gpus.dedup();
    let maps: Vec<String> = plan.ranks.iter().map(|r| r.cpus.to_string()).collect();
    FluxGroup {
        cpu_map: maps.join(";"),
        cores_per_task: match plan.ranks_share_cpus() {
            false => (cores / tasks as u32).max(1),
            true => 1,
        },
        gpus_per_task: gpus.len() / tasks,
        queue: plan.flux.queue.clone().unwrap_or_default(),
        requires: plan.flux.requires.clone().unwrap_or_default(),
        extra: plan.flux.extra.clone(),
    }
}
