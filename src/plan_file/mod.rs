//! The plan on disk: YAML (default, made to be read in a diff) and JSON (`--format json`, a
//! stable interface for scripts). One serde type serves both; `schemas/plan.schema.json` is
//! generated from it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::diag::codes::Code;
use crate::ids::{PlanId, fnv1a, node_list};
use crate::plan::Plan;
use crate::provenance;
use crate::yaml::{self, FileError};

pub mod groups;
mod read;

use read::from_file;

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

/// What a plan file records about its inputs.
pub struct Provenance<'a> {
    /// The header's command, spec, topology and fingerprint.
    pub header: provenance::Header<'a>,
    /// The topology file, as a reader of the plan finds it (see `TopologyRef::file`).
    pub topology_file: Option<&'a str>,
    /// `--schema-ref`: the plan schema a `yaml-language-server` modeline points editors at.
    pub schema_ref: Option<&'a str>,
}

pub fn to_file(plan: &Plan, p: &Provenance) -> PlanFile {
    PlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        command: plan.command.clone(),
        topology: TopologyRef {
            name: plan.topology.clone(),
            file: p.topology_file.map(str::to_string),
            fingerprint: p.header.fingerprint.to_string(),
            cpus: plan.machine.cpus,
            numa_nodes: plan.machine.numa_nodes,
            gpus: plan.machine.gpus,
        },
        policy: plan.policy.name().to_string(),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        reserved_cpus: plan.reserved.to_string(),
        excluded_cpus: plan.excluded.to_string(),
        ranks: plan
            .ranks
            .iter()
            .map(|r| RankEntry {
                rank: r.local_rank,
                local_rank: r.local_rank,
                gpus: r.gpus.iter().map(|g| g.index.0).collect(),
                gpu_pci: r.gpus.iter().map(|g| g.pci.to_string()).collect(),
                // All or none: a GPU without a UUID leaves the list out.
                gpu_uuid: r
                    .gpus
                    .iter()
                    .map(|g| g.uuid.clone())
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default(),
                numa_node: r.numa_node.map(|n| n.0),
                cpus: r.cpus.to_string(),
                cores: r.cores,
                memory: MemoryEntry {
                    policy: r.memory.policy.name().to_string(),
                    nodes: node_list(&r.memory.nodes),
                    required: (!r.memory.required).then_some(false),
                },
                nics: r.nics.clone(),
                helpers: (!r.helpers.is_empty()).then(|| r.helpers.to_string()),
                openmp: r.openmp.as_ref().map(|o| OpenMpEntry {
                    threads: o.threads,
                    bind: o.bind.name().to_string(),
                    places: o.places.iter().map(CpuSet::to_string).collect(),
                }),
                env: r.env.clone(),
            })
            .collect(),
        warnings: plan
            .warnings
            .iter()
            .map(|w| WarningEntry::Coded {
                code: w.code.to_string(),
                message: w.message.clone(),
            })
            .collect(),
        allow_warnings: plan.allowed_warnings.iter().map(Code::to_string).collect(),
    }
}

/// The plan's identity (`PlanId`): a hash of what the plan says, without where it came from
/// (the topology file's path and fingerprint, the header), so that a plan has one id whether
/// it is read from its file, from `env:NUMAPLAN_PLAN` or compiled from its spec again.
pub fn id(plan: &Plan) -> PlanId {
    let neutral = Provenance {
        header: provenance::Header {
            regenerate: &[],
            spec_file: "",
            topology: "",
            fingerprint: "",
        },
        topology_file: None,
        schema_ref: None,
    };
    let content = serde_json::to_string(&to_file(plan, &neutral))
        .expect("invariant: plan types always serialize");
    PlanId(fnv1a(content.as_bytes()))
}

pub fn render_yaml(plan: &Plan, p: &Provenance) -> String {
    let mut out = String::new();
    if let Some(schema) = p.schema_ref {
        out.push_str(&format!("# yaml-language-server: $schema={schema}\n"));
    }
    out.push_str(&p.header.comment_lines(provenance::File::Plan));
    out.push_str(&yaml::emit(&to_file(plan, p)));
    out
}

pub fn render_json(plan: &Plan, p: &Provenance) -> String {
    let mut s = serde_json::to_string_pretty(&to_file(plan, p))
        .expect("invariant: plan types always serialize");
    s.push('\n');
    s
}

/// A plan file that cannot be read back.
pub type PlanFileError = FileError;

/// A plan read back from a file: the plan, and the fingerprint and file (relative to the plan)
/// of the topology it was made for.
pub struct LoadedPlan {
    pub plan: Plan,
    pub fingerprint: String,
    pub topology_file: Option<String>,
}

/// The error of a plan file that loads, at `path` (a problem only its machine shows).
pub fn located(file: &str, text: &str, path: &str, message: String) -> PlanFileError {
    match yaml::parse::<PlanFile>(file, text) {
        Ok((_, map)) => FileError::invalid(&map, path, message, None),
        Err(e) => FileError::from(e),
    }
}

/// Reads a plan file (YAML or JSON, which is YAML too) back into a `Plan`.
pub fn load(file: &str, text: &str) -> Result<LoadedPlan, PlanFileError> {
    let (f, map) = yaml::parse::<PlanFile>(file, text).map_err(FileError::from)?;
    match from_file(&f, None) {
        Ok(plan) => Ok(LoadedPlan {
            plan,
            fingerprint: f.topology.fingerprint,
            topology_file: f.topology.file,
        }),
        Err((path, message)) => Err(FileError::invalid(&map, &path, message, None)),
    }
}

/// Whether a YAML/JSON text is a plan (rather than a job spec): a mapping with the plan's format
/// key, in any layout (`jq -c` and Python's `json.dump` write it on one line). A text that
/// starts with the key, as numaplan writes plans, is one at once, and one that never names it
/// is none (a job spec, parsed only once, by its own loader); the rest is parsed to tell. A
/// text that does not parse (a truncated plan) is told by how it starts, so that its error is
/// a plan's.
pub fn looks_like_plan(text: &str) -> bool {
    crate::yaml::kind_of(text) == Some(crate::yaml::Kind::Plan)
}

