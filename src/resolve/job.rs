//! A job: each of its groups (`Spec::job_groups`; a spec without `groups:` is a job of one)
//! resolved on its own machine, then placed in the job: numbered as one world, group by
//! group, node by node, local rank by local rank. Each rank's environment is written once, at
//! its group's place (`plan::environment::planned`): `WORLD_SIZE` the job's, and the variables
//! of a one-node job (`RANK`, `NODE_RANK`, `GROUP_RANK`, `MASTER_ADDR`) only where the job has
//! one node (else the launcher's).

use super::error::{ResolveError, ResolveErrorKind, SpecKey};
use super::{Unplaced, resolve_unplaced};
use crate::plan::job::{JobPlan, Shape};
use crate::plan::place::{Group, Place};
use crate::spec::Spec;
use crate::topology::Topology;

/// A group's resolve error, and of a named group its key as the group would write it
/// (`ResolveError::of_group`).
pub type JobError = (Box<ResolveError>, Option<SpecKey>);

/// Resolves every group of `spec` on its machine (`machines`, one per group of
/// `spec.job_groups()`, in order).
pub fn resolve_job(spec: &Spec, machines: &[Topology]) -> Result<JobPlan, JobError> {
    let groups = spec.job_groups();
    debug_assert_eq!(
        groups.len(),
        machines.len(),
        "invariant: a machine per group"
    );
    let mut unplaced = Vec::new();
    for (i, (group, topo)) in groups.iter().zip(machines).enumerate() {
        unplaced.push(
            resolve_unplaced(group.spec, topo).map_err(|e| match group.name {
                Some(name) => {
                    let (error, in_group) = e.of_group(i, name);
                    (Box::new(error), Some(in_group))
                }
                None => (Box::new(e), None),
            })?,
        );
    }
    let world_size: u64 = unplaced.iter().map(Unplaced::ranks).sum();
    if world_size > u64::from(u32::MAX) {
        return Err((
            Box::new(ResolveError::new(
                ResolveErrorKind::TooManyRanks {
                    nodes: spec.groups.iter().map(|g| g.spec.nodes).sum(),
                    per_node: 0,
                    total: world_size,
                },
                "groups",
                "run fewer nodes or ranks in the groups",
            )),
            None,
        ));
    }
    let world_nodes: u64 = unplaced.iter().map(|u| u64::from(u.nodes())).sum();
    let names = spec.job_groups().into_iter().map(|g| g.name);
    let (mut first_rank, mut first_node) = (0, 0);
    let mut plans = Vec::new();
    for (index, (u, name)) in unplaced.into_iter().zip(names).enumerate() {
        let (ranks, nodes) = (u.ranks(), u64::from(u.nodes()));
        plans.push(u.place(Place {
            group: name.map(|name| Group {
                name: name.to_string(),
                index,
            }),
            first_rank,
            first_node,
            world_size,
            world_nodes,
        }));
        first_rank += ranks;
        first_node += nodes;
    }
    Ok(JobPlan {
        name: spec.name.clone(),
        shape: match spec.groups.is_empty() {
            true => Shape::OneGroup,
            false => Shape::Groups,
        },
        world_size,
        groups: plans,
    })
}
