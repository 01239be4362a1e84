//! Flat, pre-formatted views of a plan for the templates, which hold no logic beyond for/if.

use serde::Serialize;

use crate::plan::Plan;
use crate::spec::MemPolicy;

/// What the header of a generated file records.
pub struct Origin<'a> {
    pub spec_file: &'a str,
    pub fingerprint: &'a str,
    pub regenerate: &'a str,
    /// The topology's CPU, NUMA node and GPU counts, checked on the node at start.
    pub cpus: usize,
    pub numa_nodes: usize,
    pub gpus: usize,
}

#[derive(Serialize)]
pub struct BashContext {
    version: &'static str,
    regenerate: String,
    spec_file: String,
    topology: String,
    fingerprint: String,
    rank_count: usize,
    command: Vec<String>,
    expect_cpus: String,
    expect_nodes: String,
    expect_gpus: String,
    ranks: Vec<BashRank>,
}

#[derive(Serialize)]
pub struct BashRank {
    rank: String,
    cpus: String,
    /// The numactl memory option (`--preferred=3`), or "" for none.
    memory: String,
    /// `NAME=value` entries.
    env: Vec<String>,
}

/// The numactl option for a rank's memory policy.
fn numactl_memory(policy: MemPolicy, nodes: &str) -> String {
    match policy {
        MemPolicy::None => String::new(),
        MemPolicy::Preferred => format!("--preferred={nodes}"),
        MemPolicy::Bind => format!("--membind={nodes}"),
        MemPolicy::Interleave => format!("--interleave={nodes}"),
    }
}

fn node_list(nodes: &[crate::ids::NodeId]) -> String {
    nodes
        .iter()
        .map(|n| n.0)
        .collect::<crate::cpuset::CpuSet>()
        .to_string()
}

pub fn bash(plan: &Plan, origin: &Origin) -> BashContext {
    BashContext {
        version: env!("CARGO_PKG_VERSION"),
        regenerate: origin.regenerate.to_string(),
        spec_file: origin.spec_file.to_string(),
        topology: plan.topology.clone(),
        fingerprint: origin.fingerprint.to_string(),
        rank_count: plan.ranks.len(),
        command: plan.command.clone(),
        expect_cpus: origin.cpus.to_string(),
        expect_nodes: origin.numa_nodes.to_string(),
        expect_gpus: origin.gpus.to_string(),
        ranks: plan
            .ranks
            .iter()
            .map(|r| BashRank {
                rank: r.local_rank.to_string(),
                cpus: r.cpus.to_string(),
                memory: numactl_memory(r.memory.policy, &node_list(&r.memory.nodes)),
                env: r.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            })
            .collect(),
    }
}
