//! Runs the real `numaplan` binary, as a user would.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod hwloc_export;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn numaplan(args: &[&str]) -> Run {
    numaplan_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// Runs numaplan with `dir` as the working directory.
pub fn numaplan_in(dir: &Path, args: &[&str]) -> Run {
    numaplan_env(dir, &[], args)
}

/// Runs numaplan in `dir` with extra environment variables.
pub fn numaplan_env(dir: &Path, envs: &[(&str, &Path)], args: &[&str]) -> Run {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(envs.iter().copied())
        .output()
        .expect("run numaplan");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(self) -> String {
        assert_eq!(self.code, 0, "numaplan failed:\n{}", self.stderr);
        self.stdout
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every fixture in examples/topologies, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/topologies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

/// Arguments and environment values that break naive shell quoting.
pub const NASTY: &[&str] = &[
    "a b",
    "it's",
    "\"q\"",
    "$(touch pwned)",
    "`touch pwned`",
    "line1\nline2",
    "*",
    "naïve → ünïcode",
    "",
];

/// A job spec (plus `extra` YAML lines) whose single rank writes its arguments NUL-separated to
/// `$OUT/args-<rank>` and the variable `NASTY` (all of `NASTY` joined by `|`) to `$OUT/env-<rank>`.
pub fn quoting_job(extra: &str) -> String {
    let args: Vec<String> = NASTY
        .iter()
        .map(|s| serde_json::to_string(s).unwrap())
        .collect();
    format!(
        "command: [bash, -c, 'printf \"%s\\0\" \"$@\" > \"$OUT/args-$LOCAL_RANK\"; printf \"%s\" \"$NASTY\" > \"$OUT/env-$LOCAL_RANK\"', probe, {}]\ngpus: none\nranks_per_node: 1\nenv: {{NASTY: {}}}\n{extra}",
        args.join(", "),
        serde_json::to_string(&NASTY.join("|")).unwrap()
    )
}

/// What `printf '%s\0' ARGS...` writes.
pub fn nul_joined<'a>(args: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut out = Vec::new();
    for a in args {
        out.extend_from_slice(a.as_bytes());
        out.push(0);
    }
    out
}

/// A path relative to the repository, as tests pass them to numaplan.
/// The topology a case file's first line names (`# topology: <name>`): a path from the
/// repository's root, or a name looked up in tests/cases/topologies, then examples/topologies,
/// then (hwloc XML) tests/data/mpibind.
pub fn case_topology(case: &Path) -> String {
    let text = std::fs::read_to_string(case).unwrap();
    let name = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# topology: "))
        .unwrap_or_else(|| panic!("{} must start with `# topology: <name>`", case.display()))
        .trim()
        .to_string();
    if name.contains('/') {
        return name;
    }
    for (dir, ext) in [
        ("tests/cases/topologies", "yaml"),
        ("examples/topologies", "yaml"),
        ("tests/data/mpibind", "xml"),
    ] {
        let p = format!("{dir}/{name}.{ext}");
        if repo().join(&p).exists() {
            return p;
        }
    }
    panic!("no topology `{name}` for {}", case.display());
}

pub fn rel(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

/// Writes `job` as `dir/job.yaml`, emits it for this machine (`--topology discover --emit KIND
/// -o output`) and returns the plan of the same compile as JSON.
pub fn emit_here(dir: &Path, job: &str, kind: &str, output: &str) -> serde_json::Value {
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let args = ["compile", "job.yaml", "--topology", "discover"];
    let run = numaplan_in(dir, &[&args[..], &["--emit", kind, "-o", output]].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = numaplan_in(dir, &[&args[..], &["--format", "json"]].concat()).ok();
    serde_json::from_str(&plan).unwrap()
}

/// The plan id `bind` marks local rank 0 of `plan` (a plan or a job spec) with: what every
/// rank's `NUMAPLAN_BOUND` starts with.
pub fn plan_id(dir: &Path, plan: &str) -> String {
    let args = [
        "bind",
        plan,
        "--local-rank",
        "0",
        "--dry-run",
        "--format",
        "json",
    ];
    let report: serde_json::Value = serde_json::from_str(&numaplan_in(dir, &args).ok()).unwrap();
    report["plan_id"].as_str().unwrap().to_string()
}

/// A batch job that has ended.
pub struct Ended {
    pub id: String,
    /// `COMPLETED`, `FAILED`, ...
    pub state: String,
    /// The hosts of the allocation, in Slurm's order (node rank 0 first).
    pub hosts: Vec<String>,
    /// The job's exit status and signal, as `scontrol` shows them (`1:0`).
    pub exit_code: String,
}

/// Submits `file` with `envs` set for sbatch, scontrol and (sbatch exports them) the job, and
/// waits (bounded) until the job has ended. A heterogeneous job (one record per component) has
/// ended when every component has: its state is the first that is not COMPLETED (else
/// COMPLETED), its hosts are the components' in component order.
pub fn sbatch(file: &Path, envs: &[(&str, &str)]) -> Ended {
    let slurm = |program: &str, args: &[&str]| {
        let out = succeed(Command::new(program).args(args).envs(envs.iter().copied()));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let id = slurm("sbatch", &["--parsable", file.to_str().unwrap()]);
    let id = id.split(';').next().unwrap().to_string();
    let start = std::time::Instant::now();
    loop {
        let show = slurm("scontrol", &["show", "job", "-o", &id]);
        let field = |line: &str, key: &str| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key))
                .unwrap_or_default()
                .to_string()
        };
        let records: Vec<&str> = show.lines().filter(|l| !l.trim().is_empty()).collect();
        let states: Vec<String> = records.iter().map(|l| field(l, "JobState=")).collect();
        let running = ["PENDING", "RUNNING", "CONFIGURING", "COMPLETING"];
        if !states.iter().any(|s| running.contains(&s.as_str())) {
            let state = states
                .iter()
                .find(|s| *s != "COMPLETED")
                .or(states.first())
                .cloned()
                .unwrap_or_default();
            let hosts = records
                .iter()
                .flat_map(|l| {
                    let list = slurm("scontrol", &["show", "hostnames", &field(l, "NodeList=")]);
                    list.lines().map(String::from).collect::<Vec<_>>()
                })
                .collect();
            return Ended {
                id,
                state,
                exit_code: field(records[0], "ExitCode="),
                hosts,
            };
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "job {id} did not end: {show}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Runs a command that must succeed and returns its output; a failure names the command and
/// shows its stderr.
pub fn succeed(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Extracts a sysfs snapshot of tests/data/sysfs; returns the temporary folder and the
/// snapshot's root (for HWLOC_FSROOT).
pub fn sysfs_snapshot(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let archive = repo().join(format!("tests/data/sysfs/{name}.tar.bz2"));
    // tar needs bzip2 here; scripts/deps.sh installs it.
    succeed(
        Command::new("tar")
            .arg("-xjf")
            .arg(&archive)
            .arg("-C")
            .arg(dir.path()),
    );
    let root = dir.path().join(name);
    (dir, root)
}

/// `Cpus_allowed_list` of a `/proc` status file (`/proc/PID/status`, a task's, or `self`'s).
pub fn cpus_allowed(status: &str) -> String {
    std::fs::read_to_string(status)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Compiles a C file of the repository with `cc` into `out`.
pub fn cc(flags: &[&str], source: &str, out: &Path) {
    succeed(
        Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(out)
            .arg(repo().join(source)),
    );
}

/// Asserts that a generated script parses (`bash -n`) and passes shellcheck.
pub fn check_script(file: &Path) {
    for checker in [&["bash", "-n"][..], &["shellcheck"][..]] {
        let out = Command::new(checker[0])
            .args(&checker[1..])
            .arg(file)
            .output()
            .expect("bash and shellcheck (scripts/deps.sh) are installed");
        assert!(
            out.status.success(),
            "{} {}:\n{}{}",
            checker.join(" "),
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A JSON plan's warnings.
/// The messages of a plan's warnings (`{code, message}` entries), in order.
pub fn plan_warnings(plan: &serde_json::Value) -> Vec<&str> {
    plan["warnings"]
        .as_array()
        .expect("a plan has warnings")
        .iter()
        .map(|w| w["message"].as_str().expect("a warning has a message"))
        .collect()
}

/// The codes of a plan's warnings, in order.
pub fn warning_codes(plan: &serde_json::Value) -> Vec<&str> {
    plan["warnings"]
        .as_array()
        .expect("a plan has warnings")
        .iter()
        .map(|w| w["code"].as_str().expect("a warning has a code"))
        .collect()
}

/// hwloc's own export of a machine restricted to node 1's memory (`lstopo --restrict
/// nodeset=0x2`, as a cgroup without node 0's memory exports it), written to
/// `dir/restricted.xml`: CPUs 0-3 are left with no NUMA node.
pub fn restricted_to_node_1(dir: &std::path::Path) -> String {
    let out = succeed(Command::new("lstopo-no-graphics").args([
        "--input",
        "pack:2 numa:1 core:2 pu:2",
        "--restrict",
        "nodeset=0x2",
        "--of",
        "xml",
        "-",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    std::fs::write(dir.join("restricted.xml"), &text).unwrap();
    text
}

/// The lines of a job's output starting with `tag`, without `numaplan exec`'s `[K] ` prefix,
/// split into words.
pub fn tagged_lines<'t>(text: &'t str, tag: &str) -> Vec<Vec<&'t str>> {
    text.lines()
        .map(|l| match l.strip_prefix('[') {
            Some(rest) => rest.split_once("] ").map_or(l, |(_, line)| line),
            None => l,
        })
        .filter(|l| l.starts_with(tag))
        .map(|l| l.split_whitespace().collect())
        .collect()
}

/// This machine's fixture with one more NUMA node, memory-only, named `other-machine`: the same
/// CPUs (so Slurm could apply the masks), another shape (so every node check refuses). Returns
/// the fixture's text and its NUMA node count.
pub fn one_more_node_fixture() -> (String, u64) {
    let here = numaplan(&["topo", "--format", "yaml"]).ok();
    let mut other: serde_yaml::Value = serde_yaml::from_str(&here).unwrap();
    let nodes = other["nodes"].as_sequence_mut().unwrap();
    let next = nodes.iter().filter_map(|n| n["id"].as_u64()).max().unwrap() + 1;
    nodes.push(serde_yaml::from_str(&format!("{{id: {next}, package: 0, kind: memory}}")).unwrap());
    let map = other.as_mapping_mut().unwrap();
    map.remove("distances");
    map.insert("name".into(), "other-machine".into());
    (serde_yaml::to_string(&other).unwrap(), next + 1)
}

/// tests/slurm/mpi_world.c built with MPICH's compiler as `out`.
pub fn mpi_world(out: &Path) {
    succeed(
        Command::new("mpicc.mpich")
            .args(["-O2", "-Wall", "-Werror", "-o"])
            .arg(out)
            .arg(repo().join("tests/slurm/mpi_world.c")),
    );
}
