//! Launching a plan of several groups (`groups:`) away from a cluster: the example's scripts
//! (snapshots, shellcheck), how `exec`, `bind` and `verify` find their node's group and number
//! its ranks in the whole job, the per-group `explain` and `diff`, and the errors of each. The
//! real Slurm runs are tests/hetjob.rs; real torchrun agents are tests/torch.

mod common;

use std::path::Path;

use common::{numaplan, numaplan_env, repo};

const EXAMPLE: &str = "examples/rl-groups.yaml";

/// The example's plan, written into `dir` (its topology files do not travel: `exec` and `bind`
/// need none).
fn plan_file(dir: &Path) -> String {
    let plan = numaplan(&["compile", EXAMPLE, "-q"]).ok();
    let path = dir.join("plan.yaml");
    std::fs::write(&path, plan).unwrap();
    path.to_str().unwrap().to_string()
}

/// What a dry run on this machine prints (a dry run says what the real run would do, then
/// refuses as it would: this 2-CPU test runner is none of the example's machines).
fn dry_run(run: common::Run) -> String {
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("error[E0411]"), "{}", run.stderr);
    run.stdout
}

/// numaplan run in the repository with `vars` in its environment.
fn with_env(vars: &[(&str, &str)], args: &[&str]) -> common::Run {
    let vars: Vec<(&str, &Path)> = vars.iter().map(|(k, v)| (*k, Path::new(*v))).collect();
    numaplan_env(&common::repo(), &vars, args)
}

/// `exec --dry-run`'s `env` line of each rank, as a map per rank.
fn dry_run_env(out: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    out.lines()
        .filter_map(|l| l.trim_start().strip_prefix("env "))
        .map(|vars| {
            vars.split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn the_examples_launch_scripts() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["sbatch-exec", "torchrun", "mpirun"] {
        let script = numaplan(&["compile", EXAMPLE, "--emit", kind]).ok();
        let file = dir.path().join("launch");
        std::fs::write(&file, &script).unwrap();
        common::check_script(&file);
        insta::assert_snapshot!(format!("rl_groups_{kind}"), script);
    }
    // `--emit bash` starts one node's ranks: a job over nodes of three shapes is refused.
    let run = numaplan(&["compile", EXAMPLE, "--emit", "bash"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("rl_groups_bash_refused", run.stderr);
}

/// `exec` numbers its group's ranks in the whole job: the rollout node (node 2 of the job, one
/// after the two trainers) runs ranks 16-19 of 21; trainer node 1 runs ranks 8-15. The group
/// comes from `--group` or NUMAPLAN_GROUP, and the ranks are told theirs.
#[test]
fn exec_numbers_its_groups_ranks_in_the_whole_job() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(dir.path());
    let place = ["--dry-run", "--master-addr", "h1"];
    let run = dry_run(numaplan(
        &[
            &["exec", &plan, "--group", "rollout", "--node-rank", "0"][..],
            &place,
        ]
        .concat(),
    ));
    let ranks = dry_run_env(&run);
    let of = |var: &str| ranks.iter().map(|r| r[var].as_str()).collect::<Vec<_>>();
    assert_eq!(of("RANK"), ["16", "17", "18", "19"], "{run}");
    assert_eq!(of("NODE_RANK"), ["2"; 4], "{run}");
    assert_eq!(of("WORLD_SIZE"), ["21"; 4], "{run}");
    assert_eq!(of("LOCAL_WORLD_SIZE"), ["4"; 4], "{run}");
    assert_eq!(of("NUMAPLAN_GROUP"), ["rollout"; 4], "{run}");
    assert_eq!(of("MASTER_ADDR"), ["h1"; 4], "{run}");

    let args = [&["exec", &plan, "--node-rank", "1"][..], &place].concat();
    let run = dry_run(with_env(&[("NUMAPLAN_GROUP", "trainers")], &args));
    let ranks = dry_run_env(&run);
    let got: Vec<&str> = ranks.iter().map(|r| r["RANK"].as_str()).collect();
    assert_eq!(got, ["8", "9", "10", "11", "12", "13", "14", "15"], "{run}");
    assert!(ranks.iter().all(|r| r["NODE_RANK"] == "1"), "{run}");
}

/// Inside a heterogeneous Slurm job the component whose node list holds this host is its
/// group, and the job meets at the first component's first node; a job of another number of
/// components is refused (E0444), as is a name the plan lacks (E0442) and a node that no
/// group's shape matches (E0443), each listing the groups.
#[test]
fn exec_finds_its_group_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(dir.path());
    let slurm = [
        ("SLURM_HET_SIZE", "3"),
        ("SLURM_JOB_NODELIST_HET_GROUP_0", "h[7-8]"),
        ("SLURM_JOB_NODELIST_HET_GROUP_1", "g1"),
        ("SLURM_JOB_NODELIST_HET_GROUP_2", "c1"),
        ("SLURMD_NODENAME", "c1"),
        ("SLURM_NODEID", "0"),
        ("SLURM_NNODES", "1"),
        ("SLURM_JOB_NODELIST", "c1"),
    ];
    let run = dry_run(with_env(&slurm, &["exec", &plan, "--dry-run"]));
    let ranks = dry_run_env(&run);
    assert_eq!(ranks.len(), 1, "{run}");
    assert_eq!(ranks[0]["NUMAPLAN_GROUP"], "head", "{run}");
    assert_eq!(ranks[0]["RANK"], "20", "{run}");
    assert_eq!(ranks[0]["MASTER_ADDR"], "h7", "{run}");
    assert!(run.contains("argv python replay_buffer.py"), "{run}");

    let two = [&slurm[..], &[("SLURM_HET_SIZE", "2")]].concat();
    let run = with_env(&two, &["exec", &plan, "--dry-run"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("rl_groups_components", run.stderr);

    let run = numaplan(&["exec", &plan, "--dry-run", "--group", "critic"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(
        "rl_groups_unknown_group",
        run.stderr.replace(&plan, "plan.yaml")
    );

    // This machine (a test runner) is none of the example's shapes, which the error says
    // (redacted here: it is the runner's).
    let run = numaplan(&["exec", &plan, "--dry-run"]);
    assert_eq!(run.code, 1);
    let (head, rest) = run.stderr.split_once("this node's shape (").unwrap();
    let shape = rest.split_once(')').unwrap().1;
    insta::assert_snapshot!(
        "rl_groups_no_shape",
        format!("{head}this node's shape (SHAPE){shape}")
    );
}

/// `bind` under torchrun on the rollout node: torchrun numbers it after the trainers' 16 ranks
/// (RANK 17 is its local rank 1, though GROUP_RANK x LOCAL_WORLD_SIZE = 2 x 4 = 8 would say 9);
/// a RANK that is not this node's is refused.
#[test]
fn bind_under_torchrun_counts_the_groups_before_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(dir.path());
    let torchrun = |local: &'static str, rank: &'static str| {
        vec![
            ("LOCAL_RANK", local),
            ("RANK", rank),
            ("GROUP_RANK", "2"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("WORLD_SIZE", "21"),
        ]
    };
    let args = [
        "bind",
        &plan,
        "--group",
        "rollout",
        "--dry-run",
        "--force",
        "--format",
        "json",
    ];
    // A dry run reports, then refuses as the real run would: this machine is not a GH200.
    let run = with_env(&torchrun("1", "17"), &args);
    assert!(run.stderr.contains("error[E0411]"), "{}", run.stderr);
    let out = run.stdout;
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["local_rank"], 1, "{out}");
    assert_eq!(report["cpus"], "72-143", "{out}");
    let run = with_env(&torchrun("1", "9"), &args);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "error[E0429]: torchrun's variables disagree: LOCAL_RANK=1, but RANK=9 - (the \
             group's first rank 16 + (GROUP_RANK=2 - its first node 2) x LOCAL_WORLD_SIZE=4) \
             gives no local rank of this node"
        ),
        "{}",
        run.stderr
    );
    // A world of another size than the groups' is refused too.
    let mut wrong = torchrun("1", "17");
    wrong[4] = ("WORLD_SIZE", "16");
    let run = with_env(&wrong, &args);
    assert!(
        run.stderr
            .contains("and the plan is for 21 ranks in its groups"),
        "{}",
        run.stderr
    );
}

#[test]
fn explain_shows_every_group_or_the_one_asked() {
    let all = numaplan(&["explain", EXAMPLE]).ok();
    let headings: Vec<&str> = all.lines().filter(|l| l.starts_with("group `")).collect();
    assert_eq!(
        headings,
        [
            "group `trainers`: ranks 0-15 of 21 (2 node(s) x 8), on nvidia-dgx-h100",
            "group `rollout`: ranks 16-19 of 21 (1 node(s) x 4), on nvidia-gh200-4way",
            "group `head`: rank 20 of 21 (1 node(s) x 1), on amd-epyc-genoa-9654-2s",
        ]
    );
    let head = numaplan(&["explain", EXAMPLE, "--group", "head"]).ok();
    insta::assert_snapshot!("rl_groups_explain_head", head);
    let json = numaplan(&["explain", EXAMPLE, "--format", "json"]).ok();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let firsts: Vec<u64> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["first_rank"].as_u64().unwrap())
        .collect();
    assert_eq!(firsts, [0, 16, 20]);
    let svg = numaplan(&["explain", EXAMPLE, "--format", "svg"]);
    assert_eq!(svg.code, 2, "{}", svg.stderr);
    assert!(
        svg.stderr
            .contains("pass `--group NAME`: one of trainers, rollout, head"),
        "{}",
        svg.stderr
    );
    let svg = numaplan(&["explain", EXAMPLE, "--format", "svg", "--group", "rollout"]).ok();
    assert!(
        svg.starts_with("<?xml") && svg.contains("nvidia-gh200-4way"),
        "{svg}"
    );
}

/// `diff` pairs groups by name: a changed group's diff under its name, a group only one side
/// has as added or removed.
#[test]
fn diff_names_the_group_of_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    let changed = text
        .replace(
            "    env: {ROLE: rollout}\n",
            "    env: {ROLE: rollout}\n    cpu: {policy: exclusive}\n",
        )
        .replace("  - name: head\n", "  - name: replay\n");
    let new = dir.path().join("new.yaml");
    std::fs::write(&new, changed).unwrap();
    std::fs::create_dir_all(dir.path().join("topologies")).unwrap();
    for t in [
        "nvidia-dgx-h100.yaml",
        "nvidia-gh200-4way.yaml",
        "amd-epyc-genoa-9654-2s.yaml",
    ] {
        std::fs::copy(
            common::repo().join("examples/topologies").join(t),
            dir.path().join("topologies").join(t),
        )
        .unwrap();
    }
    let run = numaplan(&["diff", EXAMPLE, new.to_str().unwrap(), "--exit-code"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let out = run.stdout.replace(dir.path().to_str().unwrap(), "DIR");
    assert!(out.starts_with("group `trainers`: no change\n"), "{out}");
    insta::assert_snapshot!("rl_groups_diff", out);
    let same = numaplan(&["diff", EXAMPLE, EXAMPLE, "--exit-code"]);
    assert_eq!(same.code, 0, "{}", same.stdout);
}

/// A plan without groups diffed against a plan of several names its one group as such (it
/// once printed ``group ``: removed``), in text and as `"group": null` in JSON.
#[test]
fn diff_of_a_plan_without_groups_and_one_with_names_both() {
    let run = numaplan(&[
        "diff",
        "examples/dgx-a100-llama.yaml",
        EXAMPLE,
        "--exit-code",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("the plan without groups: removed\ngroup `trainers`: added\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("``"), "{}", run.stdout);
    let json = numaplan(&[
        "diff",
        "examples/dgx-a100-llama.yaml",
        EXAMPLE,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["groups"][0]["group"], serde_json::Value::Null);
    assert_eq!(v["groups"][0]["status"], "removed");
    assert_eq!(v["groups"][1]["group"], "trainers");
}

/// A plan of several groups read back checks its numbering: a group's first rank that is not
/// the ranks before it, or a world size that is not their sum, is an error at its key.
#[test]
fn a_tampered_plan_of_groups_is_refused_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let plan = numaplan(&["compile", EXAMPLE, "-q"]).ok();
    for (from, to, key) in [
        (
            "first_rank: 16\n",
            "first_rank: 15\n",
            "groups[1].first_rank",
        ),
        ("world_size: 21\n", "world_size: 22\n", "world_size"),
        ("- group: head\n", "- group: rollout\n", "groups[2].group"),
    ] {
        let path = dir.path().join("plan.yaml");
        std::fs::write(&path, plan.replacen(from, to, 1)).unwrap();
        let run = numaplan(&[
            "exec",
            path.to_str().unwrap(),
            "--dry-run",
            "--group",
            "head",
        ]);
        assert_eq!(run.code, 1, "{key}");
        assert!(run.stderr.contains("error[E0406]"), "{key}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("in `{key}`")),
            "{key}: {}",
            run.stderr
        );
    }
}

/// `compile --check` compares every group: a plan whose second group was edited is stale.
#[test]
fn compile_check_covers_every_group() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    let plan = plan.to_str().unwrap();
    numaplan(&["compile", EXAMPLE, "-q", "-o", plan]).ok();
    numaplan(&["compile", EXAMPLE, "-q", "-o", plan, "--check"]).ok();
    let text = std::fs::read_to_string(plan).unwrap();
    let edited = text.replacen("cpus: 72-143\n", "cpus: 72-142\n", 1);
    assert_ne!(edited, text);
    std::fs::write(plan, edited).unwrap();
    let run = numaplan(&["compile", EXAMPLE, "-q", "-o", plan, "--check"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("error[E0404]"), "{}", run.stderr);
}

/// `exec` of the job spec itself plans every group and runs this node's: the same ranks as
/// from the compiled plan.
#[test]
fn exec_of_the_spec_runs_its_nodes_group() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_file(dir.path());
    let args = [
        "--group",
        "head",
        "--dry-run",
        "--node-rank",
        "0",
        "--master-addr",
        "h1",
    ];
    let from_spec = dry_run(numaplan(&[&["exec", EXAMPLE][..], &args].concat()));
    let from_plan = dry_run(numaplan(&[&["exec", &plan][..], &args].concat()));
    // Each rank finds its plan again where it came from (`NUMAPLAN_PLAN`): the one difference.
    let example = repo().join(EXAMPLE);
    assert_eq!(
        from_spec.replace(example.to_str().unwrap(), "PLAN"),
        from_plan.replace(&plan, "PLAN")
    );
    assert!(from_spec.contains(" RANK=20 "), "{from_spec}");
}

/// `--group` of a plan of one group names nothing it has: an error, never ignored; an inherited
/// NUMAPLAN_GROUP (an outer job's) does not stop a plan of one group.
#[test]
fn a_group_of_a_plan_without_groups() {
    let run = numaplan(&[
        "exec",
        "examples/cpu-only.yaml",
        "--dry-run",
        "--group",
        "head",
    ]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("error[E0442]"), "{}", run.stderr);
    assert!(
        run.stderr.contains("the plan is of one group"),
        "{}",
        run.stderr
    );
    let run = with_env(
        &[("NUMAPLAN_GROUP", "head")],
        &["exec", "examples/cpu-only.yaml", "--dry-run"],
    );
    assert!(!run.stderr.contains("E0442"), "{}", run.stderr);
}

/// The `--emit mpirun` script of a plan of two groups, run for real by MPICH's Hydra on this
/// machine seen as two hosts (`localhost` and `127.0.0.1`, one per group, in NUMAPLAN_HOSTFILE;
/// `-launcher fork` starts both here): one MPI_COMM_WORLD of 3 ranks, numbered group by group,
/// each rank bound as its group plans it.
#[test]
fn mpirun_runs_the_groups_as_one_mpi_world() {
    if std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        == "0"
    {
        eprintln!("skipped: needs a machine with 2 CPUs or more");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("mpi_world");
    common::mpi_world(&program);
    let job = format!(
        "command: [bash, -c, 'echo \"TASK $RANK $WORLD_SIZE $LOCAL_RANK $NUMAPLAN_GROUP \
         $(grep Cpus_allowed_list /proc/self/status | cut -f2)\"; exec \"$0\"', {}]\n\
         gpus: none\nmemory: {{policy: none}}\nmpirun: {{mpich: [-launcher, fork]}}\ngroups:\n\
         \x20 - {{name: pairs, ranks_per_node: 2, cpu: {{policy: exclusive}}}}\n\
         \x20 - {{name: whole, ranks_per_node: 1, cpu: {{policy: node}}}}\n",
        program.display()
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    std::fs::write(dir.path().join("hosts"), "localhost\n127.0.0.1\n").unwrap();
    let compile = ["compile", "job.yaml", "-q"];
    common::numaplan_in(
        dir.path(),
        &[&compile[..], &["--emit", "mpirun", "-o", "run.sh"]].concat(),
    )
    .ok();
    let plan: serde_json::Value = serde_json::from_str(
        &common::numaplan_in(dir.path(), &[&compile[..], &["--format", "json"]].concat()).ok(),
    )
    .unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_numaplan"));
    let out = common::succeed(
        std::process::Command::new(dir.path().join("run.sh"))
            .current_dir(dir.path())
            .env("NUMAPLAN", bin)
            .env("MPIRUN", "mpirun.mpich")
            .env("NUMAPLAN_HOSTFILE", dir.path().join("hosts")),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut tasks: Vec<&str> = text.lines().filter(|l| l.starts_with("TASK ")).collect();
    tasks.sort();
    let cpus = |g: usize, r: usize| {
        plan["groups"][g]["ranks"][r]["cpus"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        tasks,
        [
            format!("TASK 0 3 0 pairs {}", cpus(0, 0)),
            format!("TASK 1 3 1 pairs {}", cpus(0, 1)),
            format!("TASK 2 3 0 whole {}", cpus(1, 0)),
        ],
        "{text}"
    );
    let mut mpi: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("MPI "))
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect();
    mpi.sort();
    assert_eq!(mpi, ["0 3 3", "1 3 3", "2 3 3"], "{text}");
}

/// A group's `gpus: visible` takes the GPUs of `compile`'s environment, as a job of one group
/// does (W0205 says so), never all of them in silence.
#[test]
fn a_groups_visible_gpus_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let a100 = common::repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "topology: {}\ngroups:\n  - {{name: all}}\n  - {{name: seen, gpus: visible}}\n",
            a100.display()
        ),
    )
    .unwrap();
    let run = numaplan_env(
        dir.path(),
        &[("CUDA_VISIBLE_DEVICES", Path::new("2,5"))],
        &["compile", "job.yaml", "--format", "json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("W0205"), "{}", run.stderr);
    let plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let gpus = |g: usize| -> Vec<u64> {
        plan["groups"][g]["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                r["gpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
            })
            .collect()
    };
    assert_eq!(gpus(0), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(gpus(1), [2, 5]);
}

/// A group's entry that contradicts its own machine (a home node that does not hold the rank's
/// CPUs) is refused at that group's key, as a plan of one group is at its own.
#[test]
fn a_group_that_contradicts_its_machine_is_refused_at_its_key() {
    // Beside the examples' machines, which the plan names relative to itself.
    let plan = common::repo()
        .join("target")
        .join(format!("groups-machine-{}.yaml", std::process::id()));
    let plan = plan.to_str().unwrap().to_string();
    numaplan(&["compile", EXAMPLE, "-q", "-o", &plan]).ok();
    let text = std::fs::read_to_string(&plan).unwrap();
    let rollout = text.find("- group: rollout").unwrap();
    let home = rollout + text[rollout..].find("numa_node: 0").unwrap();
    let edited = format!("{}numa_node: 1{}", &text[..home], &text[home + 12..]);
    std::fs::write(&plan, edited).unwrap();
    let run = numaplan(&["explain", &plan]);
    std::fs::remove_file(&plan).unwrap();
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("error[E0406]"), "{}", run.stderr);
    assert!(
        run.stderr.contains("in `groups[1].ranks[0].numa_node`"),
        "{}",
        run.stderr
    );
}

/// A group's node place is counted one way in every message: E0410 gives the group's own node
/// count (what `--nodes` takes) beside the job's, and E0424 the same count; the job's node
/// count given as `--nodes` is the mistake E0424 names (issue 50, 6).
#[test]
fn a_groups_node_count_is_said_alike_in_every_message() {
    let plan = numaplan(&["compile", EXAMPLE, "-q"]).ok();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rl.plan.yaml");
    std::fs::write(&file, plan).unwrap();
    let file = file.to_str().unwrap();
    let exec = |extra: &[&str]| {
        let args = [
            &["exec", file, "--group", "rollout", "--dry-run"][..],
            extra,
        ]
        .concat();
        numaplan(&args)
    };
    let unplaced = exec(&[]);
    assert_eq!(unplaced.code, 1, "{}", unplaced.stderr);
    assert!(
        unplaced.stderr.starts_with(
            "error[E0410]: group `rollout` is for 1 node(s) of a job of 4, and needs this \
             node's place in the group"
        ),
        "{}",
        unplaced.stderr
    );
    let whole_job = exec(&["--node-rank", "0", "--nodes", "4", "--master-addr", "h"]);
    assert!(
        whole_job
            .stderr
            .starts_with("error[E0424]: group `rollout` is for 1 node(s), but this job has 4"),
        "{}",
        whole_job.stderr
    );
    // Placed as E0410 says, the node is past the place check (this runner is no GH200: the
    // node check, E0411, is what stops it then).
    let placed = exec(&["--node-rank", "0", "--nodes", "1", "--master-addr", "h"]);
    assert!(
        placed.stderr.starts_with("error[E0411]"),
        "{}",
        placed.stderr
    );
}
