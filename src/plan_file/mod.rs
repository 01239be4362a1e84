//! The plan on disk: YAML (default, made to be read in a diff) and JSON (`--format json`, a
//! stable interface for scripts). One serde type serves both; `schemas/plan.schema.json` is
//! generated from it.

use crate::cpuset::CpuSet;
use crate::diag::codes::Code;
use crate::ids::{PlanId, fnv1a, node_list};
use crate::plan::Plan;
use crate::provenance;
use crate::yaml::{self, FileError};

mod format;
pub mod job;
mod read;

pub use format::*;
use read::from_file;

/// What a plan file records about its inputs.
pub struct Provenance<'a> {
    /// The header's command, spec, topology and fingerprint.
    pub header: provenance::Header<'a>,
    /// The topology file, as a reader of the plan finds it (see `TopologyRef::file`).
    pub topology_file: Option<&'a str>,
    /// `--schema-ref`: the plan schema a `yaml-language-server` modeline points editors at.
    pub schema_ref: Option<&'a str>,
}

/// A plan for unit tests: one node of a machine of `machine` (`cpus: 8, numa_nodes: 2, gpus:
/// 4`) and `ranks`, each a flow mapping of a rank as a plan file writes it.
#[cfg(test)]
pub fn test_plan(machine: &str, ranks: &[String]) -> Plan {
    let mut text = format!(
        "numaplan_plan: 1\ntopology: {{name: t, fingerprint: f, {machine}}}\npolicy: node\n\
         nodes: 1\nranks_per_node: {}\nranks:\n",
        ranks.len()
    );
    for r in ranks {
        text.push_str(&format!("- {r}\n"));
    }
    load("plan.yaml", &text)
        .unwrap_or_else(|_| panic!("the test plan loads"))
        .plan
}

pub fn to_file(plan: &Plan, p: &Provenance) -> PlanFile {
    PlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        command: plan.command.clone(),
        engine: plan.engine.map(|e| e.word().to_string()),
        topology: TopologyRef {
            name: plan.topology.clone(),
            file: p.topology_file.map(str::to_string),
            fingerprint: p.header.fingerprint.to_string(),
            cpus: plan.machine.cpus,
            numa_nodes: plan.machine.numa_nodes,
            gpus: plan.machine.gpus,
            nics: plan.machine_nics.clone(),
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
                nics: r.nics.iter().map(|n| n.name.clone()).collect(),
                // All or none, as the GPUs' UUIDs.
                nic_kind: r
                    .nics
                    .iter()
                    .map(|n| Some(n.kind?.name().to_string()))
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default(),
                nic_pci: r
                    .nics
                    .iter()
                    .map(|n| Some(n.pci?.to_string()))
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default(),
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
/// (the topology file's path and fingerprint, the header) or the machine's name (a discovered
/// machine's is its hostname, random in a container and different on every node of a
/// cluster), so that a plan has one id whether it is read from its file, from
/// `env:NUMAPLAN_PLAN` or compiled from its spec again, here or on a node of the same shape.
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
    let mut file = to_file(plan, &neutral);
    file.topology.name.clear();
    let mut content = serde_json::to_string(&file).expect("invariant: plan types always serialize");
    // Two groups of one job may plan alike: their ranks are still told apart.
    if let Some(g) = plan.group() {
        let first = plan.place.first_rank;
        content.push_str(&format!("\ngroup {} from rank {first}", g.name));
    }
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

/// The error of a plan file that loads, at `path` of `plan` (a problem only its machine
/// shows); of a group of a plan of several, at that group's entry (`groups[1].ranks[0]...`).
pub fn located(file: &str, text: &str, plan: &Plan, path: &str, message: String) -> PlanFileError {
    let map = match plan.group() {
        None => yaml::parse::<PlanFile>(file, text).map(|(_, map)| map),
        Some(_) => yaml::parse::<job::GroupedPlanFile>(file, text).map(|(_, map)| map),
    };
    let path = match plan.group() {
        None => path.to_string(),
        Some(g) => format!("groups[{}].{path}", g.index),
    };
    match map {
        Ok(map) => FileError::invalid(&map, &path, message, None),
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
