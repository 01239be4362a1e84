//! Serving engines (`engine:`, docs/engines.md): the `--emit vllm` script of every example that
//! names vLLM (snapshot, shellcheck) and what it refuses or warns about; the variables that
//! keep TensorRT-LLM and SGLang from binding again, in every rank that `exec`, `bind` and the
//! bash launcher start for real; W0220 where a command starts an engine the spec does not
//! name. vLLM's own code reading the script is tests/engines/ (pytest, the real vLLM).

mod common;

use std::process::Command;

use common::{numaplan, numaplan_in, rel};

const A100: &str = "topology: examples/topologies/nvidia-dgx-a100.yaml\n";

/// Writes `job` in a temp dir and compiles it with `args` there (the spec's paths are the
/// repository's: the run's working directory is it).
fn compile(job: &str, args: &[&str]) -> common::Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.yaml");
    std::fs::write(
        &file,
        job.replace(
            "examples/",
            &format!("{}/examples/", common::repo().display()),
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap().to_string();
    let run = numaplan(&[&["compile", &file][..], args].concat());
    common::Run {
        stderr: run.stderr.replace(&file, "job.yaml"),
        ..run
    }
}

#[test]
fn every_vllm_and_sglang_example_gets_a_clean_script() {
    let dir = tempfile::tempdir().unwrap();
    insta::glob!("../examples", "*.yaml", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let Some(kind) = ["vllm", "sglang"]
            .into_iter()
            .find(|e| text.contains(&format!("\nengine: {e}\n")))
        else {
            return;
        };
        let run = numaplan(&["compile", &rel(path), "--emit", kind]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stderr, "", "a plan the engine can say has no warning");
        let file = dir.path().join("serve.sh");
        std::fs::write(&file, &run.stdout).unwrap();
        common::check_script(&file);
        insta::assert_snapshot!(run.stdout);
    });
}

#[test]
fn a_rank_of_two_gpus_is_no_vllm_worker() {
    let run = compile(
        &format!("{A100}engine: vllm\ngpus_per_rank: 2\n"),
        &["--emit", "vllm"],
    );
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    insta::assert_snapshot!(run.stderr, @r"
    error[E0445]: vLLM gives each worker one GPU, and rank 0 has 2
     = help: plan one GPU per rank (`gpus_per_rank: 1`), or launch with `numaplan exec` or `--emit torchrun`
    ");
}

#[test]
fn cpu_only_ranks_are_no_vllm_workers() {
    let run = compile(&format!("{A100}gpus: none\n"), &["--emit", "vllm"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("error[E0445]: vLLM gives each worker one GPU, and rank 0 has 0"),
        "{}",
        run.stderr
    );
}

#[test]
fn emitting_vllm_for_a_spec_of_another_engine_is_refused() {
    let run = compile(&format!("{A100}engine: sglang\n"), &["--emit", "vllm"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0446]: `--emit vllm` launches another engine than the spec's `engine: sglang`
     = help: set `engine:` to the engine the script starts, or emit the spec's engine's launch
    ");
}

/// The default memory policy (`preferred`), helper cores, OpenMP places, a NIC per rank and a
/// `command` are all things vLLM's own binding cannot say: each is a W0221, and
/// `--deny-warnings` refuses the script.
#[test]
fn what_vllm_cannot_say_is_warned_with_its_code() {
    let job = format!(
        "{A100}engine: vllm\ncommand: vllm serve m\ncpu: {{helpers: 1}}\nopenmp: {{places: cores}}\ngpus: [0, 1]\n"
    );
    let run = compile(&job, &["--emit", "vllm"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stderr);
    let denied = compile(&job, &["--emit", "vllm", "--deny-warnings"]);
    assert_eq!(denied.code, 1);
    assert!(denied.stdout.is_empty());
    let allowed = compile(&job, &["--emit", "vllm", "--allow", "W0221"]);
    assert_eq!((allowed.code, allowed.stderr.as_str()), (0, ""));
}

/// SGLang says less than vLLM: a worker gets its node's CPUs (two ranks of one node, each its
/// own CPUs, get both), and a memory policy it cannot set is relaxed, not refused.
#[test]
fn what_sglang_cannot_say_is_warned_with_its_code() {
    let job = format!(
        "{A100}engine: sglang\ngpus: [0, 1, 2]\nmemory: {{policy: bind}}\nnic: {{policy: none}}\n"
    );
    let run = compile(&job, &["--emit", "sglang"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stderr, @"
    warning[W0221]: SGLang gives each worker all of its node's CPUs that the server may use, not its rank's own: ranks 0, 1 share node 3's CPUs 48-63,176-191; plan one rank per NUMA node (or `cpu: {policy: node}`) to plan what it does
     --> job.yaml
    warning[W0221]: SGLang relaxes a memory policy the node refuses (`--membind`, then `--preferred`, then none) and starts the worker anyway: the plan's required memory policy is not kept there; say `memory: {required: false}` to plan what it does
     --> job.yaml
    ");
}

/// `bind --all-ranks`: the server of `--emit sglang` runs on every rank's CPUs together, with
/// no memory policy; a node unlike the plan's is refused before anything starts.
#[test]
fn bind_all_ranks_binds_the_union_of_the_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    // The last online CPU alone: a rank whose union is not the whole machine.
    let last = cpus.trim().rsplit([',', '-']).next().unwrap().to_string();
    std::fs::write(
        dir.path().join("job.yaml"),
        format!("gpus: none\nranks_per_node: 1\ncpu: {{allowed: \"{last}\"}}\nmemory: {{policy: bind}}\nallow_warnings: [W0203]\n"),
    )
    .unwrap();
    let run = numaplan_in(
        dir.path(),
        &[
            "--quiet",
            "bind",
            "job.yaml",
            "--topology",
            "discover",
            "--all-ranks",
            "--",
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status | cut -f2; head -1 /proc/self/numa_maps | cut -d' ' -f2",
        ],
    );
    assert_eq!(run.stdout, format!("{last}\ndefault\n"), "{}", run.stderr);
    // The SGLang server the script starts so is given `--numa-node` by the script: no W0224.
    std::fs::write(
        dir.path().join("sglang.yaml"),
        format!("gpus: none\nranks_per_node: 1\nengine: sglang\ncpu: {{allowed: \"{last}\"}}\nallow_warnings: [W0203]\n"),
    )
    .unwrap();
    let server = numaplan_in(
        dir.path(),
        &[
            "bind",
            "sglang.yaml",
            "--topology",
            "discover",
            "--all-ranks",
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--version",
            "--numa-node",
            "0",
        ],
    );
    assert!(!server.stderr.contains("W0224"), "{}", server.stderr);
    let refused = numaplan(&[
        "bind",
        "examples/dgx-h100-sglang.yaml",
        "--all-ranks",
        "--",
        "touch",
        "started",
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("cannot run the plan"),
        "{}",
        refused.stderr
    );
    assert!(!common::repo().join("started").exists());
}

#[test]
fn a_job_of_several_groups_is_not_one_vllm_server() {
    let run = numaplan(&["compile", "examples/rl-groups.yaml", "--emit", "vllm"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("error[E0221]: `--emit vllm` cannot start a plan of several groups"),
        "{}",
        run.stderr
    );
}

/// Run here with the real numaplan, the script's node check refuses a DGX's plan before vLLM
/// starts (the stand-in would leave a file).
#[test]
fn the_vllm_script_checks_the_node_before_vllm_starts() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("serve.sh");
    let out = dir.path().join("started");
    std::fs::write(
        &script,
        numaplan(&["compile", "examples/dgx-a100-vllm.yaml", "--emit", "vllm"]).ok(),
    )
    .unwrap();
    let run = Command::new("bash")
        .arg(&script)
        .arg("model")
        .env("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan"))
        .env("VLLM", "touch")
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0));
    assert!(
        stderr.contains("cannot run the plan") || stderr.contains("does not look like"),
        "{stderr}"
    );
    assert!(!out.exists() && !dir.path().join("serve").exists());
}

/// `engine: trtllm` on this machine, CPU-only ranks running `env`: every rank that `exec`, `bind`
/// and the bash launcher start has TLLM_NUMA_AWARE_WORKER_AFFINITY=0; `engine: sglang`
/// SGLANG_AUTO_NUMA_BIND=0; without `engine:`, neither.
#[test]
fn every_launcher_starts_ranks_with_the_engines_variable() {
    for (engine, variable) in [
        ("trtllm", Some("TLLM_NUMA_AWARE_WORKER_AFFINITY=0")),
        ("sglang", Some("SGLANG_AUTO_NUMA_BIND=0")),
        ("", None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let key = match engine {
            "" => String::new(),
            e => format!("engine: {e}\n"),
        };
        let job = format!("{key}command: [env]\ngpus: none\nranks_per_node: 2\n");
        let _ = common::emit_here(dir.path(), &job, "bash", "launch.sh");
        let ran = [
            numaplan_in(
                dir.path(),
                &[
                    "--quiet",
                    "exec",
                    "job.yaml",
                    "--topology",
                    "discover",
                    "--no-prefix",
                ],
            )
            .ok(),
            numaplan_in(
                dir.path(),
                &[
                    "--quiet",
                    "bind",
                    "job.yaml",
                    "--topology",
                    "discover",
                    "--local-rank",
                    "1",
                ],
            )
            .ok(),
            String::from_utf8(
                Command::new("bash")
                    .arg(dir.path().join("launch.sh"))
                    .arg("--no-prefix")
                    .current_dir(dir.path())
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap(),
        ];
        for (launcher, out) in ["exec", "bind", "bash"].iter().zip(&ran) {
            let lines: Vec<&str> = out
                .lines()
                .filter(|l| l.starts_with("TLLM_") || l.starts_with("SGLANG_"))
                .collect();
            let expected = match (variable, *launcher) {
                (None, _) => 0,
                (Some(_), "bind") => 1,
                (Some(_), _) => 2,
            };
            assert_eq!(lines.len(), expected, "{engine} under {launcher}:\n{out}");
            assert!(
                lines.iter().all(|l| Some(*l) == variable),
                "{engine} under {launcher}: {lines:?}"
            );
        }
    }
}

/// W0220: a command that starts an engine the spec does not name, from `compile` (the spec's
/// command), `exec` and `bind` (the command after `--`); the engine named: no warning.
#[test]
fn an_engine_the_spec_does_not_name_is_warned_about() {
    let run = compile(
        &format!("{A100}command: trtllm-serve /models/m --tp_size 8\n"),
        &[],
    );
    assert_eq!(run.code, 0);
    insta::assert_snapshot!(run.stderr, @r"
    warning[W0220]: the command runs TensorRT-LLM, and the spec has no `engine:`: TensorRT-LLM clears a worker's affinity when it finds it constrained (TLLM_NUMA_AWARE_WORKER_AFFINITY unset), which throws the plan's CPUs away; add `engine: trtllm` to the spec
     --> job.yaml
    ");
    let named = compile(
        &format!("{A100}engine: trtllm\ncommand: trtllm-serve m\n"),
        &[],
    );
    assert_eq!((named.code, named.stderr.as_str()), (0, ""));
    let other = compile(
        &format!("{A100}engine: vllm\ncommand: python3 -m sglang.launch_server\n"),
        &[],
    );
    assert!(
        other
            .stderr
            .contains("the command runs SGLang, and the spec says `engine: vllm`"),
        "{}",
        other.stderr
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    let common = ["job.yaml", "--topology", "discover", "--dry-run"];
    let exec = numaplan_in(
        dir.path(),
        &[&["exec"][..], &common, &["--", "vllm", "serve", "m"]].concat(),
    );
    let bind = numaplan_in(
        dir.path(),
        &[
            &["bind"][..],
            &common,
            &[
                "--local-rank",
                "0",
                "--",
                "python3",
                "-m",
                "sglang.launch_server",
            ],
        ]
        .concat(),
    );
    assert_eq!(
        (exec.code, bind.code),
        (0, 0),
        "{}{}",
        exec.stderr,
        bind.stderr
    );
    assert!(
        exec.stderr
            .contains("warning[W0220]: the command runs vLLM, and the spec has no `engine:`: vLLM starts every worker of a server from the one process numaplan bound, so they all run on that rank's CPUs (and given `--numa-bind` without its lists, it finds that process's affinity constrained, skips its own detection and refuses to start"),
        "{}",
        exec.stderr
    );
    assert!(
        bind.stderr
            .contains("warning[W0220]: the command runs SGLang, and the spec has no `engine:`"),
        "{}",
        bind.stderr
    );
    let plain = numaplan_in(
        dir.path(),
        &[
            &["bind"][..],
            &common,
            &["--local-rank", "0", "--", "python3", "train.py"],
        ]
        .concat(),
    );
    assert!(!plain.stderr.contains("W0220"), "{}", plain.stderr);
}

/// `verify --process PID`: one process as its rank alone (what `numaplan.check_binding()`
/// runs): ok as `bind` started it, without the other rank reported missing; a mismatch once
/// moved; `--local-rank` says which rank it is to be.
#[test]
fn verify_process_checks_one_rank_alone() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = "gpus: none\nranks_per_node: 2\ncpu: {policy: exclusive}\nmemory: {policy: bind}\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let mut rank = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args([
            "--quiet",
            "bind",
            "job.yaml",
            "--topology",
            "discover",
            "--local-rank",
            "1",
        ])
        .args(["--", "sleep", "30"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let pid = rank.id().to_string();
    // `bind` execs sleep in its own place: wait until the process is sleep.
    let comm = format!("/proc/{pid}/comm");
    while std::fs::read_to_string(&comm).unwrap_or_default().trim() != "sleep" {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let verify = |extra: &[&str]| {
        let args = [
            &[
                "verify",
                "job.yaml",
                "--topology",
                "discover",
                "--process",
                &pid,
                "--format",
                "json",
            ][..],
            extra,
        ]
        .concat();
        let run = numaplan_in(dir.path(), &args);
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        (run.code, report)
    };
    let (code, report) = verify(&[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        (
            report["ranks"][0]["rank"].as_u64(),
            report["missing"].as_array().map(Vec::len)
        ),
        (Some(1), Some(0))
    );
    let (code, report) = verify(&["--local-rank", "0"]);
    assert_eq!(
        (code, report["ranks"][0]["rank"].as_u64()),
        (1, Some(0)),
        "{report}"
    );
    assert!(
        Command::new("taskset")
            .args(["-p", "-c", "0", &pid])
            .output()
            .unwrap()
            .status
            .success()
    );
    let (code, report) = verify(&[]);
    assert_eq!(code, 1);
    assert_eq!(
        report["ranks"][0]["problems"][0]["kind"], "thread-outside",
        "{report}"
    );
    rank.kill().unwrap();
    rank.wait().unwrap();
}

/// verify compares the NIC variables a rank started with (`/proc/PID/environ`) with its plan's:
/// a rank started with another `NCCL_IB_HCA` is a mismatch of kind `nic-variable` that names
/// the variable and both values; the variables it has right are not reported. (The DGX plan's
/// rank 0 on this machine: its CPUs differ too, which verify says as well.)
#[test]
fn verify_checks_the_nic_variables_a_rank_started_with() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "topology: {}/examples/topologies/nvidia-dgx-a100.yaml\n",
            common::repo().display()
        ),
    )
    .unwrap();
    let problems = |hca: &str| {
        let mut rank = Command::new("sleep")
            .arg("30")
            .env("NCCL_IB_HCA", hca)
            .env("UCX_NET_DEVICES", "mlx5_0:1")
            .spawn()
            .unwrap();
        let pid = rank.id().to_string();
        let args = [
            "verify",
            "job.yaml",
            "--process",
            &pid,
            "--local-rank",
            "0",
            "--format",
            "json",
        ];
        let run = numaplan_in(dir.path(), &args);
        rank.kill().unwrap();
        rank.wait().unwrap();
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(report["ranks"][0]["nic_env"]["NCCL_IB_HCA"], "=mlx5_0");
        let nic: Vec<serde_json::Value> = report["ranks"][0]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["kind"] == "nic-variable")
            .cloned()
            .collect();
        (run.code, nic)
    };
    let (code, nic) = problems("=mlx5_1");
    assert_eq!(code, 1);
    assert_eq!(nic.len(), 1, "{nic:?}");
    assert_eq!(nic[0]["variable"], "NCCL_IB_HCA");
    assert_eq!(nic[0]["actual"], "=mlx5_1");
    assert_eq!(nic[0]["planned"], "=mlx5_0");
    assert_eq!(
        nic[0]["text"],
        "NCCL_IB_HCA is '=mlx5_1', planned '=mlx5_0'"
    );
    let (_, nic) = problems("=mlx5_0");
    assert!(nic.is_empty(), "{nic:?}");
}

/// The engine scripts check the node's place as the bash launcher does, before the engine
/// starts: a node rank past the plan's nodes, or not a number, is refused (exit 2) naming the
/// plan's nodes; vLLM and SGLang never see it.
#[test]
fn the_engine_scripts_refuse_a_node_rank_the_plan_does_not_have() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "topology: {}/examples/topologies/nvidia-dgx-a100.yaml\nnodes: 2\n",
        common::repo().display()
    );
    std::fs::write(dir.path().join("job.yaml"), spec).unwrap();
    for engine in ["vllm", "sglang"] {
        let script = dir.path().join(format!("{engine}.sh"));
        let text = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", engine]).ok();
        std::fs::write(&script, text).unwrap();
        for rank in ["7", "abc", "2", "-1", "99999999999999999999"] {
            let run = Command::new("bash")
                .arg(&script)
                .args(["--node-rank", rank, "--master-addr", "h", "--", "m"])
                .env("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan"))
                .env("VLLM", "touch")
                .env("SGLANG", "touch")
                .env_remove("SLURM_NODEID")
                .current_dir(dir.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(2), "{engine} {rank}: {stderr}");
            assert!(
                stderr.contains("this plan is for 2 nodes: pass --node-rank K (0 to 1)"),
                "{engine} {rank}: {stderr}"
            );
        }
    }
}

/// vLLM names a worker's NIC to NCCL without `=`, so NCCL takes every NIC whose name begins
/// with it: said (W0221) from the plan alone, which records the machine's NIC names, also of a
/// NIC no rank uses. A DGX H100 whose first HCA is called `mlx5_1`, one rank on GPU 0: its NIC
/// `mlx5_1` begins `mlx5_10` and `mlx5_11`, which no rank of the plan has.
#[test]
fn vllm_s_nic_names_that_begin_another_nics_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        std::fs::read_to_string(common::repo().join("examples/topologies/nvidia-dgx-h100.yaml"))
            .unwrap();
    assert!(fixture.contains("name: mlx5_0\n") && !fixture.contains("name: mlx5_1\n"));
    std::fs::write(
        dir.path().join("h100.yaml"),
        fixture.replace("name: mlx5_0\n", "name: mlx5_1\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "topology: h100.yaml\ngpus: [0]\nengine: vllm\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "vllm"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning[W0221]")
            && run
                .stderr
                .contains("begins with it: mlx5_1 also mlx5_10, mlx5_1 also mlx5_11"),
        "{}",
        run.stderr
    );
    let plan = numaplan_in(dir.path(), &["compile", "job.yaml"]).ok();
    assert!(
        plan.contains("nics: [mlx5_1, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_9, mlx5_10, mlx5_11]")
    );
    assert!(
        plan.contains("  nics: [mlx5_1]\n  nic_kind: [infiniband]\n  nic_pci: ["),
        "{plan}"
    );
}

/// W0220's advice, followed, gives one server: `engine: vllm` named, `exec` of the server
/// command over a plan of eight ranks is refused (E0448: eight servers, each `-tp 8`) before
/// anything starts, as `bind` is; the `--emit vllm` script W0220 names starts vLLM once. A
/// plan of one rank a node runs its one server under `exec` (not E0448).
#[test]
fn w0220s_advice_followed_starts_one_server() {
    let unsaid = compile(
        &format!("{A100}command: [vllm, serve, m, -tp, \"8\"]\n"),
        &[],
    );
    assert!(
        unsaid
            .stderr
            .contains("`numaplan compile job.yaml --emit vllm` (one server"),
        "{}",
        unsaid.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "topology: {}/examples/topologies/nvidia-dgx-a100.yaml\nengine: vllm\n\
         command: [vllm, serve, m, -tp, \"8\"]\nmemory: {{policy: bind}}\nnic: {{policy: none}}\n",
        common::repo().display()
    );
    std::fs::write(dir.path().join("job.yaml"), &spec).unwrap();
    let exec = numaplan_in(dir.path(), &["exec", "job.yaml"]);
    assert_eq!(exec.code, 1, "{}", exec.stderr);
    insta::assert_snapshot!(exec.stderr, @"
    error[E0448]: the command starts vLLM's server, and `numaplan exec` would start it once per rank: 8 servers on this node, each over GPUs its rank does not own
     = note: nothing was started
     = help: start one server with the plan's own launch: `numaplan compile job.yaml --emit vllm -o serve.sh`, then `./serve.sh MODEL ...`; vLLM binds each of its workers to its rank there
    ");
    let bind = numaplan_in(dir.path(), &["bind", "job.yaml", "--local-rank", "3"]);
    assert!(
        bind.stderr.contains("error[E0448]") && bind.stderr.contains("`numaplan bind`"),
        "{}",
        bind.stderr
    );
    // A shell's script is read as well.
    let in_shell = spec.replace(
        "command: [vllm, serve, m, -tp, \"8\"]",
        "command: [bash, -c, \"vllm serve m -tp 8\"]",
    );
    std::fs::write(dir.path().join("shell.yaml"), in_shell).unwrap();
    let shell = numaplan_in(dir.path(), &["exec", "shell.yaml"]);
    assert!(shell.stderr.contains("error[E0448]"), "{}", shell.stderr);
    // One rank a node: its server is the job's one server.
    let one = numaplan_in(
        dir.path(),
        &["exec", "job.yaml", "--set", "gpus=[2]", "--dry-run"],
    );
    assert!(!one.stderr.contains("E0448"), "{}", one.stderr);

    // The script W0220 names starts vLLM once.
    let script = dir.path().join("serve.sh");
    let emitted = numaplan_in(
        dir.path(),
        &[
            "compile", "job.yaml", "--emit", "vllm", "--allow", "W0221", "-o", "serve.sh",
        ],
    );
    assert_eq!(emitted.code, 0, "{}", emitted.stderr);
    let starts = dir.path().join("starts");
    let stand_in = dir.path().join("vllm");
    std::fs::write(
        &stand_in,
        format!("#!/bin/sh\necho \"$*\" >> {}\n", starts.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Command::new("bash")
        .arg(&script)
        .args(["m", "-tp", "8"])
        .env("NUMAPLAN", "true")
        .env("VLLM", &stand_in)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
}

/// W0224: the spec's engine run with its own binding flags, from `compile` (the spec's
/// command) and `exec`/`bind` (the words after `--`).
#[test]
fn the_engines_own_binding_flags_in_a_command_are_warned_about() {
    let run = compile(
        &format!(
            "{A100}engine: vllm\ngpus: [2]\ncommand: [vllm, serve, m, --numa-bind, --numa-bind-nodes, \"1\"]\n"
        ),
        &[],
    );
    assert_eq!(run.code, 0);
    insta::assert_snapshot!(run.stderr, @r"
    warning[W0224]: the command passes vLLM's own binding flag --numa-bind: the engine binds its workers by it, not by the plan (and `--emit vllm` refuses it); remove them (--numa-bind, --numa-bind-nodes)
     --> job.yaml
    ");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\nengine: sglang\n",
    )
    .unwrap();
    let bind = numaplan_in(
        dir.path(),
        &[
            "bind",
            "job.yaml",
            "--topology",
            "discover",
            "--dry-run",
            "--local-rank",
            "0",
            "--",
            "python3",
            "-m",
            "sglang.launch_server",
            "--numa-node",
            "0",
        ],
    );
    assert_eq!(bind.code, 0, "{}", bind.stderr);
    assert!(
        bind.stderr
            .contains("warning[W0224]: the command passes SGLang's own binding flag --numa-node"),
        "{}",
        bind.stderr
    );
}

/// A process started under an engine's worker title (`exec -a`, as `setproctitle` shows it in
/// `/proc/PID/cmdline`), bound with numactl as the engine binds it, and with the launcher
/// variable every worker inherits from a server started under Slurm.
fn worker(title: &str, cpus: &str) -> std::process::Child {
    let child = Command::new("numactl")
        .args([
            &format!("--physcpubind={cpus}"),
            "--membind=0",
            "bash",
            "-c",
        ])
        .arg(format!("exec -a {title} sleep 30"))
        .env("SLURM_LOCALID", "0")
        .spawn()
        .unwrap();
    let cmdline = format!("/proc/{}/cmdline", child.id());
    while !std::fs::read_to_string(&cmdline)
        .unwrap_or_default()
        .starts_with(title)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

/// Ends the workers `worker` started.
fn stop(workers: impl IntoIterator<Item = std::process::Child>) {
    for mut w in workers {
        w.kill().unwrap();
        w.wait().unwrap();
    }
}

/// `verify` of a node running an engine plan's server: each worker found by its title
/// (`--match`, or `--pids` in any order), checked against the rank of the GPU it drives as
/// the engine binds it (vLLM: the rank's CPUs; SGLang: its node's planned CPUs), one moved
/// elsewhere named; `--process` of a worker finds its rank the same way, and of a process
/// that says no rank is refused (E0449) instead of being taken for rank 0.
#[test]
fn verify_checks_engine_workers_by_their_titles() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let topology = common::repo().join("tests/cases/topologies/two-cpus-two-gpus.yaml");
    for engine in ["vllm", "sglang"] {
        let spec = format!(
            "topology: {}\nengine: {engine}\nmemory: {{policy: bind, required: false}}\n",
            topology.display()
        );
        std::fs::write(dir.path().join(format!("{engine}.yaml")), spec).unwrap();
        let out = format!("{engine}.plan");
        let run = numaplan_in(
            dir.path(),
            &["--quiet", "compile", &format!("{engine}.yaml"), "-o", &out],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let verify = |plan: &str, args: &[&str]| {
        let run = numaplan_in(
            dir.path(),
            &[&["verify", plan, "--format", "json"][..], args].concat(),
        );
        let report: serde_json::Value =
            serde_json::from_str(&run.stdout).unwrap_or(serde_json::Value::Null);
        (run.code, report, run.stderr)
    };
    let rank_and_kinds = |report: &serde_json::Value| -> Vec<(u64, u64, Vec<String>)> {
        report["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let kinds = r["problems"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["kind"].as_str().unwrap().to_string())
                    .collect();
                (
                    r["rank"].as_u64().unwrap(),
                    r["pid"].as_u64().unwrap(),
                    kinds,
                )
            })
            .collect()
    };

    // vLLM: worker TP1 drives GPU 1, rank 1's (CPU 1); TP0 rank 0's (CPU 0).
    let tp1 = worker("VLLM::Worker_TP1", "1");
    let tp0 = worker("VLLM::Worker_TP0", "0");
    let (p0, p1) = (u64::from(tp0.id()), u64::from(tp1.id()));
    let (code, report, stderr) = verify("vllm.plan", &["--match", "VLLM::Worker"]);
    assert_eq!(code, 0, "{report}{stderr}");
    assert_eq!(
        rank_and_kinds(&report),
        vec![(0, p0, vec![]), (1, p1, vec![])]
    );
    let (code, report, _) = verify("vllm.plan", &["--pids", &p1.to_string(), &p0.to_string()]);
    assert_eq!(
        (code, rank_and_kinds(&report)),
        (0, vec![(0, p0, vec![]), (1, p1, vec![])])
    );
    let (code, report, _) = verify("vllm.plan", &["--process", &p1.to_string()]);
    assert_eq!((code, rank_and_kinds(&report)), (0, vec![(1, p1, vec![])]));
    // Moved elsewhere: named as its rank.
    assert!(
        Command::new("taskset")
            .args(["-a", "-p", "-c", "0", &p1.to_string()])
            .output()
            .unwrap()
            .status
            .success()
    );
    let (code, report, _) = verify("vllm.plan", &["--match", "VLLM::Worker"]);
    assert_eq!(code, 1);
    assert_eq!(
        rank_and_kinds(&report),
        vec![(0, p0, vec![]), (1, p1, vec!["thread-outside".to_string()])]
    );
    stop([tp0, tp1]);

    // SGLang binds each worker to its node's planned CPUs (0-1 here), not its rank's own.
    let s1 = worker("sglang::scheduler_TP1", "0-1");
    let s0 = worker("sglang::scheduler_TP0", "0-1");
    let (p0, p1) = (u64::from(s0.id()), u64::from(s1.id()));
    let (code, report, stderr) = verify("sglang.plan", &["--match", "sglang::scheduler"]);
    assert_eq!(code, 0, "{report}{stderr}");
    assert_eq!(
        rank_and_kinds(&report),
        vec![(0, p0, vec![]), (1, p1, vec![])]
    );
    // Named outright (`--local-rank`), a worker is still checked as SGLang binds it.
    let (code, _, _) = verify(
        "sglang.plan",
        &["--process", &p0.to_string(), "--local-rank", "0"],
    );
    assert_eq!(
        code, 0,
        "a worker found or named, SGLang's binding is what is checked"
    );
    stop([s0, s1]);

    // A process that says no rank of a plan of two: refused, not taken for rank 0.
    let mut plain = Command::new("sleep");
    for var in [
        "LOCAL_RANK",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "PALS_LOCAL_RANKID",
        "FLUX_TASK_LOCAL_ID",
        "NUMAPLAN_BOUND",
    ] {
        plain.env_remove(var);
    }
    let mut plain = plain.arg("30").spawn().unwrap();
    let (code, _, stderr) = verify("vllm.plan", &["--process", &plain.id().to_string()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("error[E0449]"), "{stderr}");
    let (code, _, stderr) = verify(
        "vllm.plan",
        &["--process", &plain.id().to_string(), "--local-rank", "5"],
    );
    assert!(code != 0 && stderr.contains("error[E0433]"), "{stderr}");
    plain.kill().unwrap();
    plain.wait().unwrap();
    // A worker of a GPU past the plan's two (data parallel rank 2 of one GPU each).
    let past: Vec<_> = ["VLLM::Worker_DP0", "VLLM::Worker_DP1", "VLLM::Worker_DP2"]
        .iter()
        .map(|t| worker(t, "0-1"))
        .collect();
    let (code, _, stderr) = verify("vllm.plan", &["--process", &past[2].id().to_string()]);
    assert!(
        code == 1
            && stderr.contains("error[E0449]")
            && stderr.contains(
                "its title VLLM::Worker_DP2 is an engine's worker of a GPU past the plan's ranks"
            ),
        "{stderr}"
    );
    let (_, report, stderr) = verify("vllm.plan", &["--match", "VLLM::Worker_DP"]);
    assert_eq!(
        report["ranks"].as_array().map(Vec::len),
        Some(2),
        "{report}{stderr}"
    );
    stop(past);
    let (_, _, stderr) = verify("vllm.plan", &["--process", "2"]);
    assert!(
        stderr.contains("error[E0440]: process 2 is a kernel thread"),
        "{stderr}"
    );
    let (_, _, stderr) = verify("vllm.plan", &["--process", "4194304"]);
    assert!(
        stderr.contains("`--process` names process 4194304"),
        "{stderr}"
    );
}

/// W0223 of `env:`: a visibility variable that sets the GPUs of ranks the plan gives GPUs, not
/// one that hides them from CPU-only ranks; SGLang's switch read as SGLang reads it.
#[test]
fn env_values_that_undo_the_plan_are_warned_and_others_not() {
    let same_gpus = compile(
        &format!("{A100}env: {{CUDA_VISIBLE_DEVICES: \"0\"}}\n"),
        &[],
    );
    assert!(
        same_gpus
            .stderr
            .contains("warning[W0223]: `env:` sets CUDA_VISIBLE_DEVICES=0, which gives every rank the same GPUs"),
        "{}",
        same_gpus.stderr
    );
    for quiet in [
        "gpus: none\nenv: {CUDA_VISIBLE_DEVICES: \"\"}\n",
        "env: {CUDA_VISIBLE_DEVICES: \"-1\"}\n",
        "engine: sglang\nenv: {SGLANG_AUTO_NUMA_BIND: \"false\"}\n",
        "engine: trtllm\nenv: {TLLM_NUMA_AWARE_WORKER_AFFINITY: \"0\"}\n",
    ] {
        let run = compile(&format!("{A100}{quiet}"), &[]);
        assert!(!run.stderr.contains("W0223"), "{quiet}: {}", run.stderr);
    }
    let trtllm = compile(
        &format!("{A100}engine: trtllm\nenv: {{TLLM_NUMA_AWARE_WORKER_AFFINITY: \"1\"}}\n"),
        &[],
    );
    assert!(
        trtllm
            .stderr
            .contains("turns back on TensorRT-LLM's own worker affinity"),
        "{}",
        trtllm.stderr
    );
}
