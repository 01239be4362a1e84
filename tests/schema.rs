//! Generated files are committed and must match what the code generates.

mod common;

use common::{numaplan, repo};

fn check_generated(kind: &str, path: &str) {
    let generated = numaplan(&["schema", kind]).ok();
    let committed = std::fs::read_to_string(repo().join(path)).unwrap_or_default();
    if generated != committed {
        let diff: Vec<String> = generated
            .lines()
            .zip(committed.lines().chain(std::iter::repeat("")))
            .enumerate()
            .filter(|(_, (g, c))| g != c)
            .take(10)
            .map(|(i, (g, c))| format!("line {}: committed {c:?}, generated {g:?}", i + 1))
            .collect();
        panic!(
            "{path} is stale:\n{}\nregenerate it with: cargo run -- schema {kind} > {path}",
            diff.join("\n")
        );
    }
}

#[test]
fn topology_schema_is_current() {
    check_generated("topology", "schemas/topology.schema.json");
}

#[test]
fn job_schema_is_current() {
    check_generated("job", "schemas/job.schema.json");
}

#[test]
fn plan_schema_is_current() {
    check_generated("plan", "schemas/plan.schema.json");
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    // A light structural check (no validator dependency): the schema forbids unknown keys
    // everywhere the loader does, and documents every key of the format.
    let schema: serde_json::Value =
        serde_json::from_str(&numaplan(&["schema", "topology"]).ok()).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    for def in ["NodeEntry", "L3Entry", "GpuEntry", "NicEntry"] {
        assert_eq!(schema["$defs"][def]["additionalProperties"], false, "{def}");
    }
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(required, ["numaplan_topology", "name", "nodes"]);
}
