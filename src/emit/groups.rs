//! The launch scripts of a plan of several groups (`groups:`): a heterogeneous Slurm job
//! (`--emit sbatch`, `sbatch-exec`: one component per group), and torchrun and mpirun scripts
//! that start each node's group (`--emit torchrun`, `mpirun`). One view serves all four.

use serde::Serialize;

use super::context::{EmbeddedPlan, Header, Origin, embedded_plan, header};
use super::sbatch::{
    Allocation, GroupCheck, RankFunction, Step, allocation, job_name, rank_function, step,
};
use crate::plan::Plan;
use crate::plan::job::JobPlan;
use crate::plan::place::Group;

/// A plan of several groups, for the templates.
#[derive(Serialize)]
pub struct GroupsContext {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
    job_name: String,
    port: String,
    world_size: u64,
    world_nodes: u64,
    groups: Vec<GroupView>,
    /// The spec's `mpirun:` words (the top level's, which every group shares).
    mpirun_extra: Vec<String>,
    mpirun_openmpi: Vec<String>,
    mpirun_mpich: Vec<String>,
}

/// One group: a component of the heterogeneous job, or the ranks of a node of it.
#[derive(Serialize)]
pub struct GroupView {
    index: usize,
    /// Its name and machine (`name`, `topology`, `expect_cpus`...), which a node must have to
    /// run it and by which a node finds its group.
    #[serde(flatten)]
    machine: GroupCheck,
    nodes: u32,
    ranks_per_node: u32,
    /// Its ranks in all (nodes x ranks per node), which global ranks they are (`ranks 16-19`,
    /// `rank 20`), and the job's node number of its first node.
    ranks: u64,
    span: String,
    first_node: u64,
    /// Its first rank's global rank.
    first_rank: u64,
    command: Vec<String>,
    allocation: Allocation,
    step: Step,
    rank_fn: RankFunction,
}

/// `plan_ids`: each group's plan id (`plan_file::id`), which its ranks' marks carry.
pub fn groups(plan: &JobPlan, origin: &Origin, plan_ids: &[String]) -> GroupsContext {
    let first = &plan.groups[0];
    let mut head = header(first, origin);
    head.by_group = true;
    head.topology = plan
        .groups
        .iter()
        .map(|g| g.topology.clone())
        .collect::<Vec<_>>()
        .join(", ");
    head.warnings = plan
        .named()
        .flat_map(|(group, g)| {
            g.warnings
                .iter()
                .map(move |w| format!("group `{}`: {}", group.name, w.listed(&g.allowed_warnings)))
        })
        .collect();
    GroupsContext {
        header: head,
        embedded: embedded_plan(origin),
        job_name: job_name(&plan.name),
        port: first.port.to_string(),
        world_size: plan.world_size,
        world_nodes: first.world_nodes(),
        groups: plan
            .named()
            .zip(plan_ids)
            .map(|((group, g), id)| view(group, g, id))
            .collect(),
        mpirun_extra: first.mpirun.extra.clone(),
        mpirun_openmpi: first.mpirun.openmpi.clone(),
        mpirun_mpich: first.mpirun.mpich.clone(),
    }
}

fn view(group: &Group, plan: &Plan, plan_id: &str) -> GroupView {
    let place = &plan.place;
    let step = step(plan);
    // A component asks its step's CPUs per task: Slurm gives a component one CPU per task
    // otherwise, and its masks would lie outside the allocation.
    let mut allocation = allocation(plan);
    allocation.cpus_per_task = step.cpus.cpus_per_task;
    let ranks = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
    let rank_fn = rank_function(plan, plan_id, &format!("NUMAPLAN_VALUE_G{}_", group.index));
    GroupView {
        index: group.index,
        machine: GroupCheck::named(&group.name, plan),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        ranks,
        span: place.span(ranks),
        first_node: place.first_node,
        first_rank: place.first_rank,
        command: plan.command.clone(),
        allocation,
        step,
        rank_fn,
    }
}
