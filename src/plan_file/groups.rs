//! A plan of several groups on disk (`groups:` in the job spec): the job's name and world size,
//! then one entry per group, in spec order, each a plan of its own (its machine and
//! fingerprint, policy, nodes, ranks, warnings) with the group's name and first global rank.
//! A plan of one group is written as it always was.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, PlanFile, Provenance, to_file};
use crate::plan::groups::GroupedPlan;
use crate::provenance;
use crate::yaml::{self, FileError};

/// A numaplan plan of a job whose nodes are not all alike.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
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

pub fn to_grouped_file(plan: &GroupedPlan, groups: &[GroupProvenance]) -> GroupedPlanFile {
    GroupedPlanFile {
        numaplan_plan: FORMAT_VERSION,
        name: plan.name.clone(),
        world_size: plan.world_size,
        groups: plan
            .groups
            .iter()
            .zip(groups)
            .map(|(g, p)| {
                let header = provenance::Header {
                    regenerate: &[],
                    spec_file: "",
                    topology: &g.plan.topology,
                    fingerprint: p.fingerprint,
                };
                let mut file = to_file(
                    &g.plan,
                    &Provenance {
                        header,
                        topology_file: p.topology_file,
                        schema_ref: None,
                    },
                );
                // The job's name is said once, above the groups.
                file.name = None;
                for r in &mut file.ranks {
                    r.rank = (g.first_rank + u64::from(r.local_rank)) as u32;
                }
                GroupEntry {
                    group: g.name.clone(),
                    first_rank: g.first_rank,
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

/// A plan of several groups given where one group's plan is read (`exec`, `bind`, `verify`,
/// `explain`, `diff`): refused at its `groups` key, which says so, rather than an unknown-key
/// error. `None` for any other text.
pub(super) fn refuse_grouped(file: &str, text: &str) -> Option<FileError> {
    // Parsed twice only where the text names the grouped plan's key: `bind` reads a plan at
    // every rank's start.
    if !text.contains("world_size") {
        return None;
    }
    let (_, map) = yaml::parse::<GroupedPlanFile>(file, text).ok()?;
    Some(FileError::invalid(
        &map,
        "groups",
        "a plan of several groups (`groups:`): this numaplan compiles it, but does not yet \
         launch, verify, explain or diff it"
            .into(),
        Some("launch each group as a job of its own meanwhile".into()),
    ))
}
