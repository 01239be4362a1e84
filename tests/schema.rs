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

/// Editors validate specs and plans through their yaml-language-server modeline: example specs
/// point at the committed schema by path; a plan has none by default (the repository's URL is
/// not published), and `--schema-ref` points it at a schema the user wrote with
/// `numaplan schema plan -o FILE`, which resolves.
#[test]
fn modelines_point_at_the_committed_schemas() {
    for e in std::fs::read_dir(common::repo().join("examples")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let target = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# yaml-language-server: $schema="))
            .unwrap_or_else(|| panic!("{} lacks a modeline", p.display()));
        assert!(
            p.parent().unwrap().join(target).exists(),
            "{}: {target}",
            p.display()
        );
        assert!(target.ends_with("job.schema.json"));
    }
    let plan = numaplan(&["compile", "examples/lumi-g.yaml"]).ok();
    assert!(
        !plan.contains("yaml-language-server"),
        "no modeline by default"
    );
    let dir = tempfile::tempdir().unwrap();
    let lumi = common::repo().join("examples/lumi-g.yaml");
    let written = common::numaplan_in(
        dir.path(),
        &["schema", "plan", "-o", "schemas/plan.schema.json"],
    );
    assert_eq!(
        written.code, 3,
        "the directory must exist: {}",
        written.stderr
    );
    std::fs::create_dir(dir.path().join("schemas")).unwrap();
    common::numaplan_in(
        dir.path(),
        &["schema", "plan", "-o", "schemas/plan.schema.json"],
    )
    .ok();
    std::fs::create_dir(dir.path().join("plans")).unwrap();
    common::numaplan_in(
        dir.path(),
        &[
            "compile",
            lumi.to_str().unwrap(),
            "--schema-ref",
            "../schemas/plan.schema.json",
            "-o",
            "plans/lumi.yaml",
        ],
    )
    .ok();
    let plan = std::fs::read_to_string(dir.path().join("plans/lumi.yaml")).unwrap();
    let target = plan
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# yaml-language-server: $schema="))
        .expect("--schema-ref starts the plan with a modeline");
    let resolved = dir.path().join("plans").join(target);
    assert_eq!(
        std::fs::read_to_string(resolved).unwrap(),
        std::fs::read_to_string(common::repo().join("schemas/plan.schema.json")).unwrap(),
        "the modeline resolves to the plan schema"
    );
    // The plan's keys are the schema's.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("schemas/plan.schema.json")).unwrap(),
    )
    .unwrap();
    let value: serde_json::Value = serde_json::from_str(
        &numaplan(&["compile", "examples/lumi-g.yaml", "--format", "json"]).ok(),
    )
    .unwrap();
    // The schema is either kind of plan, chosen by `groups`: one group's, or several groups'.
    assert_eq!(schema["if"]["required"], serde_json::json!(["groups"]));
    assert_eq!(schema["else"]["$ref"], "#/$defs/PlanFile");
    assert_eq!(schema["then"]["$ref"], "#/$defs/GroupedPlanFile");
    assert!(schema.get("anyOf").is_none());
    for key in value.as_object().unwrap().keys() {
        assert!(
            schema["$defs"]["PlanFile"]["properties"].get(key).is_some(),
            "plan key `{key}` not in the schema"
        );
    }
    let grouped: serde_json::Value = serde_json::from_str(
        &numaplan(&["compile", "examples/rl-groups.yaml", "--format", "json"]).ok(),
    )
    .unwrap();
    for key in grouped.as_object().unwrap().keys() {
        assert!(
            schema["$defs"]["GroupedPlanFile"]["properties"]
                .get(key)
                .is_some(),
            "grouped plan key `{key}` not in the schema"
        );
    }
    for key in value["ranks"][0].as_object().unwrap().keys() {
        assert!(
            schema["$defs"]["RankEntry"]["properties"]
                .get(key)
                .is_some(),
            "rank key `{key}`"
        );
    }
}

#[test]
fn report_schemas_are_current() {
    for kind in [
        "explain", "diff", "bind", "exec", "verify", "watch", "codes",
    ] {
        check_generated(kind, &format!("schemas/{kind}.schema.json"));
    }
}

/// Every command that prints JSON says which shape it is (`"numaplan_<kind>": 1`), and its
/// schema requires that field.
#[test]
fn every_json_report_names_its_kind() {
    let lumi = "examples/lumi-g.yaml";
    let runs: [(&str, Vec<&str>); 7] = [
        ("plan", vec!["compile", lumi, "--format", "json"]),
        ("explain", vec!["explain", lumi, "--format", "json"]),
        (
            "diff",
            vec!["diff", lumi, "examples/frontier.yaml", "--format", "json"],
        ),
        ("codes", vec!["codes", "--format", "json"]),
        (
            "topology",
            vec![
                "topo",
                "--topology",
                "examples/topologies/lumi-g.yaml",
                "--format",
                "json",
            ],
        ),
        (
            "exec",
            vec![
                "exec",
                lumi,
                "--dry-run",
                "--force",
                "--format",
                "json",
                "--",
                "true",
            ],
        ),
        (
            "bind",
            vec![
                "bind",
                lumi,
                "--local-rank",
                "0",
                "--force",
                "--dry-run",
                "--format",
                "json",
            ],
        ),
    ];
    for (kind, args) in runs {
        let run = numaplan(&args);
        let value: serde_json::Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{kind}: {e}: {}{}", run.stdout, run.stderr));
        let field = format!("numaplan_{kind}");
        assert_eq!(value[&field], 1, "{kind}: {}", run.stdout);
        let schema: serde_json::Value =
            serde_json::from_str(&numaplan(&["schema", kind]).ok()).unwrap();
        // A plan, an explain and a diff are of one group or of several (chosen by `groups`): these are of
        // one group.
        let schema = match kind {
            "plan" => schema["$defs"]["PlanFile"].clone(),
            "explain" | "diff" => schema["$defs"]["Report"].clone(),
            _ => schema,
        };
        let required = schema["required"].as_array().unwrap();
        assert!(required.iter().any(|r| r == &field), "{kind}: {schema}");
    }
}

/// What an editor shows from `job.schema.json` helps: every property has a description, and a
/// `default` unless its default depends on the machine or the policy (listed here); every
/// enumerated value (each policy) has its own description (`oneOf` of `const`s, which VS Code
/// shows); the counts numaplan rejects at 0 have `minimum: 1`. (The documents a description
/// names exist: `tests/readme.rs` follows every reference.)
#[test]
fn the_job_schema_helps_editors() {
    let schema: serde_json::Value =
        serde_json::from_str(&numaplan(&["schema", "job"]).ok()).unwrap();
    let no_default = [
        "name",
        "command",
        "topology",
        "ranks_per_node",
        "gpu",
        "cpu",
        "memory",
        "nic",
        "env",
        "openmp",
        "rendezvous",
        "slurm",
        "flux",
        "kubernetes",
        "image",
        "workload",
        "namespace",
        "args",
        "cpus@SidecarOptions",
        "queue",
        "requires",
        "mpirun",
        "openmpi",
        "mpich",
        "max_cores",
        "reserve_cpus",
        "reserve",
        "allowed",
        "allowed_nodes",
        "threads@CpuOptions",
        "groups",
        "gpus@GroupOptions",
        "gpus_per_rank@GroupOptions",
        "policy@MemoryOptions",
        "required@MemoryOptions",
        "engine",
        "partition",
        "account",
        "time",
        "extra",
    ];
    let mut objects = vec![("JobSpec".to_string(), &schema)];
    for (name, def) in schema["$defs"].as_object().unwrap() {
        objects.push((name.clone(), def));
    }
    let mut checked = 0;
    for (owner, object) in &objects {
        for (key, prop) in object["properties"].as_object().into_iter().flatten() {
            let description = prop["description"].as_str().unwrap_or_default();
            assert!(!description.is_empty(), "{owner}.{key} has no description");
            let listed = no_default.contains(&key.as_str())
                || no_default.contains(&format!("{key}@{owner}").as_str());
            assert_eq!(
                prop.get("default").is_some(),
                !listed,
                "{owner}.{key}: a default, or listed as having none: {prop}"
            );
            checked += 1;
        }
        for option in object["oneOf"].as_array().into_iter().flatten() {
            if option.get("const").is_some() {
                assert!(option["description"].is_string(), "{owner}: {option}");
            }
        }
        assert!(
            object.get("enum").is_none(),
            "{owner}: an enum without descriptions"
        );
    }
    assert!(checked > 40, "{checked}");
    for key in ["nodes", "ranks_per_node", "gpus_per_rank"] {
        assert_eq!(schema["properties"][key]["minimum"], 1, "{key}");
    }
    let policies = schema["$defs"]["PolicyName"]["oneOf"].as_array().unwrap();
    assert_eq!(
        policies.len(),
        11,
        "four families: auto, PyTorch, gpu_affinity, mpibind"
    );
}
