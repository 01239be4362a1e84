//! A rank's torchrun numbering, written in one place: what a plan gives every rank (its local
//! rank and size, the world's size, the rendezvous port), and where its node is in the job (its
//! global rank, the node's rank, the rendezvous address), which a plan of one node says itself
//! and `exec` says for the node it runs on; and the marks a started rank carries, which `exec`
//! and `bind` both set.

use super::Plan;
use crate::ids::Mark;
use crate::variables::{
    GROUP_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NODE_RANK, NUMAPLAN_BOUND,
    NUMAPLAN_GROUP, RANK, WORLD_SIZE,
};

/// What every rank of a plan is numbered with.
pub fn of_rank(
    local_rank: u32,
    ranks_per_node: u32,
    world_size: u64,
    port: u16,
) -> [(&'static str, String); 4] {
    [
        (LOCAL_RANK, local_rank.to_string()),
        (LOCAL_WORLD_SIZE, ranks_per_node.to_string()),
        (WORLD_SIZE, world_size.to_string()),
        (MASTER_PORT, port.to_string()),
    ]
}

/// Where a rank's node is in the job: its global rank, the node's rank (torchrun's
/// `GROUP_RANK`, and `NODE_RANK` for the code that reads that) and rank 0's address.
pub fn node_place(rank: u64, node: u64, master_addr: &str) -> [(&'static str, String); 4] {
    [
        (RANK, rank.to_string()),
        (GROUP_RANK, node.to_string()),
        (NODE_RANK, node.to_string()),
        (MASTER_ADDR, master_addr.to_string()),
    ]
}

/// What a started rank carries beside its plan's variables: which plan's rank it is (its mark,
/// for `verify --match`) and, in a job of several groups, of which group (for a nested `bind`
/// or `verify`).
pub fn marks(plan: &Plan, mark: &Mark) -> Vec<(&'static str, String)> {
    let mut marks = vec![(NUMAPLAN_BOUND, mark.to_string())];
    if let Some(g) = plan.group() {
        marks.push((NUMAPLAN_GROUP, g.name.clone()));
    }
    marks
}
