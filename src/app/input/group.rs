//! Which group of a job of several groups this node runs (`rank::group` finds it from
//! `--group`, `NUMAPLAN_GROUP`, a heterogeneous Slurm component or the node's shape), and the
//! groups as that search and its errors show them.

use super::subject::Subject;
use crate::error::Error;
use crate::rank::group::{GroupShape, ThisNode, find_group};
use crate::sys::node::environment;

/// The group of `subjects` (a job's groups) this node runs; `--group` of a plan of one group
/// names none of its groups.
pub(super) fn this_nodes_group(subjects: &[Subject], flag: Option<&str>) -> Result<usize, Error> {
    let groups = group_shapes(subjects);
    let env = environment();
    let host = env
        .get("SLURMD_NODENAME")
        .cloned()
        .unwrap_or_else(crate::sys::proc::hostname);
    let node = ThisNode {
        flag,
        env: &env,
        host: &host,
        shape: &super::super::node::shape,
    };
    Ok(find_group(&groups, &node)?)
}

/// The groups of `subjects`, as the group finder and its errors show them.
pub(crate) fn group_shapes(subjects: &[Subject]) -> Vec<GroupShape> {
    subjects
        .iter()
        .filter_map(|s| s.plan.group_shape())
        .collect()
}
