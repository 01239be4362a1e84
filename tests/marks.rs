//! Which processes `verify` takes for a plan's ranks, on real processes of this machine: each
//! rank carries its plan's mark (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`), so two jobs on one node
//! are never mixed; `--repin` moves only the invoking user's marked ranks; `--pids` refuses
//! what is not a rank list; a process `verify` may not read says so. The Python package's
//! in-process bindings (`numaplan.bind()`, `spawn()`, Ray actors) are found by their mark files
//! in tests/python/test_marks.py.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn two_cpus() -> bool {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if online.trim() == "0" {
        eprintln!("skipped: needs a machine with 2 CPUs or more");
        return false;
    }
    true
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A job spec of two one-CPU ranks that sleep, their command lines holding `marker`, told
/// apart from another job's by `job` (in its environment, so in its plan).
fn sleeper(dir: &Path, file: &str, job: &str, marker: &str) {
    std::fs::write(
        dir.join(file),
        format!(
            "command: [sh, -c, 'sleep 60 & wait', {marker}]\nranks_per_node: 2\ngpus: none\n\
             env: {{JOB: {job}}}\n"
        ),
    )
    .unwrap();
}

fn exec(dir: &Path, file: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["-q", "exec", file])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `verify --format json` of `plan` once its ranks are all up (or 10 s have passed).
fn verify_when_up(dir: &Path, plan: &str, marker: &str) -> (i32, Value) {
    verify_group_when_up(dir, plan, marker, &[])
}

/// `verify_when_up` with `extra` arguments (`--group NAME`).
fn verify_group_when_up(dir: &Path, plan: &str, marker: &str, extra: &[&str]) -> (i32, Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let args = [
            &["verify", plan, "--match", marker, "--format", "json"][..],
            extra,
        ]
        .concat();
        let run = common::numaplan_in(dir, &args);
        let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let up = report["ranks"].as_array().is_some_and(|r| r.len() == 2);
        if up || Instant::now() > deadline {
            return (run.code, report);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(mut job: Child) {
    // SAFETY: kill has no memory preconditions; exec forwards TERM to its ranks.
    unsafe { libc::kill(job.id() as i32, libc::SIGTERM) };
    let _ = job.wait();
}

/// How a test's job is started: `numaplan exec`, or the `--emit bash` launcher.
#[derive(Clone, Copy, Debug)]
enum Launcher {
    Exec,
    Bash,
}

fn launch(dir: &Path, file: &str, how: Launcher) -> Child {
    match how {
        Launcher::Exec => exec(dir, file),
        Launcher::Bash => {
            let script = format!("{file}.sh");
            let compiled =
                common::numaplan_in(dir, &["compile", file, "--emit", "bash", "-o", &script]);
            assert_eq!(compiled.code, 0, "{}", compiled.stderr);
            Command::new(dir.join(&script))
                .current_dir(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        }
    }
}

/// Two jobs of two plans on one node, their ranks alike in all but their plan: `verify` of
/// each plan finds its own two ranks, once each, and skips the other job's as another plan's,
/// whether `exec` or the bash launcher started them. Before marks, each verify claimed all four
/// ("processes X, Y all claim local rank 0"); the bash launcher's ranks had no mark until
/// issue 42's stop.
#[test]
fn two_jobs_on_one_node_are_not_mixed() {
    if !two_cpus() {
        return;
    }
    for how in [Launcher::Exec, Launcher::Bash] {
        two_jobs(how);
    }
}

fn two_jobs(how: Launcher) {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-two-jobs-{}-{how:?}", std::process::id());
    sleeper(dir.path(), "a.yaml", "a", &marker);
    sleeper(dir.path(), "b.yaml", "b", &marker);
    let (a, b) = (
        launch(dir.path(), "a.yaml", how),
        launch(dir.path(), "b.yaml", how),
    );
    // Both jobs up, then each verified while the other runs.
    verify_when_up(dir.path(), "a.yaml", &marker);
    verify_when_up(dir.path(), "b.yaml", &marker);
    let (code_a, report_a) = verify_when_up(dir.path(), "a.yaml", &marker);
    let (code_b, report_b) = verify_when_up(dir.path(), "b.yaml", &marker);
    stop(a);
    stop(b);
    for (code, report) in [(code_a, &report_a), (code_b, &report_b)] {
        assert_eq!(code, 0, "{how:?}: {report}");
        assert_eq!(
            report["ranks"].as_array().unwrap().len(),
            2,
            "{how:?}: {report}"
        );
        let skipped = report["skipped"].as_array().unwrap();
        assert_eq!(skipped.len(), 2, "{report}");
        for s in skipped {
            assert!(
                s["why"].as_str().unwrap().contains("of another plan"),
                "{report}"
            );
        }
    }
    let pids = |r: &Value| -> Vec<u64> {
        r["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["pid"].as_u64().unwrap())
            .collect()
    };
    let (a_pids, b_pids) = (pids(&report_a), pids(&report_b));
    assert!(
        a_pids.iter().all(|p| !b_pids.contains(p)),
        "{a_pids:?} {b_pids:?}"
    );
}

/// A process of `marker` that claims local rank 0 through `env` and runs on every CPU (as a
/// rank whose thread left its CPUs), started as `user` (`None`: this one).
fn drifted(marker: &str, env: (&str, &str), user: Option<u32>) -> Child {
    let mut cmd = match user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={uid}"),
                &format!("--regid={uid}"),
                "--clear-groups",
                "--",
                "sh",
            ]);
            c
        }
        None => Command::new("sh"),
    };
    cmd.args(["-c", "sleep 60 & wait", marker])
        .env(env.0, env.1)
        .stdout(Stdio::null());
    cmd.spawn().unwrap()
}

fn affinity(pid: u32) -> String {
    common::cpus_allowed(&format!("/proc/{pid}/status"))
}

/// `verify --match --repin` puts back only the invoking user's processes that carry this
/// plan's mark: a rank found by a launcher's variable alone, and (run as root) another user's
/// marked rank, stay where they are, each line saying why, and the verify fails (their
/// threads are still outside). Named with `--pids`, the unmarked one is put back.
/// Before, `--repin` moved any process with `LOCAL_RANK` set, whoever's it was.
#[test]
fn repin_moves_only_the_users_marked_ranks() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-repin-{}", std::process::id());
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    common::numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    // Rank 1 runs nowhere: each verify fails for it too; the lines of rank 0 say the rest.
    let all = affinity(std::process::id());
    let repin = |extra: &[&str]| {
        let args = [
            &["verify", "plan.yaml", "--repin", "--count", "0"][..],
            extra,
        ]
        .concat();
        common::numaplan_in(dir.path(), &args)
    };

    let mut unmarked = drifted(&marker, ("LOCAL_RANK", "0"), None);
    std::thread::sleep(Duration::from_millis(100));
    let run = repin(&["--match", &marker]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("not put back: it carries no mark of this plan (it was found by LOCAL_RANK)"),
        "{}",
        run.stdout
    );
    assert_eq!(affinity(unmarked.id()), all, "left where it was");
    let run = repin(&["--pids", &unmarked.id().to_string()]);
    assert!(run.stdout.contains("; put back on 0"), "{}", run.stdout);
    assert_eq!(affinity(unmarked.id()), "0", "named, it is put back");
    let _ = unmarked.kill();
    let _ = unmarked.wait();

    if !is_root() {
        eprintln!("skipped: another user's rank needs root to start");
        return;
    }
    let mark = format!("{}:0", common::plan_id(dir.path(), "plan.yaml"));
    let mut theirs = drifted(&marker, ("NUMAPLAN_BOUND", &mark), Some(65534));
    std::thread::sleep(Duration::from_millis(100));
    let run = repin(&["--match", &marker]);
    let _ = theirs.kill();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("not put back: it is user 65534's process: name it with `--pids`"),
        "{}",
        run.stdout
    );
    let _ = theirs.wait();
}

/// `--pids`: a pid of no process is an error that says so (not "not bound as planned"), the
/// same pid twice is a usage error, and the plan's ranks that were not named are missing.
#[test]
fn pids_are_a_list_of_ranks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id().to_string();
    gone.wait().unwrap();
    let run = common::numaplan_in(dir.path(), &["verify", "job.yaml", "--pids", &gone_pid]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "error[E0440]: `--pids` names process {gone_pid}, which does not exist"
        )),
        "{}",
        run.stderr
    );
    let mut live = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = live.id().to_string();
    let twice = common::numaplan_in(dir.path(), &["verify", "job.yaml", "--pids", &pid, &pid]);
    let once = common::numaplan_in(dir.path(), &["verify", "job.yaml", "--pids", &pid]);
    let _ = live.kill();
    let _ = live.wait();
    assert_eq!(twice.code, 2, "{}", twice.stderr);
    assert!(
        twice.stderr.contains(&format!("names process {pid} twice")),
        "{}",
        twice.stderr
    );
    assert_eq!(once.code, 1, "{}", once.stderr);
    assert!(
        once.stdout
            .contains("MISMATCH: no process claims local rank 1"),
        "{}",
        once.stdout
    );
}

/// Another user's rank (run as root: a root process verified as user nobody): its memory
/// cannot be read, and the row says permission denied and which file, unknown (E0450, exit 3),
/// not a mismatch; `--match` says why it skipped it. Before, "numa_maps is empty (the rank has
/// exited)" and "it says no local rank", then a mismatch (exit 1) of what nothing was known of.
#[test]
fn an_unreadable_rank_says_permission_denied() {
    if !is_root() {
        eprintln!("skipped: needs root, to verify a root process as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-unreadable-{}", std::process::id());
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    // nobody runs a copy of numaplan in a directory it may read.
    std::fs::copy(env!("CARGO_BIN_EXE_numaplan"), dir.path().join("numaplan")).unwrap();
    let open = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(dir.path(), open).unwrap();
    let mut rank = drifted(&marker, ("LOCAL_RANK", "0"), None);
    std::thread::sleep(Duration::from_millis(100));
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "./numaplan",
                "verify",
                "job.yaml",
            ])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let pids = as_nobody(&["--pids", &rank.id().to_string()]);
    let matched = as_nobody(&["--match", &marker]);
    let _ = rank.kill();
    let _ = rank.wait();
    let stdout = String::from_utf8_lossy(&pids.stdout);
    assert!(
        stdout.contains(&format!(
            "UNKNOWN: permission denied reading /proc/{}/numa_maps: another user's process",
            rank.id()
        )),
        "{stdout}"
    );
    // Nothing known of its memory, nothing else wrong: neither ok (0) nor a mismatch (1).
    assert_eq!(pids.status.code(), Some(3), "{stdout}");
    assert!(String::from_utf8_lossy(&pids.stderr).contains("error[E0450]"));
    let stdout = String::from_utf8_lossy(&matched.stdout);
    let stderr = String::from_utf8_lossy(&matched.stderr);
    assert!(stderr.contains("error[E0417]"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "/proc/{}/environ cannot be read (permission denied)",
            rank.id()
        )),
        "{stdout}{stderr}"
    );
}

/// Two groups of one plan on one node (`groups:`, alike but for their names), each started by
/// `exec --group`: every rank carries its group's mark, so `verify --group` of each finds its
/// own two ranks and skips the other group's as another plan's.
#[test]
fn two_groups_of_one_plan_are_not_mixed() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("numaplan-two-groups-{}", std::process::id());
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "command: [sh, -c, 'sleep 60 & wait', {marker}]\nranks_per_node: 2\ngpus: none\n\
             groups: [{{name: a}}, {{name: b}}]\n"
        ),
    )
    .unwrap();
    common::numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "-q", "-o", "plan.yaml"],
    )
    .ok();
    let start = |group: &str| {
        Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(["-q", "exec", "plan.yaml", "--group", group])
            .args(["--node-rank", "0", "--master-addr", "127.0.0.1"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start("a"), start("b"));
    verify_group_when_up(dir.path(), "plan.yaml", &marker, &["--group", "a"]);
    verify_group_when_up(dir.path(), "plan.yaml", &marker, &["--group", "b"]);
    let reports: Vec<(i32, Value)> = ["a", "b"]
        .iter()
        .map(|g| verify_group_when_up(dir.path(), "plan.yaml", &marker, &["--group", g]))
        .collect();
    stop(a);
    stop(b);
    for (code, report) in &reports {
        assert_eq!(*code, 0, "{report}");
        assert_eq!(report["ranks"].as_array().unwrap().len(), 2, "{report}");
        let skipped = report["skipped"].as_array().unwrap();
        assert_eq!(skipped.len(), 2, "{report}");
        assert!(
            skipped
                .iter()
                .all(|s| s["why"].as_str().unwrap().contains("of another plan")),
            "{report}"
        );
    }
}
