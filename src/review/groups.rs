//! Reviewing a plan of several groups (`groups:`): each group's diff paired by name, a group
//! added or removed said as such, and the heading that names a group's part of a review.

use schemars::JsonSchema;
use serde::Serialize;

use super::diff::{Report, Side, diff};
use super::explain;
use crate::plan::Plan;

/// A group's heading: `group `trainer`: ranks 0-15 (2 nodes x 8), on nvidia-dgx-h100`.
pub fn heading(plan: &Plan) -> Option<String> {
    let g = plan.group()?;
    let ranks = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
    let span = plan.place.span(ranks);
    Some(format!(
        "group `{}`: {span} of {} ({} node(s) x {}), on {}",
        g.name,
        plan.world_size(),
        plan.nodes,
        plan.ranks_per_node,
        plan.topology
    ))
}

/// What became of a group between two plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupStatus {
    Same,
    Changed,
    Added,
    Removed,
}

/// `diff --format json` of plans of several groups.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GroupedReport {
    pub numaplan_diff: u32,
    /// Every group of either plan: the old plan's in order, then the groups only the new
    /// one has.
    pub groups: Vec<GroupDiff>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GroupDiff {
    /// The group's name; `null` for the one group of a plan without groups (a job whose nodes
    /// are all alike), compared with a plan of several.
    pub group: Option<String>,
    pub status: GroupStatus,
    /// The group's diff, where both plans have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Report>,
}

/// A side's group name; `None` for the one group of a plan without groups.
fn name<'a>(side: &Side<'a>) -> Option<&'a str> {
    side.plan.group().map(|g| g.name.as_str())
}

/// The groups of two plans paired by name (the one group of a plan without groups pairs with
/// its like alone), each pair diffed.
pub fn diff_groups(old: &[Side], new: &[Side]) -> GroupedReport {
    let mut groups = Vec::new();
    for o in old {
        let entry = match new.iter().find(|n| name(n) == name(o)) {
            Some(n) => {
                let report = diff(o, n);
                let status = match report.is_empty() {
                    true => GroupStatus::Same,
                    false => GroupStatus::Changed,
                };
                (status, Some(report))
            }
            None => (GroupStatus::Removed, None),
        };
        groups.push(GroupDiff {
            group: name(o).map(String::from),
            status: entry.0,
            diff: entry.1,
        });
    }
    for n in new
        .iter()
        .filter(|n| !old.iter().any(|o| name(o) == name(n)))
    {
        groups.push(GroupDiff {
            group: name(n).map(String::from),
            status: GroupStatus::Added,
            diff: None,
        });
    }
    GroupedReport {
        numaplan_diff: 1,
        groups,
    }
}

impl GroupedReport {
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.status == GroupStatus::Same)
    }

    pub fn render_text(&self) -> String {
        let mut out = String::new();
        for g in &self.groups {
            let group = match &g.group {
                Some(name) => format!("group `{name}`"),
                None => "the plan without groups".to_string(),
            };
            match (&g.status, &g.diff) {
                (GroupStatus::Same, _) => out.push_str(&format!("{group}: no change\n")),
                (GroupStatus::Added, _) => out.push_str(&format!("{group}: added\n")),
                (GroupStatus::Removed, _) => out.push_str(&format!("{group}: removed\n")),
                (_, Some(report)) => {
                    out.push_str(&format!("{group}:\n"));
                    out.push_str(&report.render_text());
                }
                (_, None) => {}
            }
        }
        out
    }
}

/// `explain --format json` of a plan of several groups: each group's report with its name and
/// first global rank.
#[derive(Serialize, JsonSchema)]
pub struct GroupedExplain {
    pub numaplan_explain: u32,
    pub groups: Vec<GroupExplain>,
}

#[derive(Serialize, JsonSchema)]
pub struct GroupExplain {
    pub group: String,
    pub first_rank: u64,
    pub explain: explain::Report,
}

/// `diff`'s report: of two plans of one group, or of plans of several (printed as the one or
/// the other; `numaplan schema diff` tells them apart by `groups`).
#[derive(Serialize)]
#[serde(untagged)]
pub enum AnyDiff {
    One(Box<Report>),
    Groups(GroupedReport),
}

impl AnyDiff {
    pub fn is_empty(&self) -> bool {
        match self {
            AnyDiff::One(report) => report.is_empty(),
            AnyDiff::Groups(report) => report.is_empty(),
        }
    }

    pub fn render_text(&self) -> String {
        match self {
            AnyDiff::One(report) => report.render_text(),
            AnyDiff::Groups(report) => report.render_text(),
        }
    }
}
