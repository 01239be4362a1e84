//! The plan file's format: what `compile` writes and every reader reads back, with its schema
//! (`numaplan schema plan`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// The serving engine the ranks run (`vllm`, `sglang`, `trtllm`): the spec's `engine:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    pub topology: TopologyRef,
    /// The CPU policy that produced the plan.
    pub policy: String,
    /// Nodes of the job, all alike.
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// CPUs the spec reserved (`cpu.reserve`, `cpu.reserve_per_l3`), which no rank uses.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reserved_cpus: String,
    /// CPUs of the machine that the spec's `cpu.allowed` leaves out, which no rank uses.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub excluded_cpus: String,
    /// One entry per local rank.
    pub ranks: Vec<RankEntry>,
    /// What the reader should know, one entry per warning with its kind's code
    /// (`numaplan codes W0203`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<WarningEntry>,
    /// Warning codes the spec accepts after review (`allow_warnings:`): those warnings stay
    /// above, but are not printed and `--deny-warnings` does not fail on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_warnings: Vec<String>,
}

/// One warning: `{code: W0203, message: ...}`; a plain string (a plan of an earlier numaplan)
/// reads as W0200.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WarningEntry {
    Coded {
        /// The warning's kind (`W0203`; `numaplan codes` lists them).
        code: String,
        message: String,
    },
    Plain(String),
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopologyRef {
    pub name: String,
    /// The topology file the plan was compiled from, relative to the plan file (or to the
    /// directory `compile` ran in, for a plan written to standard output); `explain` and `diff`
    /// use it when no `--topology` is given. Absent for a discovered machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// FNV-1a 64 of the topology's canonical fixture text, name, notes and memory sizes left
    /// out: changes whenever what placement depends on does (CPUs, nodes, caches, devices,
    /// distances), not when memory drifts.
    pub fingerprint: String,
    /// Logical CPUs of the machine; a node with another count refuses to start the plan.
    pub cpus: usize,
    /// NUMA nodes of the machine, memory-only ones included.
    pub numa_nodes: usize,
    /// GPUs of the machine.
    pub gpus: usize,
    /// The machine's NICs by name, in its topology's order: what a variable that names a NIC
    /// by prefix takes beside a rank's own (NCCL's `NCCL_IB_HCA=mlx5_1` takes `mlx5_10` too,
    /// where `=mlx5_1` takes it alone). Absent in a plan of an earlier numaplan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<String>,
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
    /// The GPUs' UUIDs, in the same order, where the topology knows them (NVML).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_uuid: Vec<String>,
    /// Home NUMA node; null for a CPU-only rank spanning several nodes.
    pub numa_node: Option<u32>,
    /// CPUs as a cpulist, ascending ranges.
    pub cpus: String,
    /// Physical cores.
    pub cores: u32,
    pub memory: MemoryEntry,
    /// NIC names.
    pub nics: Vec<String>,
    /// The NICs' kinds (`infiniband`, `roce`, `efa`, `slingshot`, `ethernet`), in the same
    /// order: what a launcher steers communication libraries by. Absent in a plan of an
    /// earlier numaplan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nic_kind: Vec<String>,
    /// The NICs' PCI addresses, in the same order, where the topology knows every one of them:
    /// what vLLM names a GPU's NIC by (`VLLM_GPU_NIC_PCIE_MAPPING`) and a device claim selects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nic_pci: Vec<String>,
    /// The rank's helper pool (`cpu.helpers`): a cpulist inside `cpus`; the rest is its compute
    /// set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helpers: Option<String>,
    /// Where its OpenMP threads run (`openmp:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openmp: Option<OpenMpEntry>,
    #[serde(deserialize_with = "crate::yaml::unique_keys")]
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenMpEntry {
    /// OMP_NUM_THREADS.
    pub threads: u32,
    /// OMP_PROC_BIND: `close`, `spread`, `master` or `false`.
    pub bind: String,
    /// The places in order, each a cpulist inside the compute set; none when threads are not
    /// bound or the runtime's own places are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryEntry {
    /// `preferred`, `bind`, `interleave` or `none`.
    pub policy: String,
    /// Node list in cpulist syntax ("3", "0,2"); "" for none.
    pub nodes: String,
    /// `false`: where the policy is refused (a container without `CAP_SYS_NICE`), the rank
    /// runs without it, with W0217; absent: the policy is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}
