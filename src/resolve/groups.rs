//! A job of several groups (`groups:`): each group resolved on its own machine as a job of its
//! own, then numbered as one world: group by group, node by node, local rank by local rank.
//! `WORLD_SIZE` is the sum over the groups; the variables of a one-node job (`RANK`,
//! `NODE_RANK`, `GROUP_RANK`, `MASTER_ADDR`) are the launcher's when the job has more nodes.

use super::error::{ResolveError, ResolveErrorKind};
use crate::plan::Plan;
use crate::plan::groups::{GroupedPlan, PlannedGroup};
use crate::spec::Spec;
use crate::topology::Topology;

/// Resolves every group of `spec` on its machine (`topologies`, in group order). An error is
/// the group's index and its resolve error.
pub fn resolve_groups(
    spec: &Spec,
    topologies: &[Topology],
) -> Result<GroupedPlan, (usize, Box<ResolveError>)> {
    let mut groups = Vec::new();
    let mut next = 0u64;
    for (i, (group, topo)) in spec.groups.iter().zip(topologies).enumerate() {
        let plan = super::resolve(&group.spec, topo).map_err(|e| (i, Box::new(e)))?;
        let ranks = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
        groups.push(PlannedGroup {
            name: group.name.clone(),
            first_rank: next,
            plan,
        });
        next += ranks;
    }
    if next > u64::from(u32::MAX) {
        let last = groups.len().saturating_sub(1);
        return Err((
            last,
            Box::new(ResolveError::new(
                ResolveErrorKind::TooManyRanks {
                    nodes: spec.groups.iter().map(|g| g.spec.nodes).sum(),
                    per_node: 0,
                    total: next,
                },
                "groups",
                "run fewer nodes or ranks in the groups",
            )),
        ));
    }
    let nodes: u64 = groups.iter().map(|g| u64::from(g.plan.nodes)).sum();
    for (group, g) in groups.iter_mut().zip(&spec.groups) {
        one_world(&mut group.plan, &g.spec, next, nodes);
    }
    Ok(GroupedPlan {
        name: spec.name.clone(),
        world_size: next,
        groups,
    })
}

/// A group's ranks in the job's world: `WORLD_SIZE` the job's; on a job of several nodes, no
/// one-node variables (unless the spec's `env:` sets them).
fn one_world(plan: &mut Plan, spec: &Spec, world: u64, nodes: u64) {
    for rank in &mut plan.ranks {
        if !spec.env.contains_key("WORLD_SIZE") {
            rank.env.insert("WORLD_SIZE".into(), world.to_string());
        }
        if nodes > 1 {
            for var in ["RANK", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR"] {
                if !spec.env.contains_key(var) {
                    rank.env.remove(var);
                }
            }
        }
    }
}

/// A spec of several groups is planned by `resolve_groups`, group by group; `resolve` refuses
/// it rather than plan without its groups.
pub(super) fn one_group(spec: &Spec) -> Result<(), ResolveError> {
    match spec.groups.is_empty() {
        true => Ok(()),
        false => Err(ResolveError::new(
            ResolveErrorKind::GroupsNotPlanned,
            "groups",
            "`numaplan compile` plans the groups; launch each group as a job of its own meanwhile",
        )),
    }
}
