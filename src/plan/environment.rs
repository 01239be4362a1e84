//! Each rank's environment, written in one place and once: what a plan gives every rank
//! (`planned`: its numbering in its job, its OpenMP thread count and the helper and OpenMP
//! variables, the GPUs it sees, its NIC's variables, the spec's `env:`), where its node is in
//! the job (`node_place`, which a job of one node says itself and a launcher says for the node
//! it runs on: `launch_numbering`), and the marks a started rank carries (`marks`, which `exec`
//! and `bind` both set). Every variable's name is `variables.rs`'s.

use std::collections::BTreeMap;

use super::Plan;
use super::place::Place;
use crate::ids::{GpuIndex, Mark};
use crate::variables::{
    GROUP_RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NODE_RANK, NUMAPLAN_BOUND,
    NUMAPLAN_GROUP, OMP_NUM_THREADS, RANK, WORLD_SIZE,
};

/// The GPUs a rank sees through one runtime's variable (`CUDA_VISIBLE_DEVICES`...), by index;
/// none is the empty value, which hides every GPU of that runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible {
    pub variable: &'static str,
    pub gpus: Vec<GpuIndex>,
}

/// What a rank's planned environment is made of, each part typed. `planned` writes them in
/// this order, a later part winning over an earlier one, as
/// docs/policies.md, "Memory, NICs and each rank's environment" says.
#[derive(Clone, Debug)]
pub struct Parts {
    pub local_rank: u32,
    pub ranks_per_node: u32,
    pub port: u16,
    /// Rank 0's address, which a job of one node says itself.
    pub master_addr: String,
    /// Its OpenMP thread count (`OMP_NUM_THREADS`).
    pub threads: u32,
    /// The helper and OpenMP variables, when asked for.
    pub inside: Vec<(&'static str, String)>,
    /// The GPUs it sees.
    pub visible: Vec<Visible>,
    /// `gpus: visible` chose by a variable: that variable with the value the plan was made
    /// with, so that every rank sees what the plan was made for.
    pub chosen: Option<(String, String)>,
    /// Its NIC's variables.
    pub nic: Vec<(&'static str, String)>,
    /// What keeps its serving engine from binding it again (`Engine::variables`).
    pub engine: &'static [(&'static str, &'static str)],
    /// The spec's `env:`, which wins.
    pub user: BTreeMap<String, String>,
}

/// A rank's environment as its plan holds it, at `place` in its job: `WORLD_SIZE` the job's,
/// and where the job has one node, that node's place (`RANK`, `GROUP_RANK`, `NODE_RANK`,
/// `MASTER_ADDR`; of a job of several, the launcher says them for the node it starts).
pub fn planned(p: &Parts, place: &Place) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    for (k, v) in of_rank(p.local_rank, p.ranks_per_node, place.world_size, p.port) {
        set(k, v);
    }
    set(OMP_NUM_THREADS, p.threads.to_string());
    for (k, v) in &p.inside {
        set(k, v.clone());
    }
    for v in &p.visible {
        let ids: Vec<String> = v.gpus.iter().map(|g| g.to_string()).collect();
        set(v.variable, ids.join(","));
    }
    if place.world_nodes == 1 {
        let rank = place.first_rank + u64::from(p.local_rank);
        for (k, v) in node_place(rank, place.first_node, &p.master_addr) {
            set(k, v);
        }
    }
    if let Some((variable, value)) = &p.chosen {
        set(variable, value.clone());
    }
    for (k, v) in &p.nic {
        set(k, v.clone());
    }
    for (k, v) in p.engine.iter() {
        set(k, v.to_string());
    }
    for (k, v) in &p.user {
        set(k, v.clone());
    }
    env
}

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

/// The numbering a launcher gives local rank `local` of the plan's node `node` (of a job of
/// several groups: the group's node), rank 0 being at `master_addr`: its global rank and node,
/// after the groups before it. `exec` sets it in each rank it starts; the launch scripts write
/// it with the `numbering` macro of `templates/prelude.sh.j2`.
pub fn launch_numbering(
    plan: &Plan,
    node: u32,
    local: u32,
    master_addr: &str,
) -> [(&'static str, String); 4] {
    node_place(
        plan.global_rank(node, local),
        plan.global_node(node),
        master_addr,
    )
}

/// What a started rank carries beside its plan's variables: which plan's rank it is (its mark,
/// for `verify --match`) and, in a job of several groups, of which group (for a nested `bind`
/// or `verify`).
pub fn marks(plan: &Plan, mark: &Mark) -> Vec<(String, String)> {
    let mut marks = vec![(NUMAPLAN_BOUND.to_string(), mark.to_string())];
    if let Some(g) = plan.group() {
        marks.push((NUMAPLAN_GROUP.to_string(), g.name.clone()));
    }
    marks
}
