//! `numaplan exec` on this machine: ranks bound before they start (CPUs and memory policy read
//! back from /proc), environment, threads, supervision faults, output relay, `--verify`, and
//! `numaplan verify` on running processes.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{NASTY, nul_joined, numaplan_in, quoting_job};

/// Writes `job` to `dir/job.yaml` and runs `numaplan exec job.yaml ARGS` there.
fn exec(dir: &Path, job: &str, args: &[&str]) -> Output {
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml"])
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("OUT", dir)
        .env_remove("SLURM_NODEID")
        .env_remove("SLURM_NNODES")
        .env_remove("SLURM_JOB_NODELIST")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The plan numaplan makes of `dir/job.yaml` for this machine.
fn plan(dir: &Path) -> serde_json::Value {
    let run = numaplan_in(dir, &["compile", "job.yaml", "--format", "json"]).ok();
    serde_json::from_str(&run).unwrap()
}

/// One rank per CPU of this machine (at most 2), memory bound to the rank's node.
const PROBE: &str = r#"command: [sh, -c, 'echo "cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2) mem=$(head -1 /proc/self/numa_maps | cut -d" " -f2) rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE omp=$OMP_NUM_THREADS custom=$CUSTOM"']
ranks_per_node: 2
gpus: none
cpu: {policy: auto}
memory: {policy: bind}
env: {CUSTOM: 'a b'}
"#;

#[test]
fn ranks_start_bound_as_planned() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(dir.path(), PROBE, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = plan(dir.path());
    let stdout = text(&out.stdout);
    for r in plan["ranks"].as_array().unwrap() {
        let rank = r["local_rank"].as_u64().unwrap();
        let expected = format!(
            "[{rank}] cpus={} mem=bind:{} rank={rank} local={rank} world={} omp={} custom=a b",
            r["cpus"].as_str().unwrap(),
            r["memory"]["nodes"].as_str().unwrap(),
            r["env"]["WORLD_SIZE"].as_str().unwrap(),
            r["env"]["OMP_NUM_THREADS"].as_str().unwrap(),
        );
        assert!(
            stdout.lines().any(|l| l == expected),
            "want `{expected}` in:\n{stdout}"
        );
    }
}

#[test]
fn arguments_and_environment_arrive_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let extra: Vec<&str> = NASTY.to_vec();
    let mut args = vec!["--"];
    args.extend(&extra);
    let out = exec(dir.path(), &quoting_job(""), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut want: Vec<&str> = NASTY.to_vec();
    want.extend(&extra);
    assert_eq!(
        std::fs::read(dir.path().join("args-0")).unwrap(),
        nul_joined(want)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("env-0")).unwrap(),
        NASTY.join("|")
    );
    assert!(!dir.path().join("pwned").exists());
}

/// A rank starts as a shell would start it, not as numaplan runs: SIGPIPE at its default
/// (Rust's runtime ignores it in numaplan), no signal blocked, stdin on /dev/null, numaplan's
/// environment with the plan's on top, and a process group of its own.
#[test]
fn ranks_start_with_a_clean_process_state() {
    let dir = tempfile::tempdir().unwrap();
    // `cat` is the rank itself (no shell between), so its status is what numaplan gave it.
    let out = exec(
        dir.path(),
        "command: [cat, /proc/self/status, /proc/self/stat]\nranks_per_node: 1\ngpus: none\nenv: {FROM_PLAN: '1'}\n",
        &["--no-prefix"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let status = text(&out.stdout);
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    assert_eq!(field("SigBlk:"), 0, "signals blocked in the rank");
    assert_eq!(
        field("SigIgn:") & (1 << (libc::SIGPIPE - 1)),
        0,
        "SIGPIPE ignored"
    );
    // /proc/self/stat: pid (comm) state ppid pgrp ...: the rank leads its own group.
    let stat = status.lines().last().unwrap();
    let after_comm: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    let pid = stat.split(' ').next().unwrap();
    assert_eq!(after_comm[2], pid, "process group: {stat}");

    let out = exec(
        dir.path(),
        "command: [sh, -c, 'readlink /proc/self/fd/0; echo \"$FROM_PLAN $OUT\"']\nranks_per_node: 1\ngpus: none\nenv: {FROM_PLAN: '1'}\n",
        &["--no-prefix"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // `exec` sets OUT in numaplan's own environment.
    assert_eq!(
        text(&out.stdout),
        format!("/dev/null\n1 {}\n", dir.path().display())
    );
}

/// 64 ranks on this machine's CPUs: more than numaplan leaves unconfirmed at once, every one
/// runs, with its own local rank, and its output arrives whole.
#[test]
fn many_ranks_all_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = exec(
        dir.path(),
        "command: [sh, -c, 'echo $LOCAL_RANK > \"$OUT/r-$LOCAL_RANK\"; echo ran $LOCAL_RANK']\nranks_per_node: 64\ngpus: none\ncpu: {policy: node}\n",
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for r in 0..64 {
        let written = std::fs::read_to_string(dir.path().join(format!("r-{r}"))).unwrap();
        assert_eq!(written.trim(), r.to_string());
        assert!(stdout.contains(&format!("[{r}] ran {r}\n")), "{stdout}");
    }
    assert_eq!(stdout.lines().count(), 64, "{stdout}");
}

/// A rank's threads inherit the binding, and `numaplan verify` finds them in /proc/PID/task.
#[test]
fn threads_inherit_the_binding_and_verify_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("threads.c");
    std::fs::write(
        &src,
        r#"#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *run(void *arg) {
    sleep(2);
    char line[256]; FILE *f = fopen("/proc/thread-self/status", "r");
    while (fgets(line, sizeof line, f)) if (!strncmp(line, "Cpus_allowed_list:", 18)) printf("thread %s", line + 18);
    fclose(f); fflush(stdout); return arg;
}
int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, run, 0);
    char path[4096]; snprintf(path, sizeof path, "%s/pid-%s", getenv("OUT"), getenv("LOCAL_RANK"));
    FILE *f = fopen(path, "w"); fprintf(f, "%d\n", getpid()); fclose(f);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    return 0;
}
"#,
    )
    .unwrap();
    let bin = dir.path().join("threads");
    common::succeed(
        Command::new("cc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    let job = format!(
        "command: [{}]\nranks_per_node: 2\ngpus: none\nmemory: {{policy: bind}}\n",
        bin.display()
    );
    std::fs::write(dir.path().join("job.yaml"), &job).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml", "--verify"])
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(dir.path(), 2);
    let pid_args: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    let mut args = vec!["verify", "job.yaml", "--pids"];
    args.extend(pid_args.iter().map(String::as_str));
    let verified = numaplan_in(dir.path(), &args);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = plan(dir.path());
    let stdout = text(&out.stdout);
    for r in plan["ranks"].as_array().unwrap() {
        let rank = r["local_rank"].as_u64().unwrap();
        let cpus = r["cpus"].as_str().unwrap();
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{rank}] thread")))
            .collect();
        assert_eq!(lines.len(), 3, "{stdout}");
        for l in lines {
            assert_eq!(l.split_whitespace().last(), Some(cpus), "{l}");
        }
        let memory = format!("bind:{}", r["memory"]["nodes"].as_str().unwrap());
        // --verify at start: the main thread, as planned.
        let start_row = row_of(&text(&out.stderr), rank);
        assert_eq!(
            &start_row[3..],
            [cpus, cpus, &memory, &memory, "ok"],
            "{start_row:?}"
        );
        // `numaplan verify` later: all 4 threads (main + 3).
        let row = row_of(&verified.stdout, rank);
        assert_eq!(
            &row[2..],
            ["4", cpus, cpus, &memory, &memory, "ok"],
            "{}",
            verified.stdout
        );
    }
    assert_eq!(verified.code, 0, "{}", verified.stderr);
}

/// The columns of rank `rank`'s row of a verification table.
fn row_of(table: &str, rank: u64) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&rank.to_string()))
        .unwrap_or_else(|| panic!("no row for rank {rank}:\n{table}"))
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// Waits for `dir/pid-K` of ranks 0..n and returns their pids.
fn wait_for_pids(dir: &Path, n: u32) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    (0..n)
        .map(|r| {
            loop {
                if let Some(pid) = std::fs::read_to_string(dir.join(format!("pid-{r}")))
                    .ok()
                    .and_then(|p| p.trim().parse().ok())
                {
                    break pid;
                }
                assert!(Instant::now() < deadline, "rank {r} did not start");
                std::thread::sleep(Duration::from_millis(20));
            }
        })
        .collect()
}

#[test]
fn a_failing_rank_stops_the_others_and_sets_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let job = r#"command: [sh, -c, 'if [ "$LOCAL_RANK" = 1 ]; then sleep 0.3; exit 3; fi; trap "echo rank 0 got TERM; exit 0" TERM; sleep 60 & wait']
ranks_per_node: 2
gpus: none
"#;
    let start = Instant::now();
    let out = exec(dir.path(), job, &[]);
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stdout).contains("[0] rank 0 got TERM"),
        "{}",
        text(&out.stdout)
    );
    insta::assert_snapshot!(text(&out.stderr), @r"
    error[E0414]: rank 1 exited with status 3
     = note: the other ranks were stopped (TERM, then KILL after the grace period)
     = help: the rank's own output above says why
    ");
}

#[test]
fn a_rank_killed_by_a_signal_gives_128_plus_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let job = "command: [sh, -c, 'if [ \"$LOCAL_RANK\" = 1 ]; then kill -9 $$; fi; sleep 60']\nranks_per_node: 2\ngpus: none\n";
    let out = exec(dir.path(), job, &[]);
    assert_eq!(out.status.code(), Some(137));
    assert!(
        text(&out.stderr).starts_with("error[E0414]: rank 1 was killed by SIGKILL\n"),
        "{}",
        text(&out.stderr)
    );
}

/// A rank that ignores TERM is killed after the grace period.
#[test]
fn a_rank_that_never_exits_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-stuck-{}", std::process::id());
    let job = format!(
        "command: [bash, -c, 'if [ \"$LOCAL_RANK\" = 1 ]; then sleep 0.3; exit 7; fi; trap \"\" TERM; exec -a {marker} sleep 60']\nranks_per_node: 2\ngpus: none\n"
    );
    let start = Instant::now();
    let out = exec(dir.path(), &job, &["--grace", "1"]);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert!(
        took >= Duration::from_millis(1200) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert_no_process(&marker);
}

fn assert_no_process(marker: &str) {
    let found = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    assert!(
        found.stdout.is_empty(),
        "left behind: {}",
        text(&found.stdout)
    );
}

/// Starts `numaplan exec` in the background with ranks that write their pid to `dir/pid-K`.
fn start_background(dir: &Path, marker: &str) -> (std::process::Child, Vec<u32>) {
    let job = format!(
        "command: [sh, -c, 'trap \"echo TERM >> $OUT/term-$LOCAL_RANK; exit 0\" TERM; echo $$ > $OUT/pid-$LOCAL_RANK.tmp; mv $OUT/pid-$LOCAL_RANK.tmp $OUT/pid-$LOCAL_RANK; sleep 60 & wait', {marker}]\nranks_per_node: 2\ngpus: none\n"
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml"])
        .current_dir(dir)
        .env("OUT", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = wait_for_pids(dir, 2);
    (child, pids)
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn sigterm_to_numaplan_reaches_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-sigterm-test-{}", std::process::id());
    let (child, pids) = start_background(dir.path(), &marker);
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("error[E0415]: numaplan received SIGTERM; the ranks were stopped")
    );
    for r in 0..2 {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(format!("term-{r}"))).unwrap(),
            "TERM\n"
        );
    }
    for pid in pids {
        assert!(!alive(pid), "rank {pid} survived");
    }
    assert_no_process(&marker);
}

#[test]
fn sigkill_to_numaplan_takes_the_ranks_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-sigkill-test-{}", std::process::id());
    let (mut child, pids) = start_background(dir.path(), &marker);
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < deadline, "ranks outlived numaplan");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn large_and_unterminated_output_is_relayed_whole() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0: 100 MB in 1,000,000 lines of 99 characters; rank 1: fragments without newlines.
    let job = r#"command: [sh, -c, 'if [ "$LOCAL_RANK" = 0 ]; then yes 012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678 | head -n 1000000; else printf "par"; sleep 0.2; printf "tial"; fi']
ranks_per_node: 2
gpus: none
"#;
    let out = exec(dir.path(), job, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut zero = 0;
    for l in stdout.lines() {
        match l {
            "[1] partial" => {}
            l if l.starts_with("[0] ") && l.len() == 4 + 99 => zero += 1,
            other => panic!("unexpected line: {other:.120}"),
        }
    }
    assert_eq!(zero, 1_000_000);
    assert_eq!(stdout.lines().filter(|l| *l == "[1] partial").count(), 1);
}

#[test]
fn log_dir_and_tee() {
    let dir = tempfile::tempdir().unwrap();
    let job = "command: [sh, -c, 'echo out $LOCAL_RANK; echo err $LOCAL_RANK >&2']\nranks_per_node: 2\ngpus: none\n";
    let out = exec(dir.path(), job, &["--log-dir", "logs"]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    for r in 0..2 {
        let read = |ext: &str| {
            std::fs::read_to_string(dir.path().join(format!("logs/rank-{r}.{ext}"))).unwrap()
        };
        assert_eq!(read("out"), format!("out {r}\n"));
        assert_eq!(read("err"), format!("err {r}\n"));
    }
    let out = exec(dir.path(), job, &["--log-dir", "tee-logs", "--tee"]);
    assert!(text(&out.stdout).contains("[1] out 1\n") && text(&out.stderr).contains("[0] err 0\n"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tee-logs/rank-1.out")).unwrap(),
        "out 1\n"
    );
}

#[test]
fn dry_run_and_multi_node_places() {
    let dir = tempfile::tempdir().unwrap();
    let job = "command: [python, train.py]\nnodes: 2\nranks_per_node: 2\ngpus: none\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_numaplan"));
        c.args(["exec", "job.yaml", "--dry-run"])
            .args(args)
            .current_dir(dir.path());
        for k in ["SLURM_NODEID", "SLURM_NNODES", "SLURM_JOB_NODELIST"] {
            c.env_remove(k);
        }
        c.envs(env.iter().copied());
        c.output().unwrap()
    };
    let flags = run(
        &[
            "--node-rank",
            "1",
            "--nodes",
            "2",
            "--master-addr",
            "head",
            "--",
            "--lr",
            "3e-4",
        ],
        &[],
    );
    assert!(flags.status.success(), "{}", text(&flags.stderr));
    let slurm = run(
        &["--", "--lr", "3e-4"],
        &[
            ("SLURM_NODEID", "1"),
            ("SLURM_NNODES", "2"),
            ("SLURM_JOB_NODELIST", "head,gpu[2-3]"),
        ],
    );
    assert_eq!(
        text(&flags.stdout),
        text(&slurm.stdout),
        "Slurm's variables give the same places"
    );
    let stdout = text(&flags.stdout);
    assert!(stdout.contains("GROUP_RANK=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 MASTER_ADDR=head MASTER_PORT=29500 NODE_RANK=1 NUMAPLAN_BOUND="), "{stdout}");
    // The mark: this plan's id (as `verify` computes it) and the local rank.
    // Then where the rank finds its plan again (`numaplan.check_binding()`): the file's path.
    assert!(stdout.contains(":1 NUMAPLAN_PLAN=/"), "{stdout}");
    assert!(
        stdout.contains(" RANK=3 WORLD_SIZE=4\n  argv python train.py --lr 3e-4\n"),
        "{stdout}"
    );
    // Without a place, a multi-node plan refuses to start.
    let none = run(&[], &[]);
    assert_eq!(none.status.code(), Some(1));
    insta::assert_snapshot!(text(&none.stderr), @r"
    error[E0410]: a plan for 2 nodes needs this node's place in the job
     = help: run one `numaplan exec` per node under Slurm (`srun --ntasks-per-node=1`), or pass `--node-rank K --nodes N --master-addr HOST`
    ");
}

/// Each way a node's place can be off has its own code: no place (E0410), another node count
/// than the plan's (E0424), a node rank past the count (E0425). A log directory that cannot be
/// made is E0426, and a syscall exec needs that fails (here: a file-descriptor limit too small
/// for the guard's pipe) is E0427, exit 3; none leaves anything running.
#[test]
fn each_start_problem_has_its_own_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [true]\ngpus: none\nranks_per_node: 1\nnodes: 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("one.yaml"),
        "command: [true]\ngpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    // `fds`: the file descriptors exec may open (`ulimit -n`).
    let run_with = |args: &[&str], fds: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n "$FDS"; exec "$@""#)
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_numaplan"))
            .arg("exec")
            .args(args)
            .env("FDS", fds)
            .env_remove("SLURM_NODEID")
            .env_remove("SLURM_NNODES")
            .env_remove("SLURM_JOB_NODELIST")
            .current_dir(dir.path())
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let run = |args: &[&str]| run_with(args, "1024");
    let place = ["--master-addr", "head"];
    let (code, err) = run(&[
        &["job.yaml", "--nodes", "3", "--node-rank", "0"][..],
        &place,
    ]
    .concat());
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("error[E0424]: the plan is for 2 node(s), but this job has 3"),
        "{err}"
    );
    let (code, err) = run(&[
        &["job.yaml", "--nodes", "2", "--node-rank", "2"][..],
        &place,
    ]
    .concat());
    assert_eq!(code, Some(1));
    assert!(
        err.starts_with("error[E0425]: node rank 2 is not below the node count 2"),
        "{err}"
    );
    let (code, err) = run(&["one.yaml", "--log-dir", "one.yaml/logs"]);
    assert_eq!(code, Some(3));
    assert!(
        err.starts_with("error[E0426]: cannot write rank logs to `one.yaml/logs`"),
        "{err}"
    );
    let (code, err) = run_with(&["one.yaml"], "5");
    assert_eq!(code, Some(3));
    assert!(err.starts_with("error[E0427]: cannot "), "{err}");
    assert!(err.contains("Too many open files"), "{err}");
}

#[test]
fn start_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Another machine's plan.
    std::fs::write(dir.path().join("job.yaml"), "command: [true]\n").unwrap();
    let topo = common::repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml", "--topology", topo.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("error[E0411]: this node ("), "{err}");
    assert!(
        err.contains("the plan expects 256; ") && err.contains("NUMA nodes, the plan expects 8; "),
        "{err}"
    );
    assert!(
        err.contains("it does not look like topology `nvidia-dgx-a100`"),
        "{err}"
    );
    // `--force` starts on a machine of another shape, but not on CPUs this process may not use.
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args([
            "exec",
            "job.yaml",
            "--force",
            "--topology",
            topo.to_str().unwrap(),
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot run the plan: rank 0 is planned on CPUs 48-55,176-183, and CPUs"),
        "{err}"
    );
    assert!(err.contains("do not exist here"), "{err}");
    assert!(!err.contains("--force"), "--force cannot help here: {err}");
    // A program that does not exist.
    let out = exec(
        dir.path(),
        "command: [/no/such/program]\nranks_per_node: 1\ngpus: none\n",
        &[],
    );
    // 127, as from `numaplan bind` and a shell: one meaning per status.
    assert_eq!(out.status.code(), Some(127));
    insta::assert_snapshot!(text(&out.stderr), @r"
    error[E0413]: cannot start rank 0 (`/no/such/program`): No such file or directory (os error 2)
     = note: no rank was left running
    ");
    // A program the kernel refuses only at exec (an executable file that is no program): the
    // child reports it after the fork, and the ranks started meanwhile are stopped. 40 ranks:
    // more than numaplan lets wait unconfirmed, so some are confirmed while others start.
    let fake = dir.path().join("fake");
    std::fs::write(&fake, [0u8, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = exec(
        dir.path(),
        "command: [./fake]\nranks_per_node: 40\ngpus: none\ncpu: {policy: node}\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(126), "found, but cannot be run");
    insta::assert_snapshot!(text(&out.stderr), @r"
    warning[W0212]: ranks 0-39 share their CPUs, 40 ranks to 2 cores: OMP_NUM_THREADS is 1 in each, their fair share rather than one per core (set `env: {OMP_NUM_THREADS: N}` to choose)
     --> job.yaml
    error[E0413]: cannot start rank 0 (`./fake`): Exec format error (os error 8)
     = note: no rank was left running
    ");
}

#[test]
fn verify_running_processes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-verify-{}", std::process::id());
    // Rank 1 widens its own affinity to every CPU after start, as a misbehaving runtime might.
    let job = format!(
        "command: [sh, -c, 'if [ \"$LOCAL_RANK\" = 1 ]; then taskset -a -p -c 0-1023 $$ >/dev/null 2>&1; fi; echo $$ > $OUT/pid-$LOCAL_RANK; sleep 30 & wait', {marker}]\nranks_per_node: 2\ngpus: none\nmemory: {{policy: bind}}\n"
    );
    std::fs::write(dir.path().join("job.yaml"), &job).unwrap();
    // The marker is in the supervisor's arguments too: `--match` must not take it for a rank.
    let mut child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml", "--", &marker])
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pids(dir.path(), 2);
    std::thread::sleep(Duration::from_millis(200));
    let run = numaplan_in(dir.path(), &["verify", "job.yaml", "--match", &marker]);
    let _ = child.kill();
    let _ = child.wait();
    let (table, memory) = run.stdout.split_once("memory (numa_maps):\n").unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "{}", run.stdout);
    // Where each rank's memory is: all of it on node 0, the one node of this machine.
    for (rank, line) in memory.lines().enumerate() {
        assert!(
            line.starts_with(&format!("  rank {rank}: "))
                && line.ends_with(", 100.0% on node 0 (planned)"),
            "{line}"
        );
    }
    assert!(rows[1].ends_with(" ok"), "{}", run.stdout);
    let plan = plan(dir.path());
    assert_ne!(
        plan["ranks"][0]["cpus"], plan["ranks"][1]["cpus"],
        "needs a machine with 2 CPUs or more"
    );
    assert!(rows[2].contains("MISMATCH: thread"), "{}", run.stdout);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error[E0416]: 1 rank(s) are not bound as planned"),
        "{}",
        run.stderr
    );
    let none = numaplan_in(
        dir.path(),
        &[
            "verify",
            "job.yaml",
            "--match",
            "no-such-process-anywhere-42",
        ],
    );
    assert_eq!(none.code, 1);
    assert!(
        none.stderr
            .starts_with("error[E0417]: no running process matches"),
        "{}",
        none.stderr
    );
}

/// Ranks that finish before `--verify` reads them are reported as exited, not as mismatches; a
/// rank that failed still fails the job with its own status.
#[test]
fn verify_reports_ranks_that_already_exited() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..5 {
        let out = exec(
            dir.path(),
            "command: [true]\ngpus: none\nranks_per_node: 2\n",
            &["--verify"],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(!err.contains("MISMATCH"), "{err}");
    }
    // Rank 0 exits 0 at once, rank 1 fails a moment later: the job ends with rank 1's status.
    let out = exec(
        dir.path(),
        "command: [bash, -c, 'sleep 0.$LOCAL_RANK; exit $((3 * LOCAL_RANK))']\ngpus: none\nranks_per_node: 2\n",
        &["--verify"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("error[E0414]: rank 1 exited with status 3"),
        "{err}"
    );
    assert!(!err.contains("MISMATCH"), "{err}");
    // A rank that exits at once with a failure: reported in the table and by supervision.
    let out = exec(
        dir.path(),
        "command: [bash, -c, 'exit 4']\ngpus: none\nranks_per_node: 1\n",
        &["--verify"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("error[E0414]: rank 0 exited with status 4"),
        "{err}"
    );
}

/// `--dry-run` of a plan the real run would refuse prints what it would run, says why not and
/// exits 1, like the real run.
#[test]
fn dry_run_of_a_refused_plan_fails_like_the_real_run() {
    let dir = tempfile::tempdir().unwrap();
    let topo = common::repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let out = exec(
        dir.path(),
        "command: [true]\n",
        &["--dry-run", "--topology", topo.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("rank 0: CPUs 48-55,176-183"));
    assert!(text(&out.stderr).starts_with("error[E0411]: this node ("));
    // A plan for this machine: exit 0.
    let out = exec(dir.path(), "command: [true]\ngpus: none\n", &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A plan whose CPUs exist but are outside this process's affinity (a real `taskset`): the
/// error says which and why, and does not suggest `--force`, which cannot help.
#[test]
fn cpus_outside_the_affinity_are_named_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return; // one CPU: nothing can be outside the affinity
    }
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [true]\ngpus: none\nranks_per_node: 1\ncpu: {allowed: \"1\"}\n",
    )
    .unwrap();
    let plan = numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let out = Command::new("taskset")
        .args([
            "-c",
            "0",
            env!("CARGO_BIN_EXE_numaplan"),
            "--quiet",
            "exec",
            "plan.yaml",
            "--force",
        ])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error[E0411]") && err.contains(
            "rank 0 is planned on CPUs 1, and CPUs 1 are outside this process's affinity (it may use CPUs 0: a taskset, cgroup cpuset, Slurm step or MPI binding narrows it)"
        ),
        "{err}"
    );
    assert!(!err.contains("--force"), "{err}");
}

/// `verify --match NAME` never takes its own ancestors for ranks: the shell that started it names
/// NAME on its command line and has `LOCAL_RANK` (it was once reported as rank 0, MISMATCH,
/// E0416); with no rank running, no process matches (E0417).
#[test]
fn verify_match_skips_its_own_ancestors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sleep, '1']\nranks_per_node: 2\ngpus: none\n",
    )
    .unwrap();
    let compiled = numaplan_in(dir.path(), &["-q", "compile", "job.yaml", "-o", "two.yaml"]);
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    let marker = format!("zzz-unique-{}", std::process::id());
    // A second command keeps the shell alive (bash runs a lone command in its own place).
    let line = format!(
        "{} verify two.yaml --match {marker}; exit $?",
        env!("CARGO_BIN_EXE_numaplan")
    );
    let out = Command::new("bash")
        .args(["-c", &line])
        .current_dir(dir.path())
        .env("LOCAL_RANK", "0")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error[E0417]: no running process matches `{marker}`"
        )),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
