//! A rank's part of `numaplan diff`: what changed of each rank (its CPUs, with the cores and
//! L3 caches they moved between where the topologies tell, its home node, GPUs, NIC, memory,
//! OpenMP and environment), and the ranks one plan has and the other lacks.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Serialize;

use super::{cores_of, id_list};
use crate::ids::node_list;
use crate::plan::{MemoryBinding, Plan, RankBinding};
use crate::topology::Topology;

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

/// The ranks with changes, and the cores moved (an added or removed rank moves all its cores).
pub(super) fn rank_diffs(
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
            r.nic_names().join(",")
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
