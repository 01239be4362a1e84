//! `--emit bash`: the launcher for every example (snapshot, `bash -n`, shellcheck), and the
//! launcher run for real on this machine: bindings read back from /proc, quoting byte for byte,
//! failure handling and signal forwarding.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{numaplan, numaplan_in, rel, repo};

#[test]
fn every_example_gets_a_clean_launcher() {
    let dir = tempfile::tempdir().unwrap();
    insta::glob!("../examples", "*.yaml", |path| {
        let job = rel(path);
        // A job of several groups spans nodes: tests/groups.rs checks that it is refused here.
        // vLLM's and SGLang's examples have no command: the engine starts its workers
        // (tests/engines.rs).
        let text = std::fs::read_to_string(path).unwrap();
        let engines = text.contains("\nengine: ") && !text.contains("\ncommand:");
        if text.contains("\ngroups:") || engines {
            return;
        }
        let script = numaplan(&["compile", &job, "--emit", "bash"]).ok();
        let file = dir.path().join("launch.sh");
        std::fs::write(&file, &script).unwrap();
        common::check_script(&file);
        insta::assert_snapshot!(script);
    });
}

#[test]
fn a_launch_needs_a_command() {
    let run = numaplan(&[
        "compile",
        "tests/cases/compile/lumi_max_cores.yaml",
        "--topology",
        "examples/topologies/lumi-g.yaml",
        "--emit",
        "bash",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0402]: the job spec has no `command`, which a launch script needs
     = help: add the program each rank runs, e.g. `command: [python, train.py]`
    ");
}

/// Compiles `job` for this machine into `launch.sh` in a temp dir; returns (dir, script, plan).
fn launcher(job: &str) -> (tempfile::TempDir, PathBuf, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let plan = common::emit_here(dir.path(), job, "bash", "launch.sh");
    let script = dir.path().join("launch.sh");
    common::check_script(&script);
    (dir, script, plan)
}

/// A rank program in bash that records what it got into `out-$LOCAL_RANK.*` files.
const PROBE: &str = r#"command:
  - bash
  - -c
  - |
    out="$0/out-$LOCAL_RANK"
    grep Cpus_allowed_list /proc/self/status | cut -f2 > "$out.cpus"
    head -1 /proc/self/numa_maps | cut -d' ' -f2 > "$out.policy"
    env > "$out.env"
    printf '%s\0' "$@" > "$out.argv"
"#;

#[test]
fn ranks_run_with_the_planned_cpus_memory_and_environment() {
    let job = format!(
        "{PROBE}  - {{dir}}\ngpus: none\nranks_per_node: 2\nmemory: {{policy: bind}}\nenv: {{EXTRA: yes}}\n"
    );
    let (dir, script, plan) = launcher(&job.replace("{dir}", "PLACEHOLDER"));
    // The rank writes next to the script: pass the directory as $0 via the command's argv.
    let text = std::fs::read_to_string(&script)
        .unwrap()
        .replace("PLACEHOLDER", dir.path().to_str().unwrap());
    std::fs::write(&script, text).unwrap();
    let status = Command::new(&script).arg("--no-prefix").status().unwrap();
    assert!(status.success());
    for r in plan["ranks"].as_array().unwrap() {
        let rank = r["local_rank"].as_u64().unwrap();
        let read = |ext: &str| {
            std::fs::read_to_string(dir.path().join(format!("out-{rank}.{ext}"))).unwrap()
        };
        assert_eq!(
            read("cpus").trim(),
            r["cpus"].as_str().unwrap(),
            "rank {rank} CPUs"
        );
        let nodes = r["memory"]["nodes"].as_str().unwrap();
        assert_eq!(
            read("policy").trim(),
            format!("bind:{nodes}"),
            "rank {rank} memory policy"
        );
        let env = read("env");
        for (k, v) in r["env"].as_object().unwrap() {
            let line = format!("{k}={}", v.as_str().unwrap());
            assert!(env.lines().any(|l| l == line), "rank {rank} lacks {line}");
        }
    }
}

#[test]
fn arguments_and_environment_arrive_byte_for_byte() {
    let (dir, script, _) = launcher(&common::quoting_job(""));
    let extra = "--lr 3e-4 'quoted' $HOME";
    let status = Command::new(&script)
        .args(["--no-prefix", "--", extra])
        .env("OUT", dir.path())
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let args = std::fs::read(dir.path().join("args-0")).unwrap();
    let expected = common::nul_joined(common::NASTY.iter().copied().chain([extra]));
    assert_eq!(
        String::from_utf8_lossy(&args),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("env-0")).unwrap(),
        common::NASTY.join("|")
    );
    assert!(!dir.path().join("pwned").exists());
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const SUPERVISED: &str = r#"command:
  - bash
  - -c
  - |
    trap 'echo term > "$OUT/term-$LOCAL_RANK"; exit 143' TERM
    touch "$OUT/ready-$LOCAL_RANK"
    # The failing rank waits until rank 0's trap is set, so that rank 0 reports the TERM.
    if [ "$LOCAL_RANK" = "$FAIL_RANK" ]; then
      while [ ! -e "$OUT/ready-0" ]; do sleep 0.01; done
      exit 3
    fi
    sleep 60 & wait
gpus: none
ranks_per_node: 2
"#;

#[test]
fn a_failing_rank_stops_the_others_and_sets_the_exit_status() {
    let (dir, script, _) = launcher(SUPERVISED);
    let out = Command::new(&script)
        .env("OUT", dir.path())
        .env("FAIL_RANK", "1")
        .env("NUMAPLAN_GRACE", "5")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("numaplan: rank 1 exited with status 3; stopping the other ranks"),
        "{stderr}"
    );
    assert!(dir.path().join("term-0").exists(), "rank 0 got TERM");
}

#[test]
fn sigterm_to_the_launcher_reaches_every_rank() {
    let (dir, script, _) = launcher(SUPERVISED);
    let mut child = Command::new(&script)
        .env("OUT", dir.path())
        .env("FAIL_RANK", "none")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("ready-0"));
    wait_for(&dir.path().join("ready-1"));
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "the ranks' status");
    for rank in 0..2 {
        assert!(
            dir.path().join(format!("term-{rank}")).exists(),
            "rank {rank} got TERM"
        );
    }
}

#[test]
fn a_node_unlike_the_plan_is_refused_and_numactl_errors_name_the_rank() {
    // A plan for a LUMI-G node, run on this (much smaller) machine.
    let dir = tempfile::tempdir().unwrap();
    let job = repo().join("examples/lumi-g.yaml");
    let script = dir.path().join("launch.sh");
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            job.to_str().unwrap(),
            "--emit",
            "bash",
            "-o",
            "launch.sh",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let refused = Command::new(&script).output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("the plan expects 128"), "{stderr}");
    assert!(
        stderr.contains("does not look like topology lumi-g; rerun with --force"),
        "{stderr}"
    );
    // Forced, numactl cannot bind to CPUs this machine lacks: the launch stops before any rank
    // starts, naming the rank, its CPUs and the CPUs this process may use (not numactl's usage).
    let forced = Command::new(&script)
        .args(["--force", "--no-prefix"])
        .env("NUMAPLAN_GRACE", "2")
        .output()
        .unwrap();
    assert_eq!(forced.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&forced.stderr);
    let allowed = common::cpus_allowed("/proc/self/status");
    assert!(
        stderr.contains(&format!(
            "numaplan: rank 0's CPUs 49-55 are not all allowed to this process (it may use {allowed})"
        )) && stderr.contains("compile the job where it runs"),
        "{stderr}"
    );
    assert!(!stderr.contains("usage"), "{stderr}");
    assert!(
        !stderr.contains("exited with status"),
        "nothing started: {stderr}"
    );
}

#[test]
fn dry_run_prints_each_rank_and_starts_nothing() {
    let (dir, script, plan) =
        launcher("command: [touch, started]\ngpus: none\nranks_per_node: 2\n");
    let out = Command::new(&script)
        .arg("--dry-run")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for r in plan["ranks"].as_array().unwrap() {
        let prefix = format!("[{}] setsid env ", r["local_rank"]);
        let line = text
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains(&format!("--physcpubind={}", r["cpus"].as_str().unwrap())),
            "{line}"
        );
        assert!(line.ends_with(" touch started"), "{line}");
    }
    assert!(!dir.path().join("started").exists());
}

#[test]
fn output_lines_are_prefixed_with_the_rank_and_none_is_lost() {
    let (dir, script, _) = launcher(
        "command: [bash, -c, 'for i in $(seq 1 200); do echo \"line $i of $LOCAL_RANK\"; done; printf \"tail-$LOCAL_RANK\"']\ngpus: none\nranks_per_node: 2\n",
    );
    let out = Command::new(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for rank in 0..2 {
        for i in 1..=200 {
            let line = format!("[{rank}] line {i} of {rank}");
            assert!(text.lines().any(|l| l == line), "missing `{line}`");
        }
        assert!(
            text.lines().any(|l| l == format!("[{rank}] tail-{rank}")),
            "a last line without newline is kept whole:\n{text}"
        );
    }
    assert!(
        text.lines()
            .all(|l| l.starts_with("[0] ") || l.starts_with("[1] ")),
        "no mixed lines:\n{text}"
    );
}

#[test]
fn without_numactl_taskset_binds_and_says_memory_is_not_applied() {
    let (dir, script, plan) = launcher(
        "command: [bash, -c, 'grep Cpus_allowed_list /proc/self/status | cut -f2 > \"cpus-$LOCAL_RANK\"']\ngpus: none\nranks_per_node: 2\n",
    );
    // A PATH with every tool the launcher uses, except numactl.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in [
        "bash", "getconf", "find", "wc", "grep", "awk", "setsid", "env", "taskset", "kill",
        "sleep", "cut",
    ] {
        let found = Command::new("bash")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let path = String::from_utf8_lossy(&found.stdout).trim().to_string();
        assert!(!path.is_empty(), "{tool} is installed");
        std::os::unix::fs::symlink(path, bin.join(tool)).unwrap();
    }
    let out = common::succeed(
        Command::new(&script)
            .env("PATH", &bin)
            .current_dir(dir.path()),
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("numactl not found: binding CPUs with taskset; memory policy is not applied")
    );
    for r in plan["ranks"].as_array().unwrap() {
        let got =
            std::fs::read_to_string(dir.path().join(format!("cpus-{}", r["local_rank"]))).unwrap();
        assert_eq!(got.trim(), r["cpus"].as_str().unwrap());
    }
}

/// A multi-node plan's launcher needs this node's place: without `--node-rank` and
/// `--master-addr` it refuses (exit 2, nothing started); with them each rank gets its global
/// numbering, as on node 1 of 2 here.
#[test]
fn multi_node_launcher_takes_the_node_rank() {
    let job = format!("{PROBE}  - PLACEHOLDER\ngpus: none\nranks_per_node: 2\nnodes: 2\n");
    let (dir, script, plan) = launcher(&job);
    let text = std::fs::read_to_string(&script)
        .unwrap()
        .replace("PLACEHOLDER", dir.path().to_str().unwrap());
    std::fs::write(&script, text).unwrap();
    for args in [
        &[][..],
        &["--node-rank", "1"],
        &["--node-rank", "2", "--master-addr", "h"],
    ] {
        let out = Command::new(&script).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(
                "this plan is for 2 nodes: pass --node-rank K (0 to 1) and --master-addr HOST"
            ),
            "{args:?}"
        );
        assert!(!dir.path().join("out-0.env").exists(), "no rank started");
    }
    let status = Command::new(&script)
        .args([
            "--no-prefix",
            "--node-rank",
            "1",
            "--master-addr",
            "10.1.2.3",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    for r in plan["ranks"].as_array().unwrap() {
        let local = r["local_rank"].as_u64().unwrap();
        let env = std::fs::read_to_string(dir.path().join(format!("out-{local}.env"))).unwrap();
        for line in [
            format!("RANK={}", 2 + local),
            "NODE_RANK=1".into(),
            "GROUP_RANK=1".into(),
            "MASTER_ADDR=10.1.2.3".into(),
            "WORLD_SIZE=4".into(),
            format!("LOCAL_RANK={local}"),
        ] {
            assert!(
                env.lines().any(|l| l == line),
                "rank {local} lacks {line}:\n{env}"
            );
        }
    }
}

/// A generated script's usage and examples call it by the name it was written to (`-o`), not
/// by a fixed `torchrun.sh` or `launch.sh`; on standard output, `./SCRIPT`.
#[test]
fn a_script_is_called_by_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    for (kind, file) in [("torchrun", "start-llama.sh"), ("mpirun", "mpi-job")] {
        let args = ["compile", "job.yaml", "--emit", kind, "-o", file];
        let run = numaplan_in(dir.path(), &args);
        assert_eq!(run.code, 0, "{kind}: {}", run.stderr);
        let script = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(
            script.contains(&format!("# Usage: ./{file} [--force]")),
            "{script}"
        );
        assert!(script.contains(&format!("`./{file} -- ")), "{script}");
    }
    let run = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "torchrun"]);
    assert!(
        run.stdout.contains("# Usage: ./SCRIPT [--force]"),
        "{}",
        run.stdout
    );
}
