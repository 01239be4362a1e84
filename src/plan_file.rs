//! The plan on disk: YAML (default, made to be read in a diff) and JSON (`--format json`, a
//! stable interface for scripts). One serde type serves both; `schemas/plan.schema.json` is
//! generated from it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::plan::Plan;
use crate::yaml;

/// The plan format version written.
pub const FORMAT_VERSION: u32 = 1;

/// A numaplan plan: per local rank, its GPUs, CPUs, memory policy, NICs and environment.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "numaplan plan")]
pub struct PlanFile {
    /// Format version; always 1.
    pub numaplan_plan: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The program each rank runs (empty when the spec has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    pub topology: TopologyRef,
    /// The CPU policy that produced the plan.
    pub policy: String,
    /// Nodes of the job, all alike.
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// One entry per local rank.
    pub ranks: Vec<RankEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologyRef {
    pub name: String,
    /// FNV-1a 64 of the topology's canonical fixture text: changes whenever the machine does.
    pub fingerprint: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankEntry {
    /// Global rank on node 0 (on node k add k * ranks_per_node).
    pub rank: u32,
    pub local_rank: u32,
    /// GPU indices.
    pub gpus: Vec<u32>,
    /// The GPUs' PCI addresses, in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_pci: Vec<String>,
    /// Home NUMA node; null for a CPU-only rank spanning several nodes.
    pub numa_node: Option<u32>,
    /// CPUs as a cpulist, ascending ranges.
    pub cpus: String,
    /// Physical cores.
    pub cores: u32,
    pub memory: MemoryEntry,
    /// NIC names.
    pub nics: Vec<String>,
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryEntry {
    /// `preferred`, `bind`, `interleave` or `none`.
    pub policy: String,
    /// Node list in cpulist syntax ("3", "0,2"); "" for none.
    pub nodes: String,
}

/// What the header of a YAML plan records about its inputs.
pub struct Provenance<'a> {
    pub spec_file: &'a str,
    pub topology_fingerprint: &'a str,
    /// The command that regenerates the file.
    pub regenerate: &'a str,
}

pub fn to_file(plan: &Plan, fingerprint: &str) -> PlanFile {
    PlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        command: plan.command.clone(),
        topology: TopologyRef {
            name: plan.topology.clone(),
            fingerprint: fingerprint.to_string(),
        },
        policy: plan.policy.name().to_string(),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        ranks: plan
            .ranks
            .iter()
            .map(|r| RankEntry {
                rank: r.local_rank,
                local_rank: r.local_rank,
                gpus: r.gpus.iter().map(|g| g.index.0).collect(),
                gpu_pci: r.gpus.iter().map(|g| g.pci.to_string()).collect(),
                numa_node: r.numa_node.map(|n| n.0),
                cpus: r.cpus.to_string(),
                cores: r.cores,
                memory: MemoryEntry {
                    policy: r.memory.policy.name().to_string(),
                    nodes: r
                        .memory
                        .nodes
                        .iter()
                        .map(|n| n.0)
                        .collect::<CpuSet>()
                        .to_string(),
                },
                nics: r.nics.clone(),
                env: r.env.clone(),
            })
            .collect(),
        warnings: plan.warnings.clone(),
    }
}

pub fn render_yaml(plan: &Plan, p: &Provenance) -> String {
    let mut out = format!(
        "# numaplan {} plan, generated: do not edit; regenerate with\n#   {}\n# spec: {}\n# topology: {} (fingerprint {})\n",
        env!("CARGO_PKG_VERSION"),
        p.regenerate,
        p.spec_file,
        plan.topology,
        p.topology_fingerprint
    );
    out.push_str(&yaml::emit(&to_file(plan, p.topology_fingerprint)));
    out
}

pub fn render_json(plan: &Plan, fingerprint: &str) -> String {
    let mut s = serde_json::to_string_pretty(&to_file(plan, fingerprint))
        .expect("invariant: plan types always serialize");
    s.push('\n');
    s
}
