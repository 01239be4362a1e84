//! `verify --watch`, `--repin` and `exec --watch` on real processes of this machine: a rank
//! whose proxy thread re-pins itself to every CPU a second after start (tests/watch/drift.c, as
//! NCCL's proxy does) is reported within two intervals and, with `--repin`, put back (read back
//! from /proc); a thread pinned inside its rank (an OpenMP place) is not reported; a rank that
//! exits during the watch is a line, not an error. The 4-node guest (tests/vm.rs) does the same
//! with more CPUs per rank, and checks where memory is.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

const INTERVAL: f64 = 0.3;

/// Two ranks of the drift program started by `numaplan exec`, one CPU each; rank 1 exits after
/// `short` seconds, rank 0 after `long`.
struct Job {
    dir: tempfile::TempDir,
    exec: Child,
}

/// A scratch directory with the drift program built in it and `job` as its job.yaml.
fn drift_job(job: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::cc(
        &["-O1", "-pthread"],
        "tests/watch/drift.c",
        &dir.path().join("drift"),
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    dir
}

impl Job {
    fn start(long: f64, short: f64) -> Job {
        Job::with(&format!(
            "command: [sh, -c, 'if [ \"$LOCAL_RANK\" = 1 ]; then export DRIFT_SECONDS={short}; fi; exec ./drift']\n\
             ranks_per_node: 2\ngpus: none\nmemory: {{policy: bind}}\nenv: {{DRIFT_SECONDS: '{long}'}}\n"
        ))
    }

    /// `numaplan exec` of `job` (two ranks of drift), once both ranks are ready.
    fn with(job: &str) -> Job {
        let dir = drift_job(job);
        let exec = Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(["exec", "job.yaml"])
            .current_dir(dir.path())
            .env("DRIFT_DIR", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let job = Job { dir, exec };
        job.wait_for("ready-0");
        job.wait_for("ready-1");
        job
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn wait_for(&self, name: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(self.path(name)) {
                return text;
            }
            assert!(Instant::now() < deadline, "no {name}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `(pid, proxy tid, omp tid)` of a rank.
    fn ids(&self, rank: u32) -> (u32, u32, u32) {
        let text = self.wait_for(&format!("ready-{rank}"));
        let ids: Vec<u32> = text
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        (ids[0], ids[1], ids[2])
    }

    fn planned_cpus(&self, rank: usize) -> String {
        let plan = common::numaplan_in(
            self.dir.path(),
            &["compile", "job.yaml", "--format", "json"],
        );
        let plan: Value = serde_json::from_str(&plan.ok()).unwrap();
        plan["ranks"][rank]["cpus"].as_str().unwrap().to_string()
    }

    /// `verify` with `args`, its stdout read line by line as it comes: (line, ms since the
    /// epoch when it arrived), and the exit code.
    fn verify(&self, args: &[&str]) -> (Vec<(String, u128)>, Option<i32>, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(["verify", "job.yaml", "--pids"])
            .args([self.ids(0).0.to_string(), self.ids(1).0.to_string()])
            .args(args)
            .current_dir(self.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map(|l| (l.unwrap(), now_ms()))
            .collect();
        let out = child.wait_with_output().unwrap();
        (
            lines,
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// When the rank's proxy left its CPUs (ms since the epoch).
    fn left_at(&self, rank: u32) -> u128 {
        self.wait_for(&format!("left-{rank}"))
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.exec.kill();
        let _ = self.exec.wait();
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn cpus_allowed(pid: u32, tid: u32) -> String {
    common::cpus_allowed(&format!("/proc/{pid}/task/{tid}/status"))
}

fn all_cpus() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        .to_string()
}

fn needs_two_cpus() -> bool {
    if all_cpus() == "0" {
        eprintln!("skipped: needs a machine with 2 CPUs or more");
        return false;
    }
    true
}

/// Without `--repin`: each proxy that leaves is one line within two intervals (not one per
/// reading), the pinned OpenMP-style thread none, the rank that exits a line; the watch ends
/// when both have exited, and exits 1 (E0416) because the threads stayed outside.
#[test]
fn watch_reports_a_thread_that_leaves_its_cpus() {
    if !needs_two_cpus() {
        return;
    }
    let job = Job::start(3.0, 2.0);
    let interval = INTERVAL.to_string();
    let (lines, code, stderr) = job.verify(&["--watch", "--interval", &interval]);
    let text: Vec<&str> = lines.iter().map(|(l, _)| l.as_str()).collect();
    let all = text.join("\n");
    assert_eq!(code, Some(1), "{all}\n{stderr}");
    assert!(
        stderr.starts_with("error[E0416]: 2 rank(s) are not bound as planned"),
        "{stderr}"
    );
    // The first reading, before the proxies leave: both ranks as planned.
    assert_eq!(
        text.iter().filter(|l| l.ends_with(" ok")).count(),
        2,
        "{all}"
    );
    for rank in 0..2 {
        let (pid, proxy, omp) = job.ids(rank);
        let planned = job.planned_cpus(rank as usize);
        let want = format!(
            "rank {rank} thread {proxy} (nccl-proxy): CPUs {}, planned {planned}",
            all_cpus()
        );
        let found: Vec<&(String, u128)> =
            lines.iter().filter(|(l, _)| l.ends_with(&want)).collect();
        assert_eq!(found.len(), 1, "one line for `{want}`:\n{all}");
        let late = found[0].1.saturating_sub(job.left_at(rank));
        assert!(
            late <= (2.0 * INTERVAL * 1000.0) as u128 + 200,
            "reported {late} ms after it left:\n{all}"
        );
        assert!(
            !all.contains(&format!("thread {omp} ")),
            "the pinned thread: {all}"
        );
        assert!(
            text.iter()
                .any(|l| l.ends_with(&format!("rank {rank} (pid {pid}) exited"))),
            "{all}"
        );
    }
    let summary = text.last().unwrap();
    assert!(
        summary.ends_with("2 threads left their rank's CPUs, 2 ranks exited"),
        "{summary}"
    );
}

/// `--repin` puts each proxy back on its rank's CPUs (read back from /proc while the rank
/// still runs), says so in the JSON Lines it writes, and the watch then ends in success.
#[test]
fn repin_puts_a_thread_back_on_its_ranks_cpus() {
    if !needs_two_cpus() {
        return;
    }
    let job = Job::start(4.0, 4.0);
    let interval = INTERVAL.to_string();
    let pids = [job.ids(0).0.to_string(), job.ids(1).0.to_string()];
    let mut child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args([
            "verify", "job.yaml", "--pids", &pids[0], &pids[1], "--watch", "--repin",
        ])
        .args(["--interval", &interval, "--format", "json"])
        .current_dir(job.dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let report: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(report["numaplan_verify"], 2);
    assert_eq!(report["ok"], true, "{report}");
    let mut repinned = 0;
    let mut events = Vec::new();
    for line in lines {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(event["numaplan_watch"], 2);
        if event["event"] == "thread-left" {
            let rank = event["rank"].as_u64().unwrap() as u32;
            let (pid, proxy, _) = job.ids(rank);
            assert_eq!(event["tid"], proxy, "{event}");
            assert_eq!(event["repinned"], true, "{event}");
            let planned = job.planned_cpus(rank as usize);
            assert_eq!(event["planned_cpus"], planned.as_str());
            // The rank runs on for seconds: read the thread's CPUs back now.
            assert_eq!(cpus_allowed(pid, proxy), planned, "{event}");
            assert!(
                event["text"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("; put back on {planned}")),
                "{event}"
            );
            repinned += 1;
        }
        events.push(event);
    }
    let status = child.wait().unwrap();
    assert_eq!(repinned, 2, "{events:?}");
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary");
    assert_eq!(summary["counts"]["repinned"], 2, "{summary}");
    assert_eq!(summary["counts"]["thread-left"], 2, "{summary}");
    assert_eq!(summary["counts"]["troubled"], 0, "{summary}");
    // A thread put back is not a lasting problem: the watch succeeds.
    assert!(status.success(), "{events:?}");
    // Every line has what schemas/watch.schema.json requires of every line and of its event.
    let schema: Value = serde_json::from_str(&common::numaplan(&["schema", "watch"]).ok()).unwrap();
    for event in &events {
        let variant = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["properties"]["event"]["const"] == event["event"])
            .unwrap_or_else(|| panic!("no schema for {event}"));
        let required = schema["required"].as_array().unwrap().iter();
        for key in required.chain(variant["required"].as_array().unwrap()) {
            assert!(
                event.get(key.as_str().unwrap()).is_some(),
                "{key} in {event}"
            );
        }
    }
}

/// `exec --repin` watches the ranks it started for the whole run: the proxies are put back,
/// each exit is a line, and the summary comes at the end; the job's own status is kept.
#[test]
fn exec_repin_watches_the_whole_run() {
    if !needs_two_cpus() {
        return;
    }
    let dir =
        drift_job("command: [./drift]\nranks_per_node: 2\ngpus: none\nenv: {DRIFT_SECONDS: '2'}\n");
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml", "--repin", "--interval", "0.2"])
        .current_dir(dir.path())
        .env("DRIFT_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // --repin implies --verify: the table first.
    assert!(stderr.starts_with("local rank  pid"), "{stderr}");
    for rank in 0..2 {
        let ids = std::fs::read_to_string(dir.path().join(format!("ready-{rank}"))).unwrap();
        let proxy = ids.split_whitespace().nth(1).unwrap();
        assert!(
            stderr.lines().any(|l| l.starts_with("numaplan: +")
                && l.contains(&format!("rank {rank} thread {proxy} (nccl-proxy): CPUs"))
                && l.contains("; put back on")),
            "{stderr}"
        );
    }
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("numaplan: watch: ")
            && stderr
                .trim_end()
                .ends_with("2 threads left their rank's CPUs (2 put back), 2 ranks exited"),
        "{stderr}"
    );
}

/// `verify --watch | head -1`: once its reader has gone, the watch ends at once with status 0,
/// though its rank runs on for 25 seconds and nothing changes (so it never writes again).
#[test]
fn a_closed_stdout_ends_the_watch_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\ncpu: {policy: node}\n",
    )
    .unwrap();
    let mut rank = Command::new("sleep").arg("25").spawn().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#""$NUMAPLAN" verify job.yaml --pids "$RANK" --watch --interval 0.2 | head -1; echo "status ${PIPESTATUS[0]}""#)
        .env("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan"))
        .env("RANK", rank.id().to_string())
        .current_dir(dir.path())
        .output()
        .unwrap();
    let took = started.elapsed();
    let _ = rank.kill();
    let _ = rank.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("local rank  pid"), "{stdout}");
    assert!(
        stdout.ends_with("status 0\n"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}

/// A rank that exits at once (before the first reading of the watch, or right after it) is a
/// line or an exited row, never an error of the watch itself.
#[test]
fn a_rank_that_exits_at_once_is_a_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'sleep 0.$((LOCAL_RANK * 5))']\nranks_per_node: 1\ngpus: none\n",
    )
    .unwrap();
    let out = common::numaplan_in(
        dir.path(),
        &["exec", "job.yaml", "--watch", "--interval", "0.1"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("exited") && out.stderr.contains("numaplan: watch: "),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("MISMATCH"), "{}", out.stderr);
}

/// `--counters` counts node loads where the machine offers the events; where it does not (this
/// VM, containers), it says so once, reports pages only, and exits as the same check without.
#[test]
fn counters_say_when_the_machine_has_none() {
    let job = Job::start(3.0, 3.0);
    let (plain, plain_code, _) = job.verify(&[]);
    let (counted, code, stderr) = job.verify(&["--counters", "0.2"]);
    let text: Vec<&str> = counted.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(code, plain_code, "{text:?}\n{stderr}");
    assert_eq!(
        &text[..plain.len()],
        plain.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>()
    );
    let extra = &text[plain.len()..];
    match extra.first() {
        Some(line) if line.starts_with("counters: unavailable: ") => {
            assert_eq!(extra.len(), 1, "said once: {extra:?}");
            assert!(line.ends_with("; pages only"), "{line}");
        }
        Some(line) if line.starts_with("counters over 0.2 s") => {
            assert_eq!(extra.len(), 3, "{extra:?}");
            for (rank, l) in extra[1..].iter().enumerate() {
                assert!(l.starts_with(&format!("  rank {rank}: ")), "{l}");
            }
        }
        _ => panic!("no counters line: {text:?}"),
    }
}

/// Out-of-range values are refused before anything is read.
#[test]
fn watch_options_are_checked() {
    for (args, why) in [
        (&["--min-local", "150"][..], "must be between 0 and 100"),
        (&["--watch", "--interval", "0"][..], "must be more than 0"),
        (
            &["--counters", "soon"][..],
            "`soon` is not a number of seconds",
        ),
        (&["--count", "3"][..], "--watch"),
        // One rule for every watch option: given alone, an error, never silently ignored.
        (&["--interval", "2"][..], "--watch"),
    ] {
        let mut all = vec!["verify", "examples/dgx-a100.yaml", "--pids", "1"];
        all.extend_from_slice(args);
        let run = common::numaplan(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{args:?}: {}", run.stderr);
    }
}

/// `verify --match` under the real MPICH: `mpiexec.mpich` and its proxy hold the marker in their
/// command lines too, but say no local rank, so they are skipped with a reason and the two ranks
/// (bound by `numaplan bind`, which marks them with NUMAPLAN_BOUND) are found, each once.
#[test]
fn match_skips_the_launcher_under_mpich() {
    if !needs_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\nmemory: {policy: bind}\n",
    )
    .unwrap();
    common::numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let marker = format!("numaplan-match-{}", std::process::id());
    let mut mpi = Command::new("mpiexec.mpich")
        .args([
            "-bind-to",
            "none",
            "-n",
            "2",
            env!("CARGO_BIN_EXE_numaplan"),
            "bind",
            "plan.yaml",
        ])
        .args([
            "--",
            "sh",
            "-c",
            "touch $OUT/up-$MPI_LOCALRANKID; sleep 30 & wait",
        ])
        .arg(&marker)
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .env_remove("LOCAL_RANK")
        .env_remove("SLURM_LOCALID")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(dir.path().join("up-0").exists() && dir.path().join("up-1").exists()) {
        assert!(Instant::now() < deadline, "MPICH did not start both ranks");
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = common::numaplan_in(dir.path(), &["verify", "plan.yaml", "--match", &marker]);
    let json = common::numaplan_in(
        dir.path(),
        &[
            "verify",
            "plan.yaml",
            "--match",
            &marker,
            "--format",
            "json",
        ],
    );
    let _ = Command::new("pkill").args(["-f", &marker]).status();
    let _ = mpi.wait();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let skipped: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("skipped process "))
        .collect();
    assert!(
        skipped.iter().any(|l| l.contains("(mpiexec.mpich -bind-to none")
            && l.ends_with("it says no local rank (no mark of numaplan's, no launcher variable): a launcher or a helper")),
        "{}",
        run.stdout
    );
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    let ranks: Vec<u64> = report["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1], "{report}");
    assert_eq!(report["missing"], serde_json::json!([]));
    assert!(
        !report["skipped"].as_array().unwrap().is_empty(),
        "{report}"
    );
}

/// Two processes that both claim local rank 0 are flagged, and the rank nobody claims is
/// missing: both are mismatches.
#[test]
fn match_flags_duplicate_and_missing_ranks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    let marker = format!("numaplan-twice-{}", std::process::id());
    let start = || {
        Command::new("sh")
            .args(["-c", "sleep 30 & wait", &marker])
            .env("LOCAL_RANK", "0")
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (start(), start());
    std::thread::sleep(Duration::from_millis(100));
    let run = common::numaplan_in(dir.path(), &["verify", "job.yaml", "--match", &marker]);
    for c in [&mut a, &mut b] {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let claim = format!(
        "processes {}, {} all claim local rank 0",
        a.id().min(b.id()),
        a.id().max(b.id())
    );
    assert_eq!(run.stdout.matches(&claim).count(), 2, "{}", run.stdout);
    let missing = run
        .stdout
        .lines()
        .find(|l| l.starts_with("1 "))
        .unwrap_or_default();
    assert!(
        missing.ends_with("  MISMATCH: no process claims local rank 1")
            && missing.split_whitespace().filter(|w| *w == "-").count() == 6,
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .starts_with("error[E0416]: 3 rank(s) are not bound as planned"),
        "{}",
        run.stderr
    );
}

/// `verify --format json` reports each problem as an object a program can read without
/// parsing English: its `kind` and fields beside the text line. An unbound process claiming
/// rank 1 runs outside its CPUs and without the planned `bind` policy.
#[test]
fn verify_json_reports_problems_by_kind() {
    if !needs_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\nmemory: {policy: bind}\n",
    )
    .unwrap();
    let marker = format!("numaplan-kinds-{}", std::process::id());
    let mut rank = Command::new("sh")
        .args(["-c", "sleep 30 & wait", &marker])
        .env("LOCAL_RANK", "1")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let run = common::numaplan_in(
        dir.path(),
        &["verify", "job.yaml", "--match", &marker, "--format", "json"],
    );
    let _ = rank.kill();
    let _ = rank.wait();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["numaplan_verify"], 2);
    let row = &report["ranks"][0];
    assert_eq!(row["pid"], rank.id(), "{report}");
    let problems = row["problems"].as_array().unwrap();
    let of = |kind: &str| {
        problems
            .iter()
            .find(|p| p["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {report}"))
    };
    let outside = of("thread-outside");
    assert_eq!(outside["tid"], rank.id());
    assert_eq!(outside["thread"], "sh");
    let planned: numaplan::cpuset::CpuSet = row["planned_cpus"].as_str().unwrap().parse().unwrap();
    let all: numaplan::cpuset::CpuSet = all_cpus().parse().unwrap();
    assert_eq!(
        outside["outside_cpus"],
        all.difference(&planned).to_string()
    );
    let memory = of("memory-policy");
    assert_eq!(
        memory["actual"],
        serde_json::json!({"mode": "default", "nodes": []})
    );
    assert_eq!(memory["planned"]["mode"], "bind");
    assert_eq!(memory["planned"]["nodes"], serde_json::json!([0]));
    // Beside the fields, the line the text output prints.
    assert_eq!(
        memory["text"], "memory policy is default, planned bind:0",
        "{report}"
    );
}

/// `--repin` alone (no `--watch`) puts back what one reading finds and, everything put back,
/// succeeds; the next `verify` finds the rank as planned.
#[test]
fn repin_once_corrects_and_succeeds() {
    if !needs_two_cpus() {
        return;
    }
    let job = Job::with(
        "command: [./drift]\nranks_per_node: 2\ngpus: none\nenv: {DRIFT_SECONDS: '10', DRIFT_LEAVE_MS: '0'}\n",
    );
    job.wait_for("left-0");
    job.wait_for("left-1");
    let verify = |extra: &[&str]| {
        let (lines, code, stderr) = job.verify(extra);
        let stdout: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
        common::Run {
            code: code.unwrap_or(-1),
            stdout,
            stderr,
        }
    };
    let before = verify(&[]);
    let fixed = verify(&["--repin", "--count", "0"]);
    let after = verify(&[]);
    assert_eq!(before.code, 1, "the proxies are outside: {}", before.stdout);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert_eq!(
        fixed.stdout.matches("; put back on ").count(),
        2,
        "{}",
        fixed.stdout
    );
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
}

/// A rank that re-pins itself (as NCCL and OpenMP runtimes do) never stops a healthy job,
/// whenever it does it: at once (before the watch's first reading, racing it) or a second
/// later. `exec` checks the binding it applied, in the rank before its program starts; what
/// the program does afterwards is a line of the watch (put back under `--repin`), and the job's
/// status is its ranks'. 50 runs of each program, ten at a time, under `--verify`, `--watch`
/// and `--repin` in turn: the same outcome every time.
#[test]
fn a_rank_that_repins_itself_never_stops_the_job() {
    if !needs_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, delay) in [("at-once", "0"), ("later", "1")] {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            format!(
                "command: [sh, -c, 'sleep {delay}; taskset -pc 0,1 $$ >/dev/null; sleep 0.3; echo done $RANK']\nranks_per_node: 2\ngpus: none\n"
            ),
        )
        .unwrap();
    }
    let flags = ["--verify", "--watch", "--repin"];
    for name in ["at-once", "later"] {
        for batch in 0..5 {
            let runs: Vec<_> = (0..10)
                .map(|i| {
                    let flag = flags[(batch * 10 + i) % 3];
                    let interval: &[&str] = match flag {
                        "--verify" => &[],
                        _ => &["--interval", "0.1"],
                    };
                    let child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
                        .args(["-q", "exec", &format!("{name}.yaml"), flag])
                        .args(interval)
                        .current_dir(dir.path())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap();
                    (flag, child)
                })
                .collect();
            for (flag, child) in runs {
                let out = child.wait_with_output().unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(0), "{name} {flag}: {stderr}");
                assert_eq!(stdout.matches("done").count(), 2, "{name} {flag}: {stdout}");
                assert!(!stderr.contains("error"), "{name} {flag}: {stderr}");
            }
        }
    }
}

/// `--stop-on-drift` is the one way a drift stops a job: a thread that stays outside its
/// rank's CPUs stops every rank with E0439, saying so; put back by `--repin`, it stops nothing.
#[test]
fn only_stop_on_drift_stops_a_drifting_job() {
    if !needs_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'taskset -pc 0,1 $$ >/dev/null; sleep 5; echo done $RANK']\nranks_per_node: 2\ngpus: none\n",
    )
    .unwrap();
    let run = |flags: &[&str]| {
        let started = Instant::now();
        let out = common::numaplan_in(
            dir.path(),
            &[&["-q", "exec", "job.yaml"][..], flags].concat(),
        );
        (out, started.elapsed())
    };
    let (stopped, took) = run(&["--watch", "--interval", "0.1", "--stop-on-drift"]);
    assert_eq!(stopped.code, 1, "{}", stopped.stderr);
    assert!(
        stopped.stderr.contains("error[E0439]: rank "),
        "{}",
        stopped.stderr
    );
    assert!(
        stopped
            .stderr
            .contains("the ranks were stopped (`--stop-on-drift`)"),
        "{}",
        stopped.stderr
    );
    assert!(!stopped.stdout.contains("done"), "{}", stopped.stdout);
    assert!(took < Duration::from_secs(4), "{took:?}");
    let (repinned, _) = run(&["--repin", "--interval", "0.1", "--stop-on-drift"]);
    assert_eq!(repinned.code, 0, "{}", repinned.stderr);
    assert_eq!(repinned.stdout.matches("done").count(), 2);
    // Without a watch, the flag has nothing to stop on: a usage error.
    let (alone, _) = run(&["--stop-on-drift"]);
    assert_eq!(alone.code, 2, "{}", alone.stderr);
    assert!(alone.stderr.contains("nothing watches"), "{}", alone.stderr);
}

/// `exec --watch --format json` writes JSON Lines on stdout (the verification, then the watch's
/// objects and its summary), with the ranks' output in `--log-dir`, and keeps the job's status;
/// without `--log-dir` the ranks' output would be mixed in, a usage error.
#[test]
fn exec_writes_the_watch_as_json_lines() {
    if !needs_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'taskset -pc 0,1 $$ >/dev/null; sleep 1; echo done $RANK']\nranks_per_node: 2\ngpus: none\n",
    )
    .unwrap();
    let args = ["-q", "exec", "job.yaml", "--repin", "--interval", "0.1"];
    let run = common::numaplan_in(
        dir.path(),
        &[&args[..], &["--format", "json", "--log-dir", "logs"]].concat(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let objects: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects[0]["numaplan_verify"], 2, "{}", run.stdout);
    assert_eq!(objects[0]["ok"], true, "{}", run.stdout);
    let events: Vec<&str> = objects[1..]
        .iter()
        .map(|o| o["event"].as_str().unwrap())
        .collect();
    assert_eq!(events.iter().filter(|e| **e == "thread-left").count(), 2);
    assert_eq!(events.last(), Some(&"summary"), "{events:?}");
    for rank in 0..2 {
        let out = std::fs::read_to_string(dir.path().join(format!("logs/rank-{rank}.out")));
        assert_eq!(out.unwrap(), format!("done {rank}\n"));
    }
    let mixed = common::numaplan_in(dir.path(), &[&args[..], &["--format", "json"]].concat());
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(mixed.stderr.contains("--log-dir"), "{}", mixed.stderr);
}

/// `exec --format json` refused says only what is missing: with `--watch` and no `--log-dir`,
/// the log directory (it once also said "add --verify or --watch"); with `--log-dir` and no
/// check, the check; with `--tee`, to leave it out. Nothing starts.
#[test]
fn exec_format_json_says_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let help = |extra: &[&str]| {
        let args = [
            &["-q", "exec", "--nproc-per-node", "2", "--format", "json"][..],
            extra,
            &["--", "touch", "started"],
        ]
        .concat();
        let run = common::numaplan_in(dir.path(), &args);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            !dir.path().join("started").exists(),
            "{extra:?} started a rank"
        );
        run.stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix("= help: "))
            .unwrap_or_else(|| panic!("{}", run.stderr))
            .to_string()
    };
    assert_eq!(
        help(&["--watch"]),
        "send the ranks' output to files with `--log-dir DIR`; or use `--dry-run --format json`"
    );
    assert_eq!(
        help(&["--log-dir", "logs"]),
        "add `--verify` or `--watch`; or use `--dry-run --format json`"
    );
    assert_eq!(
        help(&["--verify", "--log-dir", "logs", "--tee"]),
        "leave out `--tee`, which copies the ranks' output there; or use `--dry-run --format json`"
    );
    assert_eq!(
        help(&[]),
        "add `--verify` or `--watch`, and send the ranks' output to files with `--log-dir DIR`; \
         or use `--dry-run --format json`"
    );
}
