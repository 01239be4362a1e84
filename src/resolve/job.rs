//! A job: each of its groups (`Spec::job_groups`; a spec without `groups:` is a job of one)
//! resolved on its own machine, then, of a job of several groups, numbered as one world: group
//! by group, node by node, local rank by local rank. `WORLD_SIZE` is the sum over the groups;
//! the variables of a one-node job (`RANK`, `NODE_RANK`, `GROUP_RANK`, `MASTER_ADDR`) are the
//! launcher's when the job has more nodes.

use super::error::{ResolveError, ResolveErrorKind};
use super::resolve;
use crate::plan::Plan;
use crate::plan::job::{JobPlan, Shape};
use crate::plan::place::{Group, Place};
use crate::spec::Spec;
use crate::topology::Topology;
use crate::variables::{NODE_PLACE, WORLD_SIZE};

/// Resolves every group of `spec` on its machine (`machines`, one per group of
/// `spec.job_groups()`, in order). An error is the group's index and its resolve error.
pub fn resolve_job(
    spec: &Spec,
    machines: &[Topology],
) -> Result<JobPlan, (usize, Box<ResolveError>)> {
    let groups = spec.job_groups();
    debug_assert_eq!(
        groups.len(),
        machines.len(),
        "invariant: a machine per group"
    );
    let mut plans = Vec::new();
    for (i, (group, topo)) in groups.iter().zip(machines).enumerate() {
        plans.push(resolve(group.spec, topo).map_err(|e| (i, Box::new(e)))?);
    }
    if spec.groups.is_empty() {
        let plan = plans
            .pop()
            .expect("invariant: a spec without groups is a job of one");
        return Ok(JobPlan::of_one_group(plan));
    }
    number_as_one_world(spec, plans)
}

/// A plan's ranks: its nodes times its ranks per node.
fn ranks(p: &Plan) -> u64 {
    u64::from(p.nodes) * u64::from(p.ranks_per_node)
}

/// The groups' plans numbered as one world, each with its place.
fn number_as_one_world(
    spec: &Spec,
    mut plans: Vec<Plan>,
) -> Result<JobPlan, (usize, Box<ResolveError>)> {
    let world_size: u64 = plans.iter().map(ranks).sum();
    if world_size > u64::from(u32::MAX) {
        return Err((
            plans.len().saturating_sub(1),
            Box::new(ResolveError::new(
                ResolveErrorKind::TooManyRanks {
                    nodes: spec.groups.iter().map(|g| g.spec.nodes).sum(),
                    per_node: 0,
                    total: world_size,
                },
                "groups",
                "run fewer nodes or ranks in the groups",
            )),
        ));
    }
    let world_nodes: u64 = plans.iter().map(|p| u64::from(p.nodes)).sum();
    let (mut first_rank, mut first_node) = (0, 0);
    for (index, (plan, g)) in plans.iter_mut().zip(&spec.groups).enumerate() {
        one_world(plan, &g.spec, world_size, world_nodes);
        plan.place = Place {
            group: Some(Group {
                name: g.name.clone(),
                index,
            }),
            first_rank,
            first_node,
            world_size,
            world_nodes,
        };
        first_rank += ranks(plan);
        first_node += u64::from(plan.nodes);
    }
    Ok(JobPlan {
        name: spec.name.clone(),
        shape: Shape::Groups,
        world_size,
        groups: plans,
    })
}

/// A group's ranks in the job's world: `WORLD_SIZE` the job's; on a job of several nodes, no
/// one-node variables (unless the spec's `env:` sets them).
fn one_world(plan: &mut Plan, spec: &Spec, world: u64, nodes: u64) {
    for rank in &mut plan.ranks {
        if !spec.env.contains_key(WORLD_SIZE) {
            rank.env.insert(WORLD_SIZE.into(), world.to_string());
        }
        if nodes > 1 {
            for var in NODE_PLACE {
                if !spec.env.contains_key(var) {
                    rank.env.remove(var);
                }
            }
        }
    }
}
