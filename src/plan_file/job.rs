//! A job's plan on disk, its one writer (`render_job_yaml`, `render_job_json`) and reader
//! (`load_job`). A job of one group (a spec without `groups:`) is written as a plan of one group
//! always was (`PlanFile`); a job of several groups as the job's name and world size, then one
//! entry per group, in spec order, each a plan of its own (its machine and fingerprint, policy,
//! nodes, ranks, warnings) with the group's name and first global rank.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, LoadedPlan, PlanFile, Provenance, to_file};
use crate::plan::job::{JobPlan, Shape};
use crate::plan::place::{Group, Place};
use crate::provenance;
use crate::yaml::{self, FileError};

/// A numaplan plan of a job whose nodes are not all alike.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "numaplan plan of several groups")]
pub struct GroupedPlanFile {
    /// Format version; always 1.
    pub numaplan_plan: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Ranks of the whole job: the sum over the groups (WORLD_SIZE).
    pub world_size: u64,
    /// The groups in spec order; global ranks run group by group, node by node, local rank by
    /// local rank.
    pub groups: Vec<GroupEntry>,
}

/// One group: its name, its first global rank, and its plan (a plan file of its own, format
/// version included).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GroupEntry {
    pub group: String,
    /// The global rank of the group's node 0, local rank 0 (its node k's local rank r is
    /// first_rank + k x ranks_per_node + r).
    pub first_rank: u64,
    #[serde(flatten)]
    pub plan: PlanFile,
}

/// Each group's provenance: its topology, file and fingerprint.
pub struct GroupProvenance<'a> {
    pub topology_file: Option<&'a str>,
    pub fingerprint: &'a str,
}

pub fn to_grouped_file(plan: &JobPlan, groups: &[GroupProvenance]) -> GroupedPlanFile {
    GroupedPlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        world_size: plan.world_size,
        groups: plan
            .named()
            .zip(groups)
            .map(|((group, plan), p)| {
                let header = provenance::Header {
                    regenerate: &[],
                    spec_file: "",
                    topology: &plan.topology,
                    fingerprint: p.fingerprint,
                };
                let mut file = to_file(
                    plan,
                    &Provenance {
                        header,
                        topology_file: p.topology_file,
                        schema_ref: None,
                    },
                );
                // The job's name is said once, above the groups.
                file.name = None;
                for r in &mut file.ranks {
                    r.rank = (plan.place.first_rank + u64::from(r.local_rank)) as u32;
                }
                GroupEntry {
                    group: group.name.clone(),
                    first_rank: plan.place.first_rank,
                    plan: file,
                }
            })
            .collect(),
    }
}

/// What a job's plan file records about its inputs: the header (the topology and fingerprint
/// lines name every group's, joined), the schema an editor's modeline points at, and each
/// group's machine.
pub struct JobProvenance<'a> {
    pub header: provenance::Header<'a>,
    /// `--schema-ref`.
    pub schema_ref: Option<&'a str>,
    /// One per group, in order.
    pub groups: Vec<GroupProvenance<'a>>,
}

impl JobProvenance<'_> {
    /// Of a job of one group: the plan file's provenance as it always was.
    fn of_one_group(&self) -> Provenance<'_> {
        Provenance {
            header: self.header,
            topology_file: self.groups.first().and_then(|g| g.topology_file),
            schema_ref: self.schema_ref,
        }
    }
}

/// A job's plan as YAML: the header, then the plan of its one group, or its groups.
pub fn render_job_yaml(job: &JobPlan, p: &JobProvenance) -> String {
    match (job.shape, job.groups.as_slice()) {
        (Shape::OneGroup, [plan]) => super::render_yaml(plan, &p.of_one_group()),
        _ => {
            let mut out = String::new();
            if let Some(schema) = p.schema_ref {
                out.push_str(&format!("# yaml-language-server: $schema={schema}\n"));
            }
            out.push_str(&p.header.comment_lines(provenance::File::Plan));
            out.push_str(&yaml::emit(&to_grouped_file(job, &p.groups)));
            out
        }
    }
}

/// A job's plan as JSON (`--format json`).
pub fn render_job_json(job: &JobPlan, p: &JobProvenance) -> String {
    match (job.shape, job.groups.as_slice()) {
        (Shape::OneGroup, [plan]) => super::render_json(plan, &p.of_one_group()),
        _ => {
            let mut s = serde_json::to_string_pretty(&to_grouped_file(job, &p.groups))
                .expect("invariant: plan types always serialize");
            s.push('\n');
            s
        }
    }
}

/// Reads a job's plan file back, of one group or several: each group's plan (of a job of
/// several, with its place in the job), its topology's fingerprint and file.
pub fn load_job(file: &str, text: &str) -> Result<Vec<LoadedPlan>, FileError> {
    match is_grouped(text) {
        true => load_grouped(file, text),
        false => Ok(vec![super::load(file, text)?]),
    }
}

/// Whether a plan file is a plan of several groups: it has the top-level key `groups` (parsed
/// only where the text names both of its keys: `bind` reads a plan at every rank's start).
fn is_grouped(text: &str) -> bool {
    text.contains("world_size")
        && text.contains("groups")
        && yaml::has_top_level_key(text, "groups") == Some(true)
}

/// Reads a plan of several groups back: every group's plan, numbered as the file says and
/// checked against it (first ranks in order, the world size their sum, names unique).
fn load_grouped(file: &str, text: &str) -> Result<Vec<LoadedPlan>, FileError> {
    let (f, map) = yaml::parse::<GroupedPlanFile>(file, text).map_err(FileError::from)?;
    let at = |path: String, message: String| FileError::invalid(&map, &path, message, None);
    if f.groups.is_empty() {
        return Err(at(
            "groups".into(),
            "a plan of several groups lists none".into(),
        ));
    }
    let world_nodes: u64 = f.groups.iter().map(|g| u64::from(g.plan.nodes)).sum();
    let ranks: u64 = f
        .groups
        .iter()
        .map(|g| u64::from(g.plan.nodes) * u64::from(g.plan.ranks_per_node))
        .sum();
    if ranks > u64::from(u32::MAX) {
        return Err(at(
            "world_size".into(),
            format!(
                "the groups have {ranks} ranks, more than the {} a job numbers",
                u32::MAX
            ),
        ));
    }
    if f.world_size != ranks {
        return Err(at(
            "world_size".into(),
            format!(
                "the world size is {}, and the groups have {ranks} ranks",
                f.world_size
            ),
        ));
    }
    let (mut first_rank, mut first_node) = (0u64, 0u64);
    let mut groups: Vec<LoadedPlan> = Vec::new();
    for (index, g) in f.groups.iter().enumerate() {
        let here = |key: &str| format!("groups[{index}].{key}");
        if f.groups[..index].iter().any(|o| o.group == g.group) {
            return Err(at(
                here("group"),
                format!("a second group named `{}`", g.group),
            ));
        }
        if g.first_rank != first_rank {
            return Err(at(
                here("first_rank"),
                format!(
                    "group `{}` starts at rank {}, and the groups before it have {first_rank} \
                     ranks",
                    g.group, g.first_rank
                ),
            ));
        }
        let place = Place {
            group: Some(Group {
                name: g.group.clone(),
                index,
            }),
            first_rank,
            first_node,
            world_size: f.world_size,
            world_nodes,
        };
        let mut plan = super::read::from_file(&g.plan, Some(place))
            .map_err(|(path, message)| at(here(&path), message))?;
        plan.name = f.name.clone();
        first_rank += plan.ranks_in_all();
        first_node += u64::from(plan.nodes);
        groups.push(LoadedPlan {
            plan,
            fingerprint: g.plan.topology.fingerprint.clone(),
            topology_file: g.plan.topology.file.clone(),
        });
    }
    Ok(groups)
}
