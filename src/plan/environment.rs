//! Each rank's environment, written in one place: what a plan gives every rank (`planned`: its
//! numbering, its OpenMP thread count and the helper and OpenMP variables, the GPUs it sees,
//! its NIC's variables, the spec's `env:`), where its node is in the job (`node_place`, which a
//! plan of one node says itself and `exec` says for the node it runs on), and the marks a
//! started rank carries (`marks`, which `exec` and `bind` both set). Every variable's name is
//! `variables.rs`'s.

use std::collections::BTreeMap;

use super::Plan;
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
pub struct Parts<'a> {
    pub local_rank: u32,
    pub ranks_per_node: u32,
    pub nodes: u32,
    pub port: u16,
    /// Rank 0's address, which a plan of one node says itself.
    pub master_addr: &'a str,
    /// Its OpenMP thread count (`OMP_NUM_THREADS`).
    pub threads: u32,
    /// The helper and OpenMP variables, when asked for.
    pub inside: &'a [(&'static str, String)],
    /// The GPUs it sees.
    pub visible: &'a [Visible],
    /// `gpus: visible` chose by a variable: that variable with the value the plan was made
    /// with, so that every rank sees what the plan was made for.
    pub chosen: Option<(&'a str, &'a str)>,
    /// Its NIC's variables.
    pub nic: &'a [(&'static str, String)],
    /// What keeps its serving engine from binding it again (`Engine::variables`).
    pub engine: &'a [(&'static str, &'static str)],
    /// The spec's `env:`, which wins.
    pub user: &'a BTreeMap<String, String>,
}

/// A rank's environment as its plan holds it.
pub fn planned(p: &Parts) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    // Validation bounds nodes x ranks per node to a u32.
    let world = u64::from(p.ranks_per_node) * u64::from(p.nodes);
    for (k, v) in of_rank(p.local_rank, p.ranks_per_node, world, p.port) {
        set(k, v);
    }
    set(OMP_NUM_THREADS, p.threads.to_string());
    for (k, v) in p.inside {
        set(k, v.clone());
    }
    for v in p.visible {
        let ids: Vec<String> = v.gpus.iter().map(|g| g.to_string()).collect();
        set(v.variable, ids.join(","));
    }
    if p.nodes == 1 {
        for (k, v) in node_place(u64::from(p.local_rank), 0, p.master_addr) {
            set(k, v);
        }
    }
    if let Some((variable, value)) = p.chosen {
        set(variable, value.to_string());
    }
    for (k, v) in p.nic {
        set(k, v.clone());
    }
    for (k, v) in p.engine {
        set(k, v.to_string());
    }
    for (k, v) in p.user {
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
