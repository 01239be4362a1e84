//! `numaplan diff`: what a change does to placement, per rank, in words a reviewer reads.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;

use super::quality::{self, Quality};
use super::{cores_of, id_list};
use crate::ids::node_list;
use crate::plan::{MemoryBinding, Plan, RankBinding};
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

#[derive(Debug, PartialEq, Serialize, JsonSchema)]
pub struct Change {
    /// The plan file's key (`cpus`, `numa_node`, `env.OMP_NUM_THREADS`, `policy`).
    pub field: String,
    pub old: String,
    pub new: String,
    /// What the change means (cores and L3 groups moved), when the topology tells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RankChanges {
    pub rank: u32,
    pub changes: Vec<Change>,
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

/// The ranks with changes, and the cores moved (an added or removed rank moves all its cores).
fn rank_diffs(
    old: &Plan,
    new: &Plan,
    topologies: Option<(&Topology, &Topology)>,
) -> (Vec<RankChanges>, u32) {
    let mut ranks = Vec::new();
    let mut cores_moved = 0;
    for i in 0..old.ranks.len().max(new.ranks.len()) {
        let changes = match (old.ranks.get(i), new.ranks.get(i)) {
            (Some(a), Some(b)) => {
                let (changes, moved) = rank_changes(a, b, topologies);
                cores_moved += moved;
                changes
            }
            (Some(a), None) => {
                cores_moved += a.cores;
                vec![presence(a, Presence::Removed)]
            }
            (None, Some(b)) => {
                cores_moved += b.cores;
                vec![presence(b, Presence::Added)]
            }
            (None, None) => Vec::new(),
        };
        if !changes.is_empty() {
            ranks.push(RankChanges {
                rank: i as u32,
                changes,
            });
        }
    }
    (ranks, cores_moved)
}

/// How a missing value reads (an unnamed plan, no command).
const NONE: &str = "(none)";

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| NONE.to_string())
}

enum Presence {
    Added,
    Removed,
}

/// A rank that exists on one side only: `field: rank`, the side it is on holds its CPUs.
fn presence(r: &RankBinding, presence: Presence) -> Change {
    let what = format!("CPUs {}", r.cpus);
    let (old, new) = match presence {
        Presence::Added => (String::new(), what),
        Presence::Removed => (what, String::new()),
    };
    Change {
        field: "rank".into(),
        old,
        new,
        detail: None,
    }
}

/// The changes of one rank, and how many cores it moved.
fn rank_changes(
    a: &RankBinding,
    b: &RankBinding,
    topologies: Option<(&Topology, &Topology)>,
) -> (Vec<Change>, u32) {
    let mut out = Vec::new();
    let mut moved = 0;
    let mut push = |field: &str, old: String, new: String, detail: Option<String>| {
        if old != new {
            out.push(Change {
                field: field.into(),
                old,
                new,
                detail,
            });
        }
    };
    let gpus = |r: &RankBinding| {
        let v: Vec<String> = r.gpus.iter().map(|g| g.index.to_string()).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(",")
        }
    };
    push("gpus", gpus(a), gpus(b), None);
    let node = |r: &RankBinding| r.numa_node.map_or("none".into(), |n| n.to_string());
    push("numa_node", node(a), node(b), None);
    if a.cpus != b.cpus {
        let detail = topologies.map(|(ta, tb)| {
            let (text, m) = cpu_detail(ta, a, tb, b);
            moved = m;
            text
        });
        push("cpus", a.cpus.to_string(), b.cpus.to_string(), detail);
    }
    let nics = |r: &RankBinding| {
        if r.nics.is_empty() {
            "none".into()
        } else {
            r.nics.join(",")
        }
    };
    push("nics", nics(a), nics(b), None);
    push("memory", memory(&a.memory), memory(&b.memory), None);
    let helpers = |r: &RankBinding| {
        if r.helpers.is_empty() {
            "none".into()
        } else {
            r.helpers.to_string()
        }
    };
    push("helpers", helpers(a), helpers(b), None);
    push("openmp", openmp(a), openmp(b), None);
    let keys: BTreeSet<&String> = a.env.keys().chain(b.env.keys()).collect();
    for k in keys {
        let get = |r: &RankBinding| r.env.get(k).map_or("(unset)".to_string(), |v| v.clone());
        push(&format!("env.{k}"), get(a), get(b), None);
    }
    (out, moved)
}

/// `8 threads, close over {0,64},{1,65}`, `none`: a rank's OpenMP placement in one line.
fn openmp(r: &RankBinding) -> String {
    let Some(o) = &r.openmp else {
        return "none".into();
    };
    let places: Vec<String> = o.places.iter().map(|p| format!("{{{p}}}")).collect();
    match places.is_empty() {
        true => format!("{} threads, {}", o.threads, o.bind.name()),
        false => format!(
            "{} threads, {} over {}",
            o.threads,
            o.bind.name(),
            places.join(",")
        ),
    }
}

/// `preferred:1`, `interleave:0-3`, `none`.
pub fn memory(m: &MemoryBinding) -> String {
    if m.nodes.is_empty() {
        return m.policy.name().into();
    }
    format!("{}:{}", m.policy.name(), node_list(&m.nodes))
}

/// "4 cores moved from L3 group 3 to 4", and the number of cores moved.
fn cpu_detail(ta: &Topology, a: &RankBinding, tb: &Topology, b: &RankBinding) -> (String, u32) {
    // Cores are compared by their lowest CPU, which names the same core on both sides when the
    // machine is the same.
    let keys = |t: &Topology, r: &RankBinding| -> BTreeMap<u32, u32> {
        cores_of(t, &r.cpus)
            .into_iter()
            .map(|i| (t.cores()[i].key(), t.cores()[i].l3.0))
            .collect()
    };
    let (ka, kb) = (keys(ta, a), keys(tb, b));
    let lost: BTreeMap<u32, u32> = ka
        .iter()
        .filter(|(k, _)| !kb.contains_key(k))
        .map(|(k, v)| (*k, *v))
        .collect();
    let gained: BTreeMap<u32, u32> = kb
        .iter()
        .filter(|(k, _)| !ka.contains_key(k))
        .map(|(k, v)| (*k, *v))
        .collect();
    let ids = |m: &BTreeMap<u32, u32>| id_list(m.values().copied());
    let groups = |m: &BTreeMap<u32, u32>| {
        let n = m.values().collect::<BTreeSet<_>>().len();
        format!(
            "{} {}",
            if n == 1 { "L3 group" } else { "L3 groups" },
            ids(m)
        )
    };
    let cores = |n: usize| {
        if n == 1 {
            "1 core".to_string()
        } else {
            format!("{n} cores")
        }
    };
    let moved = lost.len().max(gained.len()) as u32;
    let text = match (lost.len(), gained.len()) {
        (0, 0) => {
            let per = |r: &RankBinding| r.cpus.len() / r.cores.max(1) as usize;
            format!("same cores, {} -> {} threads per core", per(a), per(b))
        }
        (l, g) if l == g => format!(
            "{} moved from {} to {}",
            cores(l),
            groups(&lost),
            ids(&gained)
        ),
        (0, g) => format!("{} added in {}", cores(g), groups(&gained)),
        (l, 0) => format!("{} dropped from {}", cores(l), groups(&lost)),
        (l, g) => format!(
            "{} dropped from {}, {} added in {}",
            cores(l),
            groups(&lost),
            cores(g),
            groups(&gained)
        ),
    };
    // Cores alone understate a change of threads per core (`smt: one` -> `all`: 7 -> 16 CPUs
    // is "1 core added"): then the CPUs too.
    let per_core = |r: &RankBinding| (r.cpus.len(), r.cores.max(1) as usize);
    let ((ca, na), (cb, nb)) = (per_core(a), per_core(b));
    let text = match (lost.len(), gained.len()) {
        (0, 0) => text,
        _ if ca * nb != cb * na => format!("{text}, {ca} -> {cb} CPUs"),
        _ => text,
    };
    (text, moved)
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
