//! `groups:` in the job spec (a heterogeneous job): each group is the top level with its own
//! keys over it, key by key; problems point at the group's key, once.

mod common;

use common::{numaplan, repo};
use numaplan::spec::load::load_str;
use numaplan::spec::{GpuChoice, Policy, Smt, TorchMode};
use serde_json::Value;

const JOB: &str = "\
topology: top.yaml
cpu: {policy: exclusive, smt: one}
env: {NCCL_DEBUG: INFO, A: top}
groups:
  - name: trainers
    nodes: 2
    topology: dgx-h100.yaml
  - name: rollout
    gpus: 4
    cpu: {policy: node}
    env: {A: rollout}
";

#[test]
fn a_group_takes_the_top_level_key_by_key() {
    let spec = load_str("job.yaml", JOB).unwrap().spec;
    let names: Vec<&str> = spec.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["trainers", "rollout"]);
    let (trainers, rollout) = (&spec.groups[0].spec, &spec.groups[1].spec);
    assert_eq!(trainers.nodes, 2);
    assert_eq!(rollout.nodes, 1);
    assert_eq!(
        trainers.topology.as_ref().map(|t| t.to_string()),
        Some("dgx-h100.yaml".into())
    );
    assert_eq!(
        rollout.topology.as_ref().map(|t| t.to_string()),
        Some("top.yaml".into())
    );
    assert_eq!(trainers.cpu.policy, Policy::Torch(TorchMode::Exclusive));
    // `cpu: {policy: node}` keeps the top level's `smt: one`.
    assert_eq!(rollout.cpu.policy, Policy::Torch(TorchMode::Node));
    assert_eq!(rollout.cpu.smt, Smt::One);
    assert_eq!(rollout.gpus, GpuChoice::Count(4));
    assert_eq!(rollout.env["A"], "rollout");
    assert_eq!(rollout.env["NCCL_DEBUG"], "INFO");
    assert_eq!(trainers.env["A"], "top");
}

/// Every problem once, at its key: the group's where the group wrote it (with its line), the
/// top level's where it comes from there.
#[test]
fn problems_point_at_the_group_that_wrote_them() {
    let problems = |text: &str| -> Vec<(String, String)> {
        match load_str("job.yaml", text) {
            Ok(_) => panic!("{text} must fail"),
            Err(numaplan::spec::SpecError::Invalid { problems, .. }) => {
                problems.into_iter().map(|p| (p.path, p.message)).collect()
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    let found = problems(
        "nodes: 2\ngroups:\n  - {name: a, cpu: {min_cores: 0, max_cores: 0}}\n  - {name: a}\n",
    );
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["nodes", "groups[0].cpu.max_cores", "groups[1].name"],
        "{found:?}"
    );
    assert!(found[0].1.contains("`nodes:` and `groups:`"), "{found:?}");
    assert!(found[2].1.contains("two groups are named `a`"), "{found:?}");
    // A top-level problem is said once, not once per group.
    let found = problems("cpu: {max_cores: 0}\ngroups: [{name: a}, {name: b}]\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "cpu.max_cores");
    // A problem of the mix: the group's mpibind under the top level's openmp.
    let found = problems("openmp: {places: cores}\ngroups: [{name: m, cpu: {policy: mpibind}}]\n");
    assert_eq!(found[0].0, "openmp");
    assert!(found[0].1.starts_with("group `m`: "), "{found:?}");
    let found = problems("groups: []\n");
    assert_eq!(found[0].0, "groups");
    let found = problems("groups: [{name: \"a b\"}]\n");
    assert_eq!(found[0].0, "groups[0].name");
}

const RL: &str = "tests/cases/compile/groups_rl.yaml";
const A100: &str = "examples/topologies/nvidia-dgx-a100.yaml";

fn grouped_plan() -> Value {
    let out = numaplan(&["compile", RL, "--topology", A100, "--format", "json", "-q"]).ok();
    serde_json::from_str(&out).unwrap()
}

/// One world over the groups: ranks numbered group by group (0-15, 16-19, 20), WORLD_SIZE the
/// sum in every rank, and no one-node RANK or MASTER_ADDR in a job of four nodes.
#[test]
fn the_groups_form_one_world() {
    let plan = grouped_plan();
    assert_eq!(plan["world_size"], 21);
    let groups = plan["groups"].as_array().unwrap();
    let firsts: Vec<u64> = groups
        .iter()
        .map(|g| g["first_rank"].as_u64().unwrap())
        .collect();
    assert_eq!(firsts, [0, 16, 20]);
    for g in groups {
        for (i, r) in g["ranks"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                r["rank"].as_u64().unwrap(),
                g["first_rank"].as_u64().unwrap() + i as u64
            );
            assert_eq!(r["env"]["WORLD_SIZE"], "21");
            assert_eq!(
                r["env"]["LOCAL_WORLD_SIZE"],
                g["ranks_per_node"].to_string()
            );
            for var in ["RANK", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR"] {
                assert!(r["env"].get(var).is_none(), "{var} in {r}");
            }
            assert_eq!(r["env"]["NCCL_DEBUG"], "INFO");
        }
    }
}

/// Each group is placed as a job of its own on its machine would be.
#[test]
fn a_group_is_placed_as_its_own_job() {
    let plan = grouped_plan();
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("rollout.yaml");
    std::fs::write(&alone, "gpus: 4\ncpu: {policy: exclusive}\n").unwrap();
    let topology = repo().join(A100);
    let out = numaplan(&[
        "compile",
        alone.to_str().unwrap(),
        "--topology",
        topology.to_str().unwrap(),
        "--format",
        "json",
        "-q",
    ])
    .ok();
    let own: Value = serde_json::from_str(&out).unwrap();
    let placed = |ranks: &Value| -> Vec<(Value, Value, Value, Value)> {
        ranks
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["gpus"].clone(),
                    r["cpus"].clone(),
                    r["memory"].clone(),
                    r["nics"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(placed(&plan["groups"][1]["ranks"]), placed(&own["ranks"]));
}

/// `--set` reaches a group's key by the group's name or its index, as a group's key in the file
/// would; a group that is not there is an error about the `--set`, not about the spec.
#[test]
fn set_reaches_a_group_by_name_or_index() {
    let with = |set: &str| -> Value {
        let out = numaplan(&[
            "compile",
            RL,
            "--topology",
            A100,
            "--format",
            "json",
            "-q",
            "--set",
            set,
        ]);
        serde_json::from_str(&out.ok()).unwrap()
    };
    let rollout_ranks = |plan: &Value| plan["groups"][1]["ranks"].as_array().unwrap().len();
    assert_eq!(rollout_ranks(&grouped_plan()), 4);
    let by_index = with("groups[1].ranks_per_node=2");
    let by_name = with("groups.rollout.ranks_per_node=2");
    assert_eq!(rollout_ranks(&by_index), 2);
    assert_eq!(by_index["groups"], by_name["groups"]);
    assert_eq!(by_index["world_size"], 19);
    // A group's key that only the command line wrote: its error points at that `--set`.
    let run = numaplan(&[
        "compile",
        RL,
        "--topology",
        A100,
        "--set",
        "groups.head.cpu.min_cores=999",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("--> command line:1:")
            && run.stderr.contains("`groups[2].cpu.min_cores`")
            && run.stderr.contains("in group `head`"),
        "{}",
        run.stderr
    );
    let refused = |set: &str| {
        let run = numaplan(&["compile", RL, "--topology", A100, "--set", set]);
        assert_eq!(run.code, 1, "{set}");
        run.stderr.lines().next().unwrap_or_default().to_string()
    };
    insta::assert_snapshot!(refused("groups.nobody.gpus=1"), @"error[E0102]: invalid job spec in `groups.nobody.gpus`: `groups` has no entry named `nobody` (its names: `trainers`, `rollout`, `head`); an entry is also `groups[N]`");
    insta::assert_snapshot!(refused("groups[3].gpus=1"), @"error[E0102]: invalid job spec in `groups[3].gpus`: `groups` has 3 entries, so it has no entry [3]");
    insta::assert_snapshot!(refused("groups[one].gpus=1"), @"error[E0102]: invalid job spec in `groups[one].gpus`: `groups[one]` is not a key: an entry of a list is `groups[N]`, N from 0");
}

/// A group's table shows one node's ranks: their column is headed `local rank`, under a title
/// that says which global ranks the group has; a one-node plan's stays `rank`.
#[test]
fn a_groups_table_heads_its_ranks_local() {
    let run = numaplan(&["explain", "examples/rl-groups.yaml", "--group", "head"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut lines = run.stdout.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("group `head`: rank 20 of 21"),
        "{}",
        run.stdout
    );
    let header = run
        .stdout
        .lines()
        .find(|l| l.contains("home  CPUs"))
        .unwrap();
    assert!(header.starts_with("local rank  GPU"), "{}", run.stdout);
    let one_node = numaplan(&["explain", "examples/cpu-only.yaml"]).ok();
    let header = one_node.lines().find(|l| l.contains("home  CPUs")).unwrap();
    assert!(header.starts_with("rank  GPU"), "{one_node}");
}
