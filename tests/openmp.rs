//! Inside a rank, for real: a C OpenMP program (tests/openmp/omp-probe.c, built here with GNU
//! libgomp and with LLVM's libomp) runs under `numaplan exec` with `openmp:` and `cpu.helpers`,
//! and reads every one of its threads back from /proc while they spin. The 4-node QEMU guest
//! (tests/vm.rs) runs it with 4 ranks and with `spread` over several L3 groups.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use numaplan::cpuset::CpuSet;

/// The two OpenMP runtimes a rank may use: GNU's (gcc, PyTorch's pip wheels) and LLVM's (clang;
/// Intel's runtime reads the same KMP_AFFINITY).
#[derive(Clone, Copy, Debug)]
enum Runtime {
    Gnu,
    Llvm,
}

/// The probe linked with `runtime`'s OpenMP library.
fn probe(dir: &Path, runtime: Runtime) -> PathBuf {
    let out = dir.join(format!("omp-probe-{runtime:?}").to_lowercase());
    match runtime {
        Runtime::Gnu => common::cc(&["-O1", "-fopenmp"], "tests/openmp/omp-probe.c", &out),
        Runtime::Llvm => {
            let lib = std::fs::read_dir("/usr/lib")
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path().join("lib")))
                .find(|d| d.join("libomp.so").exists())
                .expect("LLVM's libomp is installed (libomp-dev, scripts/deps.sh)");
            let object = dir.join("omp-probe.o");
            common::cc(
                &["-O1", "-fopenmp", "-c"],
                "tests/openmp/omp-probe.c",
                &object,
            );
            let rpath = format!("-Wl,-rpath,{}", lib.display());
            common::succeed(
                Command::new("cc")
                    .arg(&object)
                    .arg(format!("-L{}", lib.display()))
                    .args([rpath.as_str(), "-lomp", "-o"])
                    .arg(&out),
            );
        }
    }
    out
}

/// A job of one CPU-only rank that runs `program`, with `extra` spec lines.
fn job(program: &Path, extra: &str) -> String {
    format!(
        "command: [{}]\ngpus: none\nranks_per_node: 1\n{extra}",
        program.display()
    )
}

/// The plan of `job` for this machine, as JSON.
fn plan(dir: &Path, job: &str) -> serde_json::Value {
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let json = common::numaplan_in(dir, &["compile", "job.yaml", "--format", "json"]).ok();
    serde_json::from_str(&json).unwrap()
}

/// What the probe printed: its thread count, every task's CPUs and the CPU it ran on, and the
/// helper child's.
struct Seen {
    threads: usize,
    tasks: Vec<(CpuSet, u32)>,
    helper: Option<(CpuSet, u32)>,
    stderr: String,
}

fn cpus_on(rest: &str) -> (CpuSet, u32) {
    let (cpus, on) = rest.split_once(" on ").unwrap();
    (cpus.parse().unwrap(), on.parse().unwrap())
}

fn run(dir: &Path, envs: &[(&str, &str)]) -> Seen {
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml"])
        .current_dir(dir)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("[0] "))
        .collect();
    Seen {
        threads: lines
            .iter()
            .find_map(|l| l.strip_prefix("omp threads "))
            .unwrap_or_else(|| panic!("no thread count in:\n{stdout}{stderr}"))
            .parse()
            .unwrap(),
        tasks: lines
            .iter()
            .filter_map(|l| l.strip_prefix("task "))
            .map(|l| cpus_on(l.split_once(" cpus ").unwrap().1))
            .collect(),
        helper: lines
            .iter()
            .find_map(|l| l.strip_prefix("helper cpus "))
            .map(cpus_on),
        stderr,
    }
}

fn places(plan: &serde_json::Value) -> Vec<CpuSet> {
    plan["ranks"][0]["openmp"]["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().parse().unwrap())
        .collect()
}

/// `places: cores, bind: close` with one thread per core: under either runtime every thread is
/// bound to its own place (one core of the rank), and runs there.
#[test]
fn each_openmp_thread_runs_on_its_own_core() {
    for runtime in [Runtime::Gnu, Runtime::Llvm] {
        let dir = tempfile::tempdir().unwrap();
        let program = probe(dir.path(), runtime);
        let plan = plan(
            dir.path(),
            &job(&program, "openmp: {places: cores, bind: close}\n"),
        );
        let places = places(&plan);
        let seen = run(dir.path(), &[]);
        assert_eq!(
            seen.threads,
            places.len(),
            "{runtime:?}: one thread per core"
        );
        assert_eq!(seen.tasks.len(), places.len(), "{runtime:?}");
        let mut bound: Vec<CpuSet> = seen.tasks.iter().map(|t| t.0.clone()).collect();
        bound.sort_by_key(|c| c.first());
        assert_eq!(bound, places, "{runtime:?}: every thread on its own place");
        for (cpus, on) in &seen.tasks {
            assert!(
                cpus.contains(*on),
                "{runtime:?}: ran on {on}, bound to {cpus}"
            );
        }
        if let Runtime::Llvm = runtime {
            // It read KMP_AFFINITY, which says the same, and says so.
            assert!(
                seen.stderr
                    .contains("OMP_PLACES: ignored because KMP_AFFINITY has been defined"),
                "{}",
                seen.stderr
            );
        }
    }
}

/// `cpu.helpers: 1`: a worker that pins itself to NUMAPLAN_HELPER_CPUS ends on the helper core;
/// the OpenMP threads never do.
#[test]
fn helper_workers_run_on_the_helper_pool_and_openmp_never_does() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: a helper pool needs a machine of two cores");
        return;
    }
    for runtime in [Runtime::Gnu, Runtime::Llvm] {
        let dir = tempfile::tempdir().unwrap();
        let program = probe(dir.path(), runtime);
        let plan = plan(
            dir.path(),
            &job(
                &program,
                "cpu: {helpers: 1}\nopenmp: {bind: close, threads: 2, kmp_affinity: false}\n",
            ),
        );
        let helpers: CpuSet = plan["ranks"][0]["helpers"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let seen = run(dir.path(), &[("PROBE_HELPER", "1")]);
        let (cpus, on) = seen.helper.expect("the helper child reported");
        assert_eq!(cpus, helpers, "{runtime:?}");
        assert!(helpers.contains(on), "{runtime:?}: the helper ran on {on}");
        assert_eq!(seen.threads, 2);
        for (cpus, on) in &seen.tasks {
            assert!(
                !cpus.intersects(&helpers),
                "{runtime:?}: an OpenMP thread may use {cpus}"
            );
            assert!(
                !helpers.contains(*on),
                "{runtime:?}: an OpenMP thread ran on helper {on}"
            );
        }
    }
}

/// `numaplan verify` reads the spinning threads of a running rank and finds them inside their
/// places; `--verify`'s table counts them.
#[test]
fn verify_reads_openmp_threads_against_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let program = probe(dir.path(), Runtime::Gnu);
    let plan = plan(
        dir.path(),
        &job(&program, "openmp: {places: cores, bind: close}\n"),
    );
    let places = places(&plan);
    common::numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let ready = dir.path().join("ready");
    let mut exec = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "plan.yaml"])
        .current_dir(dir.path())
        .env("PROBE_READY", &ready)
        .env("PROBE_SPIN_MS", "3000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready.exists() {
        assert!(
            Instant::now() < deadline,
            "the probe never got its threads going"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let run = common::numaplan_in(dir.path(), &["verify", "plan.yaml", "--match", "omp-probe"]);
    let _ = exec.kill();
    let _ = exec.wait();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let row = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with('0'))
        .unwrap();
    let threads: usize = row.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(threads, places.len(), "{}", run.stdout);
}

/// The launch scripts carry the same variables: the bash launcher's rank runs its threads on
/// the plan's places, and the Slurm batch file exports them in each task's branch.
#[test]
fn launch_scripts_carry_the_placement() {
    let dir = tempfile::tempdir().unwrap();
    let program = probe(dir.path(), Runtime::Gnu);
    let job = job(&program, "openmp: {places: cores, bind: close}\n");
    let plan = plan(dir.path(), &job);
    let places = places(&plan);
    common::numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "--emit", "bash", "-o", "launch.sh"],
    )
    .ok();
    let out = Command::new(dir.path().join("launch.sh"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut bound: Vec<CpuSet> = stdout
        .lines()
        .filter_map(|l| {
            l.split_once("task ")
                .map(|(_, rest)| cpus_on(rest.split_once(" cpus ").unwrap().1).0)
        })
        .collect();
    bound.sort_by_key(|c| c.first());
    assert_eq!(bound, places, "{stdout}");

    let sbatch = common::numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "sbatch"]).ok();
    let env = &plan["ranks"][0]["env"];
    for var in [
        "OMP_PLACES",
        "OMP_PROC_BIND",
        "KMP_AFFINITY",
        "OMP_NUM_THREADS",
    ] {
        let value = env[var].as_str().unwrap();
        assert!(
            sbatch.contains(&format!("export {var}={value}"))
                || sbatch.contains(&format!("export {var}='{value}'")),
            "{var}={value} not in:\n{sbatch}"
        );
    }
}
