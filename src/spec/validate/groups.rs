//! `groups:` (a heterogeneous job): each group is the top level with the group's keys laid over
//! it, key by key inside each mapping (`env:` by variable), and is validated as a spec of its
//! own. A problem is reported once: at the group's key where the group wrote it, else (a
//! problem of the mix, such as a group's `policy: mpibind` under the top level's `openmp:`) at
//! the top level's key, naming the group.

use serde_json::Value;

use super::Problems;
use super::one_group::validate_one_group;
use crate::spec::GroupSpec;
use crate::spec::raw::{GroupOptions, JobSpec};

/// The groups, each validated; the top level's own problems are `top`'s.
pub(super) fn groups(
    raw: &JobSpec,
    list: &[GroupOptions],
    top: &[crate::spec::error::SpecProblem],
    p: &mut Problems,
) -> Vec<GroupSpec> {
    if raw.nodes.is_some() {
        p.add(
            "nodes",
            "`nodes:` and `groups:` are both set: with groups, each group says its own `nodes`"
                .into(),
            "beside `groups:`",
            "move the count into each group (`groups: [{name: ..., nodes: N}]`)",
        );
    }
    if list.is_empty() {
        p.add(
            "groups",
            "`groups:` lists no group".into(),
            "empty",
            "list the groups, or remove `groups:` for nodes all alike",
        );
    }
    let mut out = Vec::new();
    for (i, group) in list.iter().enumerate() {
        names(list, i, p);
        let (merged, written) = merged(raw, group);
        match validate_one_group(&merged) {
            Ok(spec) => out.push(GroupSpec {
                name: group.name.clone(),
                topology: group
                    .topology
                    .as_deref()
                    .map(crate::topology::Source::named),
                spec,
            }),
            Err(problems) => {
                for mut problem in problems {
                    if has_path(&written, &problem.path) {
                        problem.path = format!("groups[{i}].{}", problem.path);
                    } else if top.contains(&problem) {
                        continue;
                    } else {
                        problem.message = format!("group `{}`: {}", group.name, problem.message);
                    }
                    p.0.push(problem);
                }
            }
        }
    }
    out
}

/// A group's name: not empty, of letters, digits, `-` and `_`, and its own.
fn names(list: &[GroupOptions], i: usize, p: &mut Problems) {
    let name = &list[i].name;
    let path = format!("groups[{i}].name");
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(fine) {
        p.add(
            &path,
            format!("group name `{name}` is not a word of letters, digits, `-` and `_`"),
            "not a name",
            "name the group as a shell variable's value can hold it: `trainers`, `rollout-4gpu`",
        );
    }
    if let Some(first) = list[..i].iter().position(|g| g.name == *name) {
        p.add(
            &path,
            format!("two groups are named `{name}` (groups[{first}] and groups[{i}])"),
            "a second group of this name",
            "give every group a name of its own",
        );
    }
}

/// The top level with the group's keys over it, as a spec of one group; and the keys the group
/// wrote itself.
fn merged(raw: &JobSpec, group: &GroupOptions) -> (JobSpec, Value) {
    let mut top = serde_json::to_value(JobSpec {
        groups: None,
        nodes: None,
        ..raw.clone()
    })
    .expect("invariant: a job spec serializes");
    let mut written = serde_json::to_value(group).expect("invariant: a group serializes");
    if let Value::Object(keys) = &mut written {
        keys.remove("name");
    }
    overlay(&mut top, &written);
    let merged = serde_json::from_value(top).expect("invariant: a group's keys are a spec's");
    (merged, written)
}

/// `over`'s keys laid over `base`, mappings key by key.
fn overlay(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        overlay(existing, value)
                    }
                    _ => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// Whether `value` holds the key path of a problem (`cpu.policy`, `gpus[1]`, `env.FOO`).
fn has_path(value: &Value, path: &str) -> bool {
    let mut at = value;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((key, rest)) => (key, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        at = match at.get(key) {
            Some(v) => v,
            None => return false,
        };
        if let Some(i) = index {
            at = match at.get(i) {
                Some(v) => v,
                None => return false,
            };
        }
    }
    true
}
