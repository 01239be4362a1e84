//! `numaplan diff`: what a change does to placement, per rank, in words a reviewer reads.

use schemars::JsonSchema;
use serde::Serialize;

use super::quality::{self, Quality};
use super::rank_diff::rank_diffs;
pub use super::rank_diff::{Change, RankChanges, memory};
use crate::plan::Plan;
use crate::topology::Topology;

/// One side of a diff: a plan, where it came from, and its topology when known.
pub struct Side<'a> {
    pub label: &'a str,
    pub plan: &'a Plan,
    pub fingerprint: &'a str,
    pub topology: Option<&'a Topology>,
}

/// `diff --format json` (`"numaplan_diff": 1`, schemas/diff.schema.json).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Report {
    pub numaplan_diff: u32,
    pub old: String,
    pub new: String,
    /// Changes to the plan as a whole (policy, node count, topology, warnings).
    pub plan: Vec<Change>,
    /// Ranks with at least one change, ascending.
    pub ranks: Vec<RankChanges>,
    pub summary: Summary,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Summary {
    pub ranks_changed: u32,
    pub ranks: u32,
    /// Sum over ranks of max(cores gained, cores lost), an added or removed rank counting all
    /// its cores; `None` without both topologies.
    pub cores_moved: Option<u32>,
    pub quality_old: Option<Quality>,
    pub quality_new: Option<Quality>,
}

/// The diff of two jobs, each given as its groups' plans: a job of one group against another
/// is the plans' diff (`Report`), as it always was; where either job has named groups, each
/// group's diff, paired by name (`GroupedReport`).
pub fn diff_job(old: &[Side], new: &[Side]) -> AnyDiff {
    let grouped = old.iter().chain(new).any(|s| s.plan.group().is_some());
    match (grouped, old, new) {
        (false, [old], [new]) => AnyDiff::One(Box::new(diff(old, new))),
        _ => AnyDiff::Groups(diff_groups(old, new)),
    }
}

pub fn diff(old: &Side, new: &Side) -> Report {
    let topologies = old.topology.zip(new.topology);
    let (ranks, cores_moved) = rank_diffs(old.plan, new.plan, topologies);
    Report {
        numaplan_diff: 1,
        old: old.label.to_string(),
        new: new.label.to_string(),
        summary: Summary {
            ranks_changed: ranks.len() as u32,
            ranks: old.plan.ranks.len().max(new.plan.ranks.len()) as u32,
            cores_moved: topologies.map(|_| cores_moved),
            quality_old: old.topology.map(|t| quality::measure(old.plan, t)),
            quality_new: new.topology.map(|t| quality::measure(new.plan, t)),
        },
        plan: plan_changes(old, new),
        ranks,
    }
}

/// Changes to the plan as a whole: its fields, and warnings gone or new.
fn plan_changes(old: &Side, new: &Side) -> Vec<Change> {
    let mut plan = Vec::new();
    let mut field = |name: &str, a: String, b: String| {
        if a != b {
            plan.push(Change {
                field: name.into(),
                old: a,
                new: b,
                detail: None,
            });
        }
    };
    // Quoted as a shell reads it: `python "my train.py"` is two words, not three.
    let command = |p: &Plan| match p.command.is_empty() {
        true => NONE.to_string(),
        false => crate::shell::command(&p.command),
    };
    let (a, b) = (old.plan, new.plan);
    field("name", opt(&a.name), opt(&b.name));
    field("command", command(a), command(b));
    field("policy", a.policy.name().into(), b.policy.name().into());
    field("nodes", a.nodes.to_string(), b.nodes.to_string());
    field(
        "ranks_per_node",
        a.ranks_per_node.to_string(),
        b.ranks_per_node.to_string(),
    );
    field(
        "topology",
        format!("{} ({})", a.topology, old.fingerprint),
        format!("{} ({})", b.topology, new.fingerprint),
    );
    field(
        "reserved_cpus",
        a.reserved.to_string(),
        b.reserved.to_string(),
    );
    for w in a.warnings.iter().filter(|w| !b.warnings.contains(w)) {
        field("warning", w.listed(&a.allowed_warnings), String::new());
    }
    for w in b.warnings.iter().filter(|w| !a.warnings.contains(w)) {
        field("warning", String::new(), w.listed(&b.allowed_warnings));
    }
    plan
}

/// How a missing value reads (an unnamed plan, no command).
const NONE: &str = "(none)";

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| NONE.to_string())
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.plan.is_empty() && self.ranks.is_empty()
    }

    pub fn render_text(&self) -> String {
        let mut out = format!("--- {}\n+++ {}\n", self.old, self.new);
        for c in &self.plan {
            out.push_str(&format!("plan: {}\n", change_text(c)));
        }
        // A change every rank has (a variable of the spec's `env:`) is said once.
        let every: Vec<&Change> =
            match self.ranks.len() > 1 && self.ranks.len() as u32 == self.summary.ranks {
                true => self.ranks[0]
                    .changes
                    .iter()
                    .filter(|c| self.ranks.iter().all(|r| r.changes.contains(c)))
                    .collect(),
                false => Vec::new(),
            };
        if !every.is_empty() {
            let parts: Vec<String> = every.iter().map(|c| change_text(c)).collect();
            out.push_str(&format!("every rank: {}\n", parts.join(", ")));
        }
        for r in &self.ranks {
            let parts: Vec<String> = r
                .changes
                .iter()
                .filter(|c| !every.contains(c))
                .map(change_text)
                .collect();
            if !parts.is_empty() {
                out.push_str(&format!("rank {}: {}\n", r.rank, parts.join(", ")));
            }
        }
        if self.is_empty() {
            out.push_str("no change\n");
        }
        out.push_str(&format!("summary: {}\n", self.summary.line()));
        out
    }
}

fn change_text(c: &Change) -> String {
    let field = match c.field.as_str() {
        "reserved_cpus" => "reserved CPUs".to_string(),
        "gpus" => "GPUs".into(),
        "numa_node" => "home node".into(),
        "cpus" => "CPUs".into(),
        "nics" => "NIC".into(),
        other => other.replacen("env.", "env ", 1),
    };
    // Ranks and warnings exist on one side or both; other fields change value.
    let body = match (c.field.as_str(), c.old.is_empty(), c.new.is_empty()) {
        ("rank", true, _) => format!("added ({})", c.new),
        ("rank", _, true) => format!("removed ({})", c.old),
        (_, true, _) => format!("{field} + {}", c.new),
        (_, _, true) => format!("{field} - {}", c.old),
        _ => format!("{field} {} -> {}", c.old, c.new),
    };
    match &c.detail {
        Some(d) => format!("{body} ({d})"),
        None => body,
    }
}

impl Summary {
    pub fn line(&self) -> String {
        let mut s = format!("{} of {} ranks changed", self.ranks_changed, self.ranks);
        if let Some(m) = self.cores_moved {
            s.push_str(&format!(", {m} cores moved"));
        }
        match (&self.quality_old, &self.quality_new) {
            (Some(a), Some(b)) => {
                let helpers = match (a.helper_cores, b.helper_cores) {
                    (0, 0) => String::new(),
                    (x, y) => format!(", helper cores {x} -> {y}"),
                };
                s.push_str(&format!(
                    "; NUMA-local {} -> {}, shared cores {} -> {}, cores per rank {}-{} -> {}-{}{helpers}, remote NICs {} -> {}",
                    quality::percent(a.numa_local),
                    quality::percent(b.numa_local),
                    a.shared_cores,
                    b.shared_cores,
                    a.min_cores,
                    a.max_cores,
                    b.min_cores,
                    b.max_cores,
                    a.remote_nics,
                    b.remote_nics
                ))
            }
            _ => s.push_str("; pass --topology for cores, L3 groups and quality figures"),
        }
        s
    }
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
fn diff_groups(old: &[Side], new: &[Side]) -> GroupedReport {
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
