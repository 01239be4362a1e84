//! `numaplan compile` on files: every example job and every case in tests/cases/compile gives
//! one snapshot (the YAML plan, or the full diagnostic for `err_*` cases). A case's first line
//! names its topology: `# topology: <name>`, looked up in tests/cases/topologies, then
//! examples/topologies, then (hwloc XML) tests/data/mpibind.

mod common;

use std::path::Path;

use common::{case_topology, numaplan, numaplan_in, rel, repo};
use numaplan::topology::load_file;
use std::process::Command;

#[test]
fn compile_cases() {
    insta::glob!("cases/compile", "*.yaml", |path| {
        let case = rel(path);
        let topology = case_topology(path);
        let is_error = path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("err_");
        let run = numaplan(&["compile", &case, "--topology", &topology]);
        let input = std::fs::read_to_string(path).unwrap();
        if is_error {
            assert_eq!(run.code, 1, "{case} must fail:\n{}", run.stdout);
            assert!(run.stdout.is_empty(), "{case}: nothing on stdout");
            insta::with_settings!({description => input}, { insta::assert_snapshot!(run.stderr) });
        } else {
            assert_eq!(run.code, 0, "{case}:\n{}", run.stderr);
            check_plan(&case, &topology, &run.stdout);
            insta::with_settings!({description => input}, { insta::assert_snapshot!(run.stdout) });
        }
    });
}

#[test]
fn example_jobs() {
    insta::glob!("../examples", "*.yaml", |path| {
        let job = rel(path);
        let run = numaplan(&["compile", &job]);
        assert_eq!(run.code, 0, "{job}:\n{}", run.stderr);
        insta::assert_snapshot!(run.stdout);
    });
}

/// The JSON plan of the same compile satisfies the plan invariants.
fn check_plan(case: &str, topology: &str, yaml: &str) {
    let json = numaplan(&["compile", case, "--topology", topology, "--format", "json"]).ok();
    let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
    let from_yaml: serde_json::Value = serde_yaml::from_str(yaml).unwrap();
    assert_eq!(plan, from_yaml, "{case}: YAML and JSON carry the same plan");
    // A plan of several groups: each group's ranks on its own machine.
    let groups: Vec<&serde_json::Value> = match plan["groups"].as_array() {
        Some(groups) => groups.iter().collect(),
        None => vec![&plan],
    };
    for g in groups {
        let file = g["topology"]["file"].as_str().unwrap_or(topology);
        let allowed = load_file(&repo().join(file)).unwrap().allowed().clone();
        for r in g["ranks"].as_array().unwrap() {
            let cpus: numaplan::cpuset::CpuSet = r["cpus"].as_str().unwrap().parse().unwrap();
            assert!(!cpus.is_empty(), "{case}");
            assert!(cpus.is_subset(&allowed), "{case}: CPUs outside the machine");
        }
    }
}

#[test]
fn reordered_fixture_gives_the_same_plan_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let original = repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let mut raw: numaplan::topology::fixture::FixtureFile =
        serde_yaml::from_str(&std::fs::read_to_string(&original).unwrap()).unwrap();
    raw.nodes.reverse();
    raw.gpus.reverse();
    raw.nics.reverse();
    let shuffled = dir.path().join("shuffled.yaml");
    std::fs::write(&shuffled, serde_yaml::to_string(&raw).unwrap()).unwrap();
    let job = repo().join("examples/dgx-a100-llama.yaml");
    let plan = |topology: &Path| {
        let out = numaplan(&[
            "compile",
            job.to_str().unwrap(),
            "--topology",
            topology.to_str().unwrap(),
        ])
        .ok();
        // Drop what names the topology path: the header's regenerate command and
        // `topology.file`.
        out.lines()
            .skip(3)
            .filter(|l| !l.starts_with("  file: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let a = plan(&original);
    assert_eq!(a, plan(&shuffled));
    assert_eq!(a, plan(&original), "identical inputs give identical bytes");
}

/// `gpus: visible`: the GPUs CUDA_VISIBLE_DEVICES names (indices or UUID prefixes, in its
/// order), set as it was in every rank's environment; every GPU when it is unset; and E0212 for
/// an entry that names no GPU.
#[test]
fn gpus_visible_follows_cuda_visible_devices() {
    let dir = tempfile::tempdir().unwrap();
    // The DGX A100 fixture with a UUID per GPU.
    let text =
        std::fs::read_to_string(repo().join("examples/topologies/nvidia-dgx-a100.yaml")).unwrap();
    let mut fixture: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    for (i, g) in fixture["gpus"]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        g.as_mapping_mut().unwrap().insert(
            "uuid".into(),
            format!("GPU-{i}a1b2c3d-0000-1111-2222-33334444555{i}").into(),
        );
    }
    std::fs::write(
        dir.path().join("dgx.yaml"),
        serde_yaml::to_string(&fixture).unwrap(),
    )
    .unwrap();
    let compile = |ranks: u32, visible: Option<&str>| {
        std::fs::write(
            dir.path().join("job.yaml"),
            format!(
                "topology: dgx.yaml\ncommand: [true]\ngpus: visible\nranks_per_node: {ranks}\n"
            ),
        )
        .unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_numaplan"));
        cmd.args(["compile", "job.yaml", "--format", "json"])
            .current_dir(dir.path())
            .env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("ROCR_VISIBLE_DEVICES");
        if let Some(v) = visible {
            cmd.env("CUDA_VISIBLE_DEVICES", v);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let gpus_of = |plan: &str| -> Vec<u64> {
        let plan: serde_json::Value = serde_json::from_str(plan).unwrap();
        plan["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["gpus"][0].as_u64().unwrap())
            .collect()
    };
    let visible_env = |plan: &str| -> Vec<String> {
        let plan: serde_json::Value = serde_json::from_str(plan).unwrap();
        plan["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["env"]["CUDA_VISIBLE_DEVICES"]
                    .as_str()
                    .unwrap_or("unset")
                    .to_string()
            })
            .collect()
    };
    let (code, plan, err) = compile(2, Some("5,2"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(gpus_of(&plan), [5, 2]);
    assert!(
        plan.contains("GPUs 5, 2 from CUDA_VISIBLE_DEVICES=5,2"),
        "{plan}"
    );
    // Every rank sees the GPUs the plan was made for, wherever it runs (`gpu.visible: all`).
    assert_eq!(visible_env(&plan), ["5,2", "5,2"]);
    let (code, plan, err) = compile(2, Some("GPU-7a1,GPU-3a"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(gpus_of(&plan), [7, 3]);
    assert_eq!(visible_env(&plan), ["GPU-7a1,GPU-3a", "GPU-7a1,GPU-3a"]);
    let (_, plan, _) = compile(8, None);
    assert_eq!(gpus_of(&plan), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert!(visible_env(&plan).iter().all(|v| v == "unset"), "{plan}");

    let (code, _, err) = compile(1, Some("9"));
    assert_eq!(code, Some(1));
    insta::assert_snapshot!("error_visible_devices", err);
    for (value, detail) in [
        ("", "no GPU is visible"),
        ("GPU-x", "no GPU's UUID starts with `GPU-x`"),
        ("GPU-", "`GPU-` is the start of several GPUs' UUIDs"),
        ("1,1", "GPU 1 is named twice"),
    ] {
        let (code, _, err) = compile(1, Some(value));
        assert_eq!(code, Some(1));
        assert!(
            err.contains(&format!("CUDA_VISIBLE_DEVICES={value}: {detail}")),
            "{err}"
        );
    }
}

/// A cpuset whose mems leave out the ranks' home nodes (fixture key `allowed_memory_nodes`, as
/// `topo` captures it): their memory policy goes to the nearest allowed node, and the plan says
/// so once per node.
#[test]
fn memory_outside_the_allowed_nodes_moves_to_the_nearest_allowed_node() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("examples/topologies/olcf-frontier.yaml"))
        .unwrap()
        .replacen("\nnodes:", "\nallowed_memory_nodes: 0-1\nnodes:", 1);
    std::fs::write(dir.path().join("node.yaml"), &text).unwrap();
    let topo = common::numaplan_in(dir.path(), &["topo", "--topology", "node.yaml"]).ok();
    assert!(
        topo.contains("allowed memory: nodes 0-1 (2 of 4 nodes)"),
        "{topo}"
    );
    std::fs::write(
        dir.path().join("job.yaml"),
        "topology: node.yaml\ncommand: [true]\nmemory: {policy: bind}\n",
    )
    .unwrap();
    let plan = common::numaplan_in(dir.path(), &["compile", "job.yaml", "--format", "json"]).ok();
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let distances = |from: u64| -> Vec<u64> {
        let t: serde_json::Value = serde_json::from_str(
            &common::numaplan_in(
                dir.path(),
                &["topo", "--topology", "node.yaml", "--format", "json"],
            )
            .ok(),
        )
        .unwrap();
        t["distances"][from.to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect()
    };
    let mut moved = 0;
    for r in plan["ranks"].as_array().unwrap() {
        let home = r["numa_node"].as_u64().unwrap();
        let memory: u64 = r["memory"]["nodes"].as_str().unwrap().parse().unwrap();
        if home <= 1 {
            assert_eq!(memory, home, "{r}");
        } else {
            // The nearest of nodes 0 and 1, the lower id on a tie.
            let d = distances(home);
            let nearest = if d[1] < d[0] { 1 } else { 0 };
            assert_eq!(memory, nearest, "{r}");
            moved += 1;
        }
    }
    assert!(moved > 0);
    let warnings = plan["warnings"].to_string();
    for node in [2, 3] {
        assert!(
            warnings.contains(&format!(
                "memory of node {node} is not allowed (allowed memory nodes 0-1); ranks placed there take memory from node"
            )),
            "{warnings}"
        );
    }
}

/// `--set` gives exactly the plan of the YAML it stands for, and says so in the plan's
/// regenerate command (snapshot); `compile -` reads the spec from standard input.
#[test]
fn set_and_stdin_compile_like_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(repo().join("examples/dgx-a100-llama.yaml")).unwrap();
    let topo = repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let topo = topo.to_str().unwrap();
    std::fs::write(dir.path().join("job.yaml"), &example).unwrap();
    let edited = example
        .replace("  policy: auto", "  policy: exclusive")
        .replace("ranks_per_node: 8", "ranks_per_node: 4")
        .replace("NCCL_DEBUG: INFO", "NCCL_DEBUG: WARN");
    std::fs::write(dir.path().join("edited.yaml"), edited).unwrap();
    let compile = |args: &[&str]| {
        let args = [
            &["compile"][..],
            args,
            &["--topology", topo, "--format", "json"],
        ]
        .concat();
        let json = common::numaplan_in(dir.path(), &args).ok();
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v.as_object_mut().unwrap().remove("name");
        v
    };
    let sets = [
        "--set",
        "cpu.policy=exclusive",
        "--set",
        "ranks_per_node=4",
        "--set",
        "env.NCCL_DEBUG=WARN",
    ];
    assert_eq!(
        compile(&[&["job.yaml"][..], &sets].concat()),
        compile(&["edited.yaml"])
    );
    let yaml = common::numaplan_in(
        dir.path(),
        &[&["compile", "job.yaml", "--topology", topo][..], &sets].concat(),
    )
    .ok();
    // The topology's path, absolute or relative to the temporary directory, depends on where
    // those are.
    let yaml: String = yaml
        .replace(topo, "TOPOLOGY")
        .lines()
        .map(|l| match l.starts_with("  file: ") {
            true => "  file: [path to TOPOLOGY]\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect();
    insta::assert_snapshot!("set_overrides", yaml);
    // Standard input.
    let stdin = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["compile", "-", "--topology", topo, "--format", "json"])
        .current_dir(dir.path())
        .stdin(std::fs::File::open(dir.path().join("edited.yaml")).unwrap())
        .output()
        .unwrap();
    assert!(
        stdin.status.success(),
        "{}",
        String::from_utf8_lossy(&stdin.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&stdin.stdout).unwrap();
    v.as_object_mut().unwrap().remove("name");
    assert_eq!(v, compile(&["edited.yaml"]));
}

/// `exec --nproc-per-node N -- CMD` without a spec: the default spec with N ranks and CMD,
/// exactly the plan of the YAML that says so.
#[test]
fn exec_without_a_spec_is_the_default_spec() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\ncommand: [sh, -c, 'echo hello $LOCAL_RANK']\n",
    )
    .unwrap();
    let from_yaml = common::numaplan_in(dir.path(), &["exec", "job.yaml", "--dry-run"]).ok();
    let from_flags = common::numaplan_in(
        dir.path(),
        &[
            "exec",
            "--nproc-per-node",
            "1",
            "--set",
            "gpus=none",
            "--dry-run",
            "--",
            "sh",
            "-c",
            "echo hello $LOCAL_RANK",
        ],
    )
    .ok();
    // The plans differ only in where their command comes from: their ids (in each rank's
    // mark) differ with it, and nothing else does; a plan from a file is where each rank
    // finds it again (`NUMAPLAN_PLAN`), which a plan of the command line has not.
    assert_ne!(from_flags, from_yaml);
    let file = format!(" NUMAPLAN_PLAN={}", dir.path().join("job.yaml").display());
    assert!(from_yaml.contains(&file), "{from_yaml}");
    assert_eq!(
        without_plan_id(&from_flags),
        without_plan_id(&from_yaml.replace(&file, ""))
    );
    let run = common::numaplan_in(
        dir.path(),
        &[
            "exec",
            "--nproc-per-node",
            "1",
            "--set",
            "gpus=none",
            "--",
            "sh",
            "-c",
            "echo hello $LOCAL_RANK",
        ],
    )
    .ok();
    assert_eq!(run, "[0] hello 0\n");
    // Given a plan, `--nproc-per-node` is refused, named as typed: a plan runs as written.
    common::numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let run = common::numaplan_in(dir.path(), &["exec", "plan.yaml", "--nproc-per-node", "2"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error[E0104]: `--nproc-per-node 2` changes a job spec"),
        "{}",
        run.stderr
    );
    // A count the machine cannot take is an error about the flag, as typed.
    let run = common::numaplan_in(
        dir.path(),
        &["exec", "--nproc-per-node", "100000", "--", "true"],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(" --> command line:1:18\n")
            && run.stderr.contains("1 | --nproc-per-node 100000\n"),
        "{}",
        run.stderr
    );
}

/// A topology's fingerprint covers what placement depends on, not amounts that drift: a machine
/// whose memory grew (a VM's balloon) keeps its plans' fingerprint, and `compile --check`
/// passes on the unchanged plan; a machine with a CPU fewer does not.
#[test]
fn a_fingerprint_ignores_memory_sizes_but_not_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let machine = |memory: u64, last_cpu: u32| {
        format!(
            "numaplan_topology: 1\nname: small\nnodes:\n\
             - {{id: 0, package: 0, memory_mib: {memory}, cpus: 0-3, l3_groups: [{{id: 0, threads: [0-3]}}]}}\n\
             - {{id: 1, package: 0, memory_mib: 1024, cpus: 4-{last_cpu}, l3_groups: [{{id: 1, threads: [4-{last_cpu}]}}]}}\n"
        )
    };
    let (original, grown, fewer) = (machine(13312, 7), machine(17510, 7), machine(13312, 6));
    for (name, text) in [
        ("t.yaml", &original),
        ("grown.yaml", &grown),
        ("fewer.yaml", &fewer),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    let compile = |topology: &str, extra: &[&str]| {
        let base = ["-q", "compile", "job.yaml", "--topology", topology];
        numaplan_in(dir.path(), &[&base[..], extra].concat())
    };
    let fingerprint = |topology: &str| {
        let json = compile(topology, &["--format", "json"]).ok();
        let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
        plan["topology"]["fingerprint"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(fingerprint("t.yaml"), fingerprint("grown.yaml"));
    assert_ne!(fingerprint("t.yaml"), fingerprint("fewer.yaml"));
    compile("t.yaml", &["-o", "plan.yaml"]).ok();
    std::fs::copy(dir.path().join("grown.yaml"), dir.path().join("t.yaml")).unwrap();
    let check = compile("t.yaml", &["-o", "plan.yaml", "--check"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

/// Text with the plan id of `NUMAPLAN_BOUND=PLAN_ID:RANK` left out.
fn without_plan_id(text: &str) -> String {
    text.split("NUMAPLAN_BOUND=")
        .enumerate()
        .map(|(i, part)| match i {
            0 => part.to_string(),
            _ => format!("NUMAPLAN_BOUND={}", &part[16..]),
        })
        .collect()
}

/// A number or a boolean given to `--set` for a string key means what it means in a file: its
/// text (`env: {OMP_NUM_THREADS: 4}` and `--set env.OMP_NUM_THREADS=4` give one plan), as
/// typed (`0x10` stays `0x10`). Before, `--set` refused them ("expected a string").
#[test]
fn a_scalar_set_on_a_string_key_is_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let base = "gpus: none\nranks_per_node: 1\ncommand: [true]\n";
    std::fs::write(dir.path().join("set.yaml"), base).unwrap();
    std::fs::write(
        dir.path().join("file.yaml"),
        format!("{base}env: {{OMP_NUM_THREADS: 4, DEBUG: true, MASK: 0x10}}\n"),
    )
    .unwrap();
    let plan = |args: &[&str]| {
        let mut v: serde_json::Value = serde_json::from_str(
            &common::numaplan_in(
                dir.path(),
                &[&["compile", "--format", "json"], args].concat(),
            )
            .ok(),
        )
        .unwrap();
        v.as_object_mut().unwrap().remove("name");
        v
    };
    let from_file = plan(&["file.yaml"]);
    let from_set = plan(&[
        "set.yaml",
        "--set",
        "env.OMP_NUM_THREADS=4",
        "--set",
        "env.DEBUG=true",
        "--set",
        "env.MASK=0x10",
    ]);
    assert_eq!(from_set["ranks"], from_file["ranks"]);
    assert_eq!(from_set["ranks"][0]["env"]["MASK"], "0x10");
    // A number where a number is expected stays a number; a boolean there is still wrong.
    let wrong = common::numaplan_in(
        dir.path(),
        &["compile", "set.yaml", "--set", "ranks_per_node=true"],
    );
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("invalid type: boolean `true`"),
        "{}",
        wrong.stderr
    );
}
