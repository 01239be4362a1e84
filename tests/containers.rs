//! numaplan inside real OCI containers: podman + crun with Docker's default seccomp profile
//! (which allows the memory-policy calls only with CAP_SYS_NICE, and `migrate_pages` never),
//! podman's default capabilities and a cpuset, as `docker run --cpuset-cpus` or a Kubernetes
//! Guaranteed pod gives. `tests/container/container.sh` starts them (about 0.3 s each).
//!
//! Runs where `NUMAPLAN_CONTAINERS=1` (root, podman installed): `scripts/test.sh` sets it as
//! root, as CI does. Elsewhere each test says it is skipped.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::repo;

/// Where containers can be started; says so where they cannot.
fn containers() -> bool {
    let on = std::env::var_os("NUMAPLAN_CONTAINERS").is_some();
    if !on {
        eprintln!("skipped: set NUMAPLAN_CONTAINERS=1 (as root, with podman) to run containers");
    }
    on
}

/// How a test's container is started.
#[derive(Clone, Copy)]
struct Setup<'a> {
    /// `--cpuset-cpus`.
    cpuset: &'a str,
    /// `--cap-add SYS_NICE`.
    sys_nice: bool,
    /// More bind mounts (`CT_MOUNTS`'s form: `/src:/dst:ro`).
    mounts: &'a str,
}

const DEFAULT: Setup = Setup {
    cpuset: "1",
    sys_nice: false,
    mounts: "",
};
const WITH_SYS_NICE: Setup = Setup {
    cpuset: "1",
    sys_nice: true,
    mounts: "",
};
/// Two CPUs, for two ranks.
const TWO_CPUS: Setup = Setup {
    cpuset: "0-1",
    sys_nice: false,
    mounts: "",
};

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the bash `script` in a container working in `dir`, with `$np` the numaplan binary and
/// `$torchrun` the torchrun stand-in (tests/bind/torchrun).
fn run_in(dir: &Path, how: Setup, script: &str) -> Ran {
    let bin = Path::new(env!("CARGO_BIN_EXE_numaplan"));
    let stand_ins = repo().join("tests/bind");
    let script = format!(
        "np={}; torchrun={}; {script}",
        bin.display(),
        stand_ins.join("torchrun").display()
    );
    let out: Output = Command::new(repo().join("tests/container/container.sh"))
        .args(["bash", "-c", &script])
        .current_dir(dir)
        .env("CT_CPUSET", how.cpuset)
        .env("CT_ADD_CAPS", if how.sys_nice { "SYS_NICE" } else { "" })
        .env(
            "CT_MOUNTS",
            format!(
                "{} {} {}",
                bin.parent().unwrap().display(),
                stand_ins.display(),
                how.mounts
            ),
        )
        .output()
        .expect("run tests/container/container.sh");
    let ran = Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !(125..=127).contains(&ran.code) || ran.stderr.contains("numaplan"),
        "the container did not start: {}",
        ran.stderr
    );
    ran
}

/// A directory with `job.yaml`: one rank per CPU of the cpuset, no GPUs, and a command that
/// prints the CPUs it may use and its memory policy (as /proc/self/numa_maps shows it for the
/// heap: `default`, `prefer:0`, `bind:0`), and touches `started`.
fn job(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let job = format!(
        "command: [bash, -c, 'touch started; grep Cpus_allowed_list /proc/self/status; \
         awk \"/heap/ {{ print \\\"policy\\\", \\$2; exit }}\" /proc/self/numa_maps']\n\
         gpus: none\n{extra}"
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    dir
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn the_default_job_binds_its_cpus_and_warns_once_without_sys_nice() {
    if !containers() {
        return;
    }
    let dir = job("");
    // One rank, and no launcher in a container's environment: bind needs no --local-rank.
    let ran = run_in(dir.path(), DEFAULT, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("policy default\n"), "{}", ran.stdout);
    assert_eq!(count(&ran.stderr, "warning[W0217]"), 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("set_mempolicy") && ran.stderr.contains("CAP_SYS_NICE"),
        "{}",
        ran.stderr
    );
    // With CAP_SYS_NICE the same job has its (default, preferred) policy, and no warning.
    let ran = run_in(dir.path(), WITH_SYS_NICE, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("policy prefer:0\n"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("W0217"), "{}", ran.stderr);
}

#[test]
fn exec_verifies_the_fallback_and_says_it_once_per_run() {
    if !containers() {
        return;
    }
    let dir = job("ranks_per_node: 2\n");
    let ran = run_in(dir.path(), TWO_CPUS, "\"$np\" exec job.yaml --verify");
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    assert_eq!(count(&ran.stderr, "warning[W0217]"), 1, "{}", ran.stderr);
    for rank in 0..2 {
        assert!(
            ran.stdout
                .contains(&format!("[{rank}] Cpus_allowed_list:\t{rank}\n")),
            "{}",
            ran.stdout
        );
        assert!(
            ran.stdout.contains(&format!("[{rank}] policy default\n")),
            "{}",
            ran.stdout
        );
    }
    // Under --deny-warnings the fallback is refused before anything starts...
    std::fs::remove_file(dir.path().join("started")).unwrap();
    let ran = run_in(
        dir.path(),
        TWO_CPUS,
        "\"$np\" exec job.yaml --deny-warnings; echo \"status $?\"; \"$np\" bind --deny-warnings --local-rank 0 job.yaml; echo \"status $?\"",
    );
    assert_eq!(count(&ran.stdout, "status 1\n"), 2, "{}", ran.stderr);
    assert_eq!(count(&ran.stderr, "warning[W0217]"), 2, "{}", ran.stderr);
    assert_eq!(count(&ran.stderr, "error[E0214]"), 2, "{}", ran.stderr);
    assert!(!dir.path().join("started").exists(), "{}", ran.stdout);
    // ...and accepted, silently, where the user allowed it.
    let ran = run_in(
        dir.path(),
        TWO_CPUS,
        "\"$np\" exec job.yaml --deny-warnings --allow W0217",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("W0217"), "{}", ran.stderr);
}

#[test]
fn a_policy_the_spec_asks_for_is_an_error_before_start_that_names_the_call() {
    if !containers() {
        return;
    }
    let dir = job("memory: {policy: bind}\n");
    for command in ["\"$np\" bind job.yaml", "\"$np\" exec job.yaml"] {
        let ran = run_in(dir.path(), DEFAULT, command);
        // 3: a binding syscall failed (README, Exit status).
        assert_eq!(ran.code, 3, "{command}: {}", ran.stderr);
        assert!(ran.stderr.contains("error[E0412]"), "{}", ran.stderr);
        for said in [
            "set_mempolicy",
            "seccomp",
            "SYS_NICE",
            "memory: {policy: none}",
        ] {
            assert!(
                ran.stderr.contains(said),
                "{command}: {said}: {}",
                ran.stderr
            );
        }
        // What is left is said as it is: `bind` is one process, `exec` started ranks.
        let left = match command.contains("bind") {
            true => "nothing was bound or started: this process's binding is as it was",
            false => "no rank was left running, and this process's binding is as it was",
        };
        assert!(ran.stderr.contains(left), "{command}: {}", ran.stderr);
        // A memory call failed: nothing blames the CPUs.
        assert!(!ran.stderr.contains("to CPUs"), "{}", ran.stderr);
        assert!(!ran.stderr.contains("the plan's CPUs"), "{}", ran.stderr);
        assert!(!dir.path().join("started").exists());
    }
    // With CAP_SYS_NICE the policy applies.
    let ran = run_in(dir.path(), WITH_SYS_NICE, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("policy bind:0\n"), "{}", ran.stdout);
    // `required: false`: the spec's policy where allowed, and the fallback (warned) where not.
    let dir = job("memory: {policy: bind, required: false}\n");
    let ran = run_in(dir.path(), DEFAULT, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("policy default\n"), "{}", ran.stdout);
    assert_eq!(count(&ran.stderr, "warning[W0217]"), 1, "{}", ran.stderr);
}

#[test]
fn two_local_ranks_still_need_a_launcher_variable() {
    if !containers() {
        return;
    }
    let dir = job("ranks_per_node: 2\n");
    let ran = run_in(dir.path(), TWO_CPUS, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("error[E0419]"), "{}", ran.stderr);
    assert!(!dir.path().join("started").exists());
}

#[test]
fn the_bash_launcher_falls_back_or_refuses_and_always_says_why() {
    if !containers() {
        return;
    }
    // Compiled in the container (its cpuset), the default job runs without its policy, warned.
    let dir = job("");
    let ran = run_in(
        dir.path(),
        DEFAULT,
        "\"$np\" compile job.yaml --emit bash -o launch.sh && ./launch.sh",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("[0] policy default\n"),
        "{}",
        ran.stdout
    );
    assert_eq!(count(&ran.stderr, "warning[W0217]"), 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("CAP_SYS_NICE"), "{}", ran.stderr);
    // A policy the spec asks for: refused before any rank starts, with the reason.
    let dir = job("memory: {policy: bind}\n");
    let ran = run_in(
        dir.path(),
        DEFAULT,
        "\"$np\" compile job.yaml --emit bash -o launch.sh && ./launch.sh",
    );
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("rank 0's memory policy (--membind=0) was refused")
            && ran.stderr.contains("CAP_SYS_NICE"),
        "{}",
        ran.stderr
    );
    assert!(!dir.path().join("started").exists());
    // A script made for the whole machine (CPUs 0-1) in a container given CPU 1: said, not
    // numactl's usage text.
    let dir = job("ranks_per_node: 2\n");
    let compiled = common::numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "--emit", "bash", "-o", "launch.sh"],
    );
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    let ran = run_in(dir.path(), DEFAULT, "./launch.sh");
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("rank 0's CPUs 0 are not all allowed to this process (it may use 1)"),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("usage"), "{}", ran.stderr);
}

#[test]
fn the_torchrun_and_mpirun_scripts_bind_each_rank_in_the_container() {
    if !containers() {
        return;
    }
    let scripts = [
        (
            "torchrun",
            "\"$np\" compile job.yaml --emit torchrun -o run.sh && NUMAPLAN=$np TORCHRUN=$torchrun ./run.sh",
        ),
        (
            "mpirun (MPICH)",
            "\"$np\" compile job.yaml --emit mpirun -o run.sh && NUMAPLAN=$np MPIRUN=mpiexec.mpich ./run.sh",
        ),
    ];
    for (name, script) in scripts {
        let dir = job("ranks_per_node: 2\n");
        let ran = run_in(dir.path(), TWO_CPUS, script);
        assert_eq!(ran.code, 0, "{name}: {}", ran.stderr);
        assert_eq!(
            count(&ran.stdout, "policy default\n"),
            2,
            "{name}: {}",
            ran.stdout
        );
        for rank in 0..2 {
            assert!(
                ran.stdout
                    .contains(&format!("Cpus_allowed_list:\t{rank}\n")),
                "{name}: {}",
                ran.stdout
            );
        }
        // Each rank is its own `numaplan bind` process, and says it once.
        assert_eq!(
            count(&ran.stderr, "warning[W0217]"),
            2,
            "{name}: {}",
            ran.stderr
        );
        let dir = job("ranks_per_node: 2\nmemory: {policy: bind}\n");
        let ran = run_in(dir.path(), TWO_CPUS, script);
        assert_ne!(ran.code, 0, "{name}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("set_mempolicy") && ran.stderr.contains("SYS_NICE"),
            "{name}: {}",
            ran.stderr
        );
        assert!(!dir.path().join("started").exists(), "{name}");
    }
}

#[test]
fn a_discovered_plan_checks_in_the_next_container_by_its_shape() {
    if !containers() {
        return;
    }
    let dir = job("");
    let ran = run_in(dir.path(), DEFAULT, "\"$np\" compile job.yaml -o plan.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let plan = std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap();
    // Another container, another random hostname, the same machine and cpuset: up to date.
    let check = "\"$np\" compile job.yaml -o plan.yaml --check";
    let ran = run_in(dir.path(), DEFAULT, check);
    assert_eq!(ran.code, 0, "{plan}\n{}{}", ran.stdout, ran.stderr);
    // A container of another shape (two CPUs) is another machine: stale, with the diff.
    let ran = run_in(dir.path(), TWO_CPUS, check);
    assert_ne!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("fingerprint"), "{}", ran.stdout);
    // `topo` says where it runs and what the cgroup gives it, in text and JSON.
    let ran = run_in(
        dir.path(),
        DEFAULT,
        "\"$np\" topo; \"$np\" topo --format json",
    );
    assert!(
        ran.stdout
            .contains("inside a podman container: its cgroup allows CPUs 1 (1 of "),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("\"container\": \"a podman container\"")
            && ran.stdout.contains("\"allowed\": \"1\""),
        "{}",
        ran.stdout
    );
}

#[test]
fn verify_tells_the_fallback_from_a_lost_policy() {
    if !containers() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sleep, '3']\ngpus: none\n",
    )
    .unwrap();
    // A rank bound without its policy by the fallback: ok, and said to be so by design.
    let script = "\"$np\" --quiet bind job.yaml & sleep 1; \"$np\" verify job.yaml --match sleep; echo \"status $?\"; wait";
    let ran = run_in(dir.path(), DEFAULT, script);
    assert!(
        ran.stdout.contains("status 0\n"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        ran.stdout.contains("rank 0 (pid ")
            && ran
                .stdout
                .contains("runs without its memory policy by design"),
        "{}",
        ran.stdout
    );
    // The same rank marked as bound with its policy, which it does not have: a mismatch.
    let script = "mark=$(\"$np\" --quiet bind job.yaml -- bash -c 'echo \"$NUMAPLAN_BOUND\"'); \
                  echo \"mark $mark\"; \
                  NUMAPLAN_BOUND=${mark%:no-memory-policy} taskset -c 1 sleep 3 & sleep 1; \
                  \"$np\" verify job.yaml --match sleep; echo \"status $?\"; wait";
    let ran = run_in(dir.path(), DEFAULT, script);
    assert!(
        ran.stdout.contains(":0:no-memory-policy\n"),
        "the fallback is in the mark: {}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("status 1\n"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(!ran.stdout.contains("by design"), "{}", ran.stdout);
    assert!(ran.stdout.contains("prefer:0"), "{}", ran.stdout);
}

#[test]
fn a_whole_machine_plan_in_a_smaller_cpuset_names_the_spec_path() {
    if !containers() {
        return;
    }
    // Compiled outside for the whole machine (one rank on every CPU), applied in a container
    // given CPU 1: refused before anything runs, and the help says how to plan inside it.
    let dir = job("memory: {policy: none}\n");
    let compiled = common::numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]);
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    let ran = run_in(dir.path(), DEFAULT, "\"$np\" bind plan.yaml");
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.starts_with("error[E0411]"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("`numaplan bind job.yaml -- CMD`")
            && ran.stderr.contains("a container's or pod's cpuset"),
        "{}",
        ran.stderr
    );
    assert!(!dir.path().join("started").exists());
    // The spec itself, in the same container: planned inside its cpuset, and run.
    let ran = run_in(dir.path(), DEFAULT, "\"$np\" bind job.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
}

/// A plan's id does not depend on the container's random hostname: two containers of one
/// cpuset give the spec's plan one id, the plan file compiled in a third has it too, and
/// `verify --match` of that file finds the job's rank as its own (not "another job's").
#[test]
fn a_plan_has_one_id_in_every_container_of_one_shape() {
    if !containers() {
        return;
    }
    let dir = job("");
    let id = |input: &str| {
        let ran = run_in(
            dir.path(),
            DEFAULT,
            &format!("\"$np\" bind {input} --dry-run --format json -q"),
        );
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        report["plan_id"].as_str().unwrap().to_string()
    };
    let first = id("job.yaml");
    assert_eq!(id("job.yaml"), first);
    let ran = run_in(
        dir.path(),
        DEFAULT,
        "\"$np\" compile job.yaml -q -o ct.plan.yaml",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(id("ct.plan.yaml"), first);
    // The job's rank, started from the spec, is the checked-in plan's rank.
    let ran = run_in(
        dir.path(),
        DEFAULT,
        "\"$np\" bind job.yaml -q -- sleep 5 & sleep 0.5; \"$np\" verify ct.plan.yaml --match sleep; echo \"status $?\"; kill %1",
    );
    assert!(
        ran.stdout.contains("status 0\n"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(!ran.stderr.contains("E0417"), "{}", ran.stderr);
}

/// The cpuset a plan is discovered in is its machine: no W0203 for the CPUs the container
/// does not have, so `--deny-warnings` runs the default job. What the spec cuts within it still
/// warns, and a plan made in a wider container is still refused in a narrower one.
#[test]
fn a_containers_own_cpuset_is_no_restriction() {
    if !containers() {
        return;
    }
    let dir = job("");
    let ran = run_in(
        dir.path(),
        WITH_SYS_NICE,
        "\"$np\" compile job.yaml -o one.plan.yaml && \"$np\" exec one.plan.yaml --deny-warnings",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!ran.stderr.contains("W0203"), "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
    // The spec's own restriction, inside a container of two CPUs: a warning, as on a host.
    let ran = run_in(
        dir.path(),
        TWO_CPUS,
        "\"$np\" compile job.yaml --set cpu.allowed=1 -q --format json -o /dev/null; \"$np\" compile job.yaml --set cpu.allowed=1 -o /dev/null",
    );
    assert_eq!(
        count(
            &ran.stderr,
            "warning[W0203]: node 0 has 1 of 2 CPUs allowed"
        ),
        1,
        "{}",
        ran.stderr
    );
    // A plan of the two-CPU container, run in the one-CPU container: refused, as before.
    let ran = run_in(
        dir.path(),
        TWO_CPUS,
        "\"$np\" compile job.yaml --set ranks_per_node=2 -o two.plan.yaml",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    std::fs::remove_file(dir.path().join("started")).unwrap();
    let ran = run_in(dir.path(), WITH_SYS_NICE, "\"$np\" exec two.plan.yaml");
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("error[E0411]"), "{}", ran.stderr);
    assert!(!dir.path().join("started").exists());
}

/// The torchrun and mpirun scripts are all or nothing, as the bash launcher is: a plan of two
/// ranks (CPUs 0 and 1) run in a container of CPU 1 alone refuses before any rank's program
/// starts, rank 1's included, naming rank 0's CPUs.
#[test]
fn the_torchrun_and_mpirun_scripts_start_no_rank_unless_every_rank_can_be_bound() {
    if !containers() {
        return;
    }
    for (name, emit, run) in [
        (
            "torchrun",
            "torchrun",
            "NUMAPLAN=$np TORCHRUN=$torchrun ./run.sh",
        ),
        (
            "mpirun (MPICH)",
            "mpirun",
            "NUMAPLAN=$np MPIRUN=mpiexec.mpich ./run.sh",
        ),
    ] {
        let dir = job("ranks_per_node: 2\n");
        let compiled = run_in(
            dir.path(),
            TWO_CPUS,
            &format!("\"$np\" compile job.yaml --emit {emit} -o run.sh"),
        );
        assert_eq!(compiled.code, 0, "{name}: {}", compiled.stderr);
        let ran = run_in(dir.path(), WITH_SYS_NICE, run);
        assert_ne!(ran.code, 0, "{name}: {}{}", ran.stdout, ran.stderr);
        assert!(
            ran.stderr.contains("error[E0411]"),
            "{name}: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains("rank 0 is planned on CPUs 0"),
            "{name}: {}",
            ran.stderr
        );
        assert!(
            !dir.path().join("started").exists(),
            "{name}: a rank started: {}",
            ran.stdout
        );
    }
}

/// A Kubernetes pod as `--emit k8s` runs it: `numaplan exec --pod` of the reviewed plan in a
/// container given what the kubelet and the CPU DRA driver would give (a cpuset,
/// `DRA_CPUSET_<claim>`, SYS_NICE). Given the plan's CPUs it starts its rank bound as planned;
/// under `--pod exact` given others it starts none and names the claim; under `--pod given`
/// it runs on the CPUs given, on the plan's node, and says so.
#[test]
fn a_pod_starts_its_ranks_bound_as_planned_and_none_given_other_cpus() {
    if !containers() {
        return;
    }
    let dir = job(
        "ranks_per_node: 1\ncpu: {policy: exclusive, allowed: \"1\"}\nmemory: {policy: bind}\n",
    );
    let plan = common::numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "-q", "-o", "plan.yaml"],
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let on = |cpuset| Setup {
        cpuset,
        sys_nice: true,
        mounts: "",
    };
    let exec = |mode: &str, claimed: &str| {
        format!("rm -f started; DRA_CPUSET_4f2a={claimed} \"$np\" exec --pod {mode} plan.yaml")
    };
    // The claim's CPUs: the rank runs on them, its memory bound.
    let ran = run_in(dir.path(), on("1"), &exec("exact", "1"));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("policy bind:0\n"), "{}", ran.stdout);
    assert!(!ran.stderr.contains("W0228"), "{}", ran.stderr);
    // Other CPUs than the claim names: nothing starts, and the error names the claim.
    let ran = run_in(dir.path(), on("0"), &exec("exact", "0"));
    assert_eq!(ran.code, 1, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("error[E0457]") && ran.stderr.contains("`cpus`"),
        "{}",
        ran.stderr
    );
    assert!(!dir.path().join("started").exists(), "a rank started");
    // A cpuset that is not the CPU driver's claim: the kubelet's CPU Manager placed it too.
    let ran = run_in(dir.path(), on("0-1"), &exec("exact", "1"));
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cpuManagerPolicy: none"),
        "{}",
        ran.stderr
    );
    assert!(!dir.path().join("started").exists(), "a rank started");
    // Chosen by the kubelet: the rank runs on the CPU given, on the plan's node, said once.
    let ran = run_in(dir.path(), on("0"), "\"$np\" exec --pod given plan.yaml");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t0\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("policy bind:0\n"), "{}", ran.stdout);
    assert_eq!(count(&ran.stderr, "warning[W0228]"), 1, "{}", ran.stderr);
    // A rank already bound that binds itself again (`numaplan.bind()` in a process `bind`
    // started) reads the pod's cpuset, not its own narrower affinity.
    let two = job("ranks_per_node: 2\ncpu: {policy: exclusive}\nmemory: {policy: bind}\n");
    let compiled = common::numaplan_in(
        two.path(),
        &["compile", "job.yaml", "-q", "-o", "plan.yaml"],
    );
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    let ran = run_in(
        two.path(),
        on("0-1"),
        "NUMAPLAN_POD=exact taskset -c 1 \"$np\" bind --local-rank 1 plan.yaml -- grep Cpus_allowed_list /proc/self/status",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
    // The SGLang script's server (`bind --all-ranks`) in the same pod, told by NUMAPLAN_POD.
    let ran = run_in(
        dir.path(),
        on("0"),
        "NUMAPLAN_POD=given \"$np\" bind --all-ranks plan.yaml -- grep Cpus_allowed_list /proc/self/status",
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t0\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stderr.contains("warning[W0228]"), "{}", ran.stderr);
    // The GPU driver's device metadata (KEP-5304) says the devices claim's request `gpu-0`
    // was given a GPU this CPU-only plan does not have: nothing starts, the request is named.
    let metadata = dir.path().join("devices");
    std::fs::create_dir_all(metadata.join("gpu-0")).unwrap();
    std::fs::write(
        metadata.join("gpu-0/gpu.nvidia.com-metadata.json"),
        r#"{"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
            "requests": [{"name": "gpu-0", "devices": [{"driver": "gpu.nvidia.com",
            "attributes": {"resource.kubernetes.io/pciBusID": {"string": "0000:1b:00.0"}}}]}]}"#,
    )
    .unwrap();
    let mounts = format!(
        "{}:/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/devices:ro",
        metadata.display()
    );
    let with_metadata = Setup {
        cpuset: "1",
        sys_nice: true,
        mounts: &mounts,
    };
    let ran = run_in(dir.path(), with_metadata, &exec("exact", "1"));
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("error[E0458]") && ran.stderr.contains("`gpu-0`"),
        "{}",
        ran.stderr
    );
    assert!(!dir.path().join("started").exists(), "a rank started");
}

/// The pod `--emit k8s` writes for `kubernetes` (a spec's block) of a one-rank plan on CPU 1,
/// run as the kubelet and the drivers would run it: its ConfigMap's plan and launch script
/// mounted where the pod mounts them, its container's own command and environment, a cpuset,
/// the CPU driver's `DRA_CPUSET_<claim>` (`claimed`, where it claims), the SYS_NICE it asks.
/// Returns the run and the directory (`started` is there if a rank started).
fn manifest_pod(kubernetes: &str, cpuset: &str, claimed: Option<&str>) -> (Ran, tempfile::TempDir) {
    let dir = job(&format!(
        "ranks_per_node: 1\ncpu: {{policy: exclusive, allowed: \"1\"}}\n\
         memory: {{policy: bind}}\nkubernetes: {kubernetes}\n"
    ));
    let emitted = common::numaplan_in(dir.path(), &["compile", "job.yaml", "-q", "--emit", "k8s"]);
    assert_eq!(emitted.code, 0, "{}", emitted.stderr);
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&emitted.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let of_kind = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"].as_str() == Some(kind))
            .unwrap()
    };
    std::fs::create_dir(dir.path().join("etc")).unwrap();
    for (key, text) in of_kind("ConfigMap")["data"].as_mapping().unwrap() {
        let path = dir.path().join("etc").join(key.as_str().unwrap());
        std::fs::write(path, text.as_str().unwrap()).unwrap();
    }
    let container = &of_kind("Pod")["spec"]["containers"][0];
    assert_eq!(
        container["securityContext"]["capabilities"]["add"][0].as_str(),
        Some("SYS_NICE")
    );
    assert_eq!(
        container["resources"]["requests"]["cpu"].as_str(),
        Some("1")
    );
    let word = |w: &serde_yaml::Value| {
        let w = w.as_str().unwrap().to_string();
        assert!(
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_.-=".contains(c)),
            "{w}"
        );
        w
    };
    let env: Vec<String> = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| format!("{}={}", word(&e["name"]), word(&e["value"])))
        .chain(claimed.map(|c| format!("DRA_CPUSET_9c1e={c}")))
        .collect();
    let command: Vec<String> = container["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(word)
        .collect();
    let mounts = format!("{}:/etc/numaplan:ro", dir.path().join("etc").display());
    let pod = Setup {
        cpuset,
        sys_nice: true,
        mounts: &mounts,
    };
    let script = format!(
        "PATH=$(dirname \"$np\"):$PATH NUMAPLAN=$np TORCHRUN=$torchrun {} {}",
        env.join(" "),
        command.join(" ")
    );
    (run_in(dir.path(), pod, &script), dir)
}

/// The pod `--emit k8s` writes: under DRA's individual mode (`NUMAPLAN_POD=exact`) its rank
/// runs bound as planned, and the same pod on a node that gave it another CPU starts none;
/// under the device plugins (`given`) the torchrun script's rank runs on the CPU the kubelet
/// gave, on the plan's node, and says so.
#[test]
fn the_manifests_own_pod_runs_its_rank_bound_as_planned() {
    if !containers() {
        return;
    }
    let exact = "{image: \"img:1\", memory: 1Gi, devices: dra}";
    let (ran, _) = manifest_pod(exact, "1", Some("1"));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t1\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("policy bind:0\n"), "{}", ran.stdout);
    let (ran, dir) = manifest_pod(exact, "0", Some("0"));
    assert_eq!(ran.code, 1, "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stderr.contains("error[E0457]"), "{}", ran.stderr);
    assert!(!dir.path().join("started").exists(), "a rank started");
    let torchrun = "{image: \"img:1\", memory: 1Gi, launch: torchrun}";
    let (ran, _) = manifest_pod(torchrun, "0", None);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains("Cpus_allowed_list:\t0\n"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("policy bind:0\n"), "{}", ran.stdout);
    assert!(ran.stderr.contains("warning[W0228]"), "{}", ran.stderr);
}
