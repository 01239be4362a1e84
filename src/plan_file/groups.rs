//! A plan of several groups on disk (`groups:` in the job spec): the job's name and world size,
//! then one entry per group, in spec order, each a plan of its own (its machine and
//! fingerprint, policy, nodes, ranks, warnings) with the group's name and first global rank.
//! A plan of one group is written as it always was.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, LoadedPlan, PlanFile, Provenance, to_file};
use crate::plan::groups::GroupedPlan;
use crate::plan::place::GroupPlace;
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

/// A plan file of either kind: one group's (`PlanFile`) or several groups' (the schema of
/// `numaplan schema plan`).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "numaplan plan")]
pub enum AnyPlanFile {
    One(Box<PlanFile>),
    Groups(GroupedPlanFile),
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

pub fn to_grouped_file(plan: &GroupedPlan, groups: &[GroupProvenance]) -> GroupedPlanFile {
    GroupedPlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        world_size: plan.world_size,
        groups: plan
            .places()
            .zip(groups)
            .map(|((place, plan), p)| {
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
                    r.rank = (place.first_rank + u64::from(r.local_rank)) as u32;
                }
                GroupEntry {
                    group: place.name.clone(),
                    first_rank: place.first_rank,
                    plan: file,
                }
            })
            .collect(),
    }
}

/// The plan of several groups as YAML: the header (one topology line per group), then the
/// plan.
pub fn render_grouped_yaml(
    plan: &GroupedPlan,
    header: &provenance::Header,
    groups: &[GroupProvenance],
) -> String {
    let mut out = header.comment_lines(provenance::File::Plan);
    out.push_str(&yaml::emit(&to_grouped_file(plan, groups)));
    out
}

pub fn render_grouped_json(plan: &GroupedPlan, groups: &[GroupProvenance]) -> String {
    let mut s = serde_json::to_string_pretty(&to_grouped_file(plan, groups))
        .expect("invariant: plan types always serialize");
    s.push('\n');
    s
}

/// A plan of several groups read back: each group's plan (with its place in the job), its
/// topology's fingerprint and file.
pub struct LoadedGroups {
    pub name: Option<String>,
    pub world_size: u64,
    pub groups: Vec<LoadedPlan>,
}

/// Whether a plan file is a plan of several groups: it has the top-level key `groups` (parsed
/// only where the text names both of its keys: `bind` reads a plan at every rank's start).
pub fn is_grouped(text: &str) -> bool {
    text.contains("world_size")
        && text.contains("groups")
        && yaml::has_top_level_key(text, "groups") == Some(true)
}

/// Reads a plan of several groups back: every group's plan, numbered as the file says and
/// checked against it (first ranks in order, the world size their sum, names unique).
pub fn load_grouped(file: &str, text: &str) -> Result<LoadedGroups, FileError> {
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
        let place = GroupPlace {
            name: g.group.clone(),
            index,
            first_rank,
            first_node,
            world_size: f.world_size,
            world_nodes,
        };
        let mut plan = super::read::from_file(&g.plan, Some(place))
            .map_err(|(path, message)| at(here(&path), message))?;
        plan.name = f.name.clone();
        first_rank += u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
        first_node += u64::from(plan.nodes);
        groups.push(LoadedPlan {
            plan,
            fingerprint: g.plan.topology.fingerprint.clone(),
            topology_file: g.plan.topology.file.clone(),
        });
    }
    Ok(LoadedGroups {
        name: f.name,
        world_size: f.world_size,
        groups,
    })
}
