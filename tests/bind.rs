//! `numaplan bind` under every launcher: each rank reads its binding back from /proc/self
//! (`Cpus_allowed_list`, the numa_maps policy) and its environment, compared with the plan.
//! torchrun is a stand-in (tests/bind/torchrun: PyTorch is too big for CI); Open MPI and MPICH
//! are Debian's, run for real; the one-node Slurm runs `srun` when `NUMAPLAN_SLURM=1`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use common::{check_script, numaplan_in, repo};

/// A rank that records what it got in `$OUT/bind-<LOCAL_RANK>`: CPUs, numa_maps policy, then
/// its environment, and its arguments NUL-separated in `$OUT/args-<LOCAL_RANK>`.
const PROBE: &[&str] = &[
    "sh",
    "-c",
    r#"f="$OUT/bind-$LOCAL_RANK"; { grep Cpus_allowed_list /proc/self/status | cut -f2; head -1 /proc/self/numa_maps | cut -d' ' -f2; env; } > "$f"; printf '%s\0' "$@" > "$OUT/args-$LOCAL_RANK""#,
    "probe",
];

/// `PROBE` as the words of a YAML flow list (`command: [{}]`).
fn probe_words() -> String {
    PROBE
        .iter()
        .map(|a| serde_json::to_string(a).unwrap())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A plan for this machine: 2 CPU-only ranks (1 on a 1-CPU machine), memory bound.
fn plan_here(dir: &Path) -> serde_json::Value {
    let ranks = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let job = format!(
        "gpus: none\nranks_per_node: {ranks}\nmemory: {{policy: bind}}\nenv: {{FROM_PLAN: yes}}\n"
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    numaplan_in(dir, &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let json = numaplan_in(dir, &["compile", "job.yaml", "--format", "json"]).ok();
    serde_json::from_str(&json).unwrap()
}

/// What rank `local` recorded: its CPUs, memory policy and environment.
struct Seen {
    cpus: String,
    policy: String,
    env: BTreeMap<String, String>,
}

fn seen(dir: &Path, local: u64) -> Seen {
    let text = std::fs::read_to_string(dir.join(format!("bind-{local}")))
        .unwrap_or_else(|e| panic!("rank {local} did not record its binding: {e}"));
    let mut lines = text.lines();
    let cpus = lines.next().unwrap().to_string();
    let policy = lines.next().unwrap().to_string();
    let env = lines
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Seen { cpus, policy, env }
}

/// Every rank of the plan ran bound as planned.
fn assert_bound(dir: &Path, plan: &serde_json::Value) -> Vec<Seen> {
    let mut out = Vec::new();
    for r in plan["ranks"].as_array().unwrap() {
        let local = r["local_rank"].as_u64().unwrap();
        let s = seen(dir, local);
        assert_eq!(s.cpus, r["cpus"].as_str().unwrap(), "rank {local} CPUs");
        assert_eq!(
            s.policy,
            format!("bind:{}", r["memory"]["nodes"].as_str().unwrap()),
            "rank {local} memory policy"
        );
        assert_eq!(s.env.get("FROM_PLAN").map(String::as_str), Some("yes"));
        assert_eq!(
            s.env.get("OMP_NUM_THREADS"),
            r["env"]["OMP_NUM_THREADS"]
                .as_str()
                .map(String::from)
                .as_ref(),
            "the plan's OMP_NUM_THREADS replaces the launcher's"
        );
        out.push(s);
    }
    out
}

fn bind(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .arg("bind")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("OUT", dir)
        .env_clear_launchers()
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Removes the launcher variables the test runner itself may have (a CI job under Slurm).
trait ClearLaunchers {
    fn env_clear_launchers(&mut self) -> &mut Self;
}

impl ClearLaunchers for Command {
    fn env_clear_launchers(&mut self) -> &mut Self {
        for (k, _) in std::env::vars() {
            if k.starts_with("SLURM_")
                || k.starts_with("OMPI_")
                || k.starts_with("PMI_")
                || k.starts_with("PALS_")
                || k.starts_with("FLUX_")
                || [
                    "LOCAL_RANK",
                    "RANK",
                    "WORLD_SIZE",
                    "LOCAL_WORLD_SIZE",
                    "MPI_LOCALRANKID",
                    "MPI_LOCALNRANKS",
                    "MASTER_ADDR",
                    "MASTER_PORT",
                    "CUDA_VISIBLE_DEVICES",
                    "ROCR_VISIBLE_DEVICES",
                    "HIP_VISIBLE_DEVICES",
                    "ZE_AFFINITY_MASK",
                ]
                .contains(&k.as_str())
            {
                self.env_remove(k);
            }
        }
        self
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bind_applies_each_rank_as_torchrun_starts_it() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_here(dir.path());
    let n = plan["ranks"].as_array().unwrap().len();
    for local in 0..n {
        let (l, size) = (local.to_string(), n.to_string());
        // torchrun's own numbering, which bind leaves alone.
        let rank = (10 + local).to_string();
        let env = [
            ("LOCAL_RANK", l.as_str()),
            ("LOCAL_WORLD_SIZE", size.as_str()),
            ("RANK", rank.as_str()),
            ("WORLD_SIZE", size.as_str()),
            ("MASTER_ADDR", "10.9.8.7"),
            ("OMP_NUM_THREADS", "1"),
        ];
        let out = bind(
            dir.path(),
            &env,
            &[&["plan.yaml", "--"][..], PROBE, &["x y"]].concat(),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    for s in assert_bound(dir.path(), &plan) {
        assert_eq!(
            s.env["MASTER_ADDR"], "10.9.8.7",
            "the launcher's numbering stays"
        );
        assert!(s.env["RANK"].parse::<u32>().unwrap() >= 10);
    }
    assert_eq!(
        std::fs::read(dir.path().join("args-0")).unwrap(),
        b"x y\0",
        "arguments arrive byte for byte"
    );
}

#[test]
fn bind_fills_in_torchruns_numbering_from_mpi_variables() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_here(dir.path());
    let n = plan["ranks"].as_array().unwrap().len();
    let size = n.to_string();
    let out = bind(
        dir.path(),
        &[
            ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", &size),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", &size),
        ],
        &[&["plan.yaml", "--"][..], PROBE].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = seen(dir.path(), 0);
    for (k, v) in [
        ("RANK", "0"),
        ("LOCAL_RANK", "0"),
        ("WORLD_SIZE", size.as_str()),
        ("LOCAL_WORLD_SIZE", size.as_str()),
        ("NODE_RANK", "0"),
        ("GROUP_RANK", "0"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29500"),
    ] {
        assert_eq!(s.env.get(k).map(String::as_str), Some(v), "{k}");
    }
}

/// Run through the real Open MPI and MPICH, directly and through `--emit mpirun`.
#[test]
fn bind_under_open_mpi_and_mpich() {
    for mpirun in ["mpirun.openmpi", "mpiexec.mpich"] {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_here(dir.path());
        let n = plan["ranks"].as_array().unwrap().len().to_string();
        let numaplan = env!("CARGO_BIN_EXE_numaplan");
        let mut cmd = Command::new(mpirun);
        match mpirun {
            "mpirun.openmpi" => cmd.args(["--bind-to", "none", "-np", &n, "-x", "OUT"]),
            _ => cmd.args(["-bind-to", "none", "-n", &n]),
        };
        let out = mpi_env(&mut cmd)
            .args([numaplan, "bind", "plan.yaml", "--"])
            .args(PROBE)
            .current_dir(dir.path())
            .env("OUT", dir.path())
            .env_clear_launchers()
            .output()
            .unwrap();
        assert!(out.status.success(), "{mpirun}: {}", text(&out.stderr));
        for s in assert_bound(dir.path(), &plan) {
            assert!(s.env.contains_key("RANK"), "{mpirun}: RANK filled in");
        }

        // The emitted script picks the MPI's spelling itself, and hands over a plan too large
        // for one variable (a 70 KB value on each rank) in parts.
        let big: String = (0..70_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for env in [
            "FROM_PLAN: yes".to_string(),
            format!("FROM_PLAN: yes, BIG: {big}"),
        ] {
            run_mpirun_script(mpirun, &n, &env);
        }
    }
}

/// Runs `--emit mpirun`'s script under `mpirun` for a job of `n` ranks with `env`, and checks
/// every rank's binding and arguments.
fn run_mpirun_script(mpirun: &str, n: &str, env: &str) {
    let dir = tempfile::tempdir().unwrap();
    let job = format!(
        "command: [{}]\ngpus: none\nranks_per_node: {n}\nmemory: {{policy: bind}}\nenv: {{{env}}}\n",
        probe_words()
    );
    let plan = common::emit_here(dir.path(), &job, "mpirun", "mpirun.sh");
    check_script(&dir.path().join("mpirun.sh"));
    let out = mpi_env(&mut Command::new(dir.path().join("mpirun.sh")))
        .arg("extra arg")
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .env("MPIRUN", mpirun)
        .env("PATH", path_with_numaplan())
        .env_clear_launchers()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{mpirun} script: {}",
        text(&out.stderr)
    );
    assert_bound(dir.path(), &plan);
    assert_eq!(
        std::fs::read(dir.path().join("args-0")).unwrap(),
        b"extra arg\0"
    );
}

/// Open MPI refuses root unless told; CI runs as root.
fn mpi_env(cmd: &mut Command) -> &mut Command {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
}

/// PATH with the numaplan under test first.
fn path_with_numaplan() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_numaplan")).parent().unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `--emit torchrun` on one node and as node 1 of 2, through the torchrun stand-in.
#[test]
fn the_torchrun_script_binds_every_rank() {
    for nodes in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let ranks = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let job = format!(
            "command: [{}]\ngpus: none\nnodes: {nodes}\nranks_per_node: {ranks}\nmemory: {{policy: bind}}\nenv: {{FROM_PLAN: yes}}\nrendezvous: {{port: 29777}}\n",
            probe_words()
        );
        let plan = common::emit_here(dir.path(), &job, "torchrun", "torchrun.sh");
        let script = dir.path().join("torchrun.sh");
        check_script(&script);
        let log = dir.path().join("torchrun.argv");
        let mut cmd = Command::new(&script);
        if nodes > 1 {
            cmd.args(["--node-rank", "1", "--master-addr", "10.1.2.3"]);
        }
        let out = cmd
            .arg("--lr=3e-4")
            .current_dir(dir.path())
            .env("OUT", dir.path())
            .env("TORCHRUN", repo().join("tests/bind/torchrun"))
            .env("TORCHRUN_LOG", &log)
            .env("PATH", path_with_numaplan())
            .env_clear_launchers()
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{nodes} node(s): {}",
            text(&out.stderr)
        );
        let argv = std::fs::read_to_string(&log).unwrap();
        let argv: Vec<&str> = argv.split('\0').collect();
        assert!(
            argv.contains(&"--no-python") && argv.contains(&"bind"),
            "{argv:?}"
        );
        let seen = assert_bound(dir.path(), &plan);
        for (local, s) in seen.iter().enumerate() {
            let rank = (nodes - 1) * ranks + local;
            assert_eq!(s.env["RANK"], rank.to_string(), "{nodes} node(s)");
            assert_eq!(s.env["WORLD_SIZE"], (nodes * ranks).to_string());
            // Many nodes meet at the spec's rendezvous; one node at torchrun's standalone one
            // (a free port), so that two jobs on a node do not collide.
            match nodes {
                1 => assert_eq!(s.env["MASTER_ADDR"], "localhost"),
                _ => assert_eq!(s.env["MASTER_PORT"], "29777"),
            }
        }
        if nodes > 1 {
            assert_eq!(seen[0].env["MASTER_ADDR"], "10.1.2.3");
            // Without its place in the job the script refuses before torchrun starts.
            let out = Command::new(&script)
                .env("TORCHRUN", repo().join("tests/bind/torchrun"))
                .env("PATH", path_with_numaplan())
                .env_clear_launchers()
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2));
            assert!(text(&out.stderr).contains("this plan is for 2 nodes"));
        }
        assert_eq!(
            std::fs::read(dir.path().join("args-0")).unwrap(),
            b"--lr=3e-4\0"
        );
    }
}

#[test]
fn bind_under_srun() {
    if std::env::var("NUMAPLAN_SLURM").as_deref() != Ok("1") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_here(dir.path());
    let n = plan["ranks"].as_array().unwrap().len().to_string();
    let out = Command::new("srun")
        .args(["-n", &n, "--cpu-bind=none", "--time=00:02:00"])
        .args([
            env!("CARGO_BIN_EXE_numaplan"),
            "bind",
            "plan.yaml",
            "--verbose",
            "--",
        ])
        .args(PROBE)
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for s in assert_bound(dir.path(), &plan) {
        assert_eq!(
            s.env.get("SLURM_PROCID"),
            s.env.get("RANK"),
            "RANK from SLURM_PROCID"
        );
    }
    assert!(
        text(&out.stderr).contains("via SLURM_LOCALID"),
        "{}",
        text(&out.stderr)
    );
}

/// An error case: name, environment, arguments, exit status.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str], i32);

/// Every way `bind` refuses, each a diagnostic with its code (snapshot), and nothing run.
#[test]
fn bind_errors() {
    let dir = tempfile::tempdir().unwrap();
    plan_here(dir.path());
    // Refusals that come before the node check use a plan of a fixture (2 ranks), so the
    // messages do not depend on this machine.
    let fixture = repo().join("examples/topologies/aws-p4d.24xlarge.yaml");
    std::fs::write(dir.path().join("two.yaml"), "command: [true]\ngpus: 2\n").unwrap();
    numaplan_in(
        dir.path(),
        &[
            "compile",
            "two.yaml",
            "--topology",
            fixture.to_str().unwrap(),
            "-o",
            "two-plan.yaml",
        ],
    )
    .ok();
    // Four GPUs known by UUID; and the same plan edited so that ranks 0 and 1 both have GPU 0
    // (numaplan never plans that; a hand-edited plan can say it).
    let four = repo().join("tests/cases/topologies/two-cpus-four-gpus.yaml");
    std::fs::write(
        dir.path().join("uuid.yaml"),
        "command: [true]\ncpu: {policy: node}\n",
    )
    .unwrap();
    numaplan_in(
        dir.path(),
        &[
            "compile",
            "uuid.yaml",
            "--topology",
            four.to_str().unwrap(),
            "-o",
            "uuid-plan.yaml",
        ],
    )
    .ok();
    let shared = std::fs::read_to_string(dir.path().join("uuid-plan.yaml"))
        .unwrap()
        .replacen(
            "  gpus: [1]\n  gpu_pci: ['0000:0f:00.0']",
            "  gpus: [0]\n  gpu_pci: ['0000:07:00.0']",
            1,
        )
        .replace(
            "  gpu_uuid: [GPU-8f3c1111-0000-4000-8000-000000000001]\n",
            "  gpu_uuid: [GPU-8f3c0c3a-0000-4000-8000-000000000000]\n",
        );
    std::fs::write(dir.path().join("shared-plan.yaml"), shared).unwrap();
    let marker = dir.path().join("ran");
    let touch = ["--", "touch", marker.to_str().unwrap()];
    let cases: &[Case] = &[
        ("no_local_rank", &[], &["two-plan.yaml"], 1),
        (
            "disagreeing_local_ranks",
            &[("LOCAL_RANK", "1"), ("OMPI_COMM_WORLD_LOCAL_RANK", "0")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "not_a_number",
            &[("LOCAL_RANK", "one")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "local_size_differs",
            &[("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "7")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "world_size_differs",
            &[("LOCAL_RANK", "0"), ("WORLD_SIZE", "16")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "rank_past_the_plan",
            &[("LOCAL_RANK", "9")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "set_unknown_key",
            &[("LOCAL_RANK", "0")],
            &["job.yaml", "--set", "cpu.polcy=exclusive"],
            1,
        ),
        (
            "set_bad_value",
            &[("LOCAL_RANK", "0")],
            &["job.yaml", "--set", "ranks_per_node=many"],
            1,
        ),
        (
            "set_on_a_plan",
            &[("LOCAL_RANK", "0")],
            &["plan.yaml", "--set", "cpu.policy=exclusive"],
            1,
        ),
        (
            "program_missing",
            &[("LOCAL_RANK", "0")],
            &["plan.yaml", "--", "/no/such/program"],
            127,
        ),
        (
            "local_rank_value",
            &[("NUMAPLAN_LOCAL_RANK", "first")],
            &["two-plan.yaml"],
            1,
        ),
        // An exported NUMAPLAN_LOCAL_RANK inherited by a launch nested in a rank: torchrun's
        // LOCAL_RANK says otherwise, and neither silently wins.
        (
            "inherited_local_rank",
            &[("NUMAPLAN_LOCAL_RANK", "0"), ("LOCAL_RANK", "1")],
            &["two-plan.yaml"],
            1,
        ),
        (
            "local_rank_past_the_local_size",
            &[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "2")],
            &["two-plan.yaml"],
            1,
        ),
        // torchrun's variables that disagree, and nothing settles it (issue 32).
        (
            "torchrun_local_rank_disagrees",
            &[
                ("LOCAL_RANK", "0"),
                ("RANK", "1"),
                ("GROUP_RANK", "0"),
                ("LOCAL_WORLD_SIZE", "2"),
            ],
            &["two-plan.yaml"],
            1,
        ),
        // `--local-rank gpu`: the rank whose GPUs the process sees (issue 31).
        (
            "gpu_none_visible",
            &[],
            &["two-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_visible_empty",
            &[("CUDA_VISIBLE_DEVICES", "")],
            &["two-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_two_seen_one_per_rank",
            &[("CUDA_VISIBLE_DEVICES", "0,1")],
            &["two-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_past_the_machine",
            &[("CUDA_VISIBLE_DEVICES", "8")],
            &["two-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_uuid_unknown",
            &[("CUDA_VISIBLE_DEVICES", "GPU-ffff")],
            &["uuid-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_uuid_without_uuids",
            &[("CUDA_VISIBLE_DEVICES", "GPU-8f3c")],
            &["two-plan.yaml", "--local-rank", "gpu"],
            1,
        ),
        (
            "gpu_shared_by_two_ranks",
            &[
                ("NUMAPLAN_LOCAL_RANK", "gpu"),
                ("CUDA_VISIBLE_DEVICES", "0"),
            ],
            &["shared-plan.yaml"],
            1,
        ),
    ];
    for (name, env, args, code) in cases {
        let args: Vec<&str> = if args.contains(&"--") {
            args.to_vec()
        } else {
            [args, &touch[..]].concat()
        };
        let out = bind(dir.path(), env, &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{name}: {err}");
        assert!(!marker.exists(), "{name}: nothing ran");
        insta::assert_snapshot!(format!("bind_{name}"), err);
    }
    // A plan of another machine: the node check, as `exec` makes it (this machine's counts in
    // the message).
    let out = bind(
        dir.path(),
        &[("LOCAL_RANK", "0")],
        &["two-plan.yaml", "--", "true"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error[E0411]: this node (")
            && err.contains("it does not look like topology `aws-p4d.24xlarge`"),
        "{err}"
    );
    // A rank whose memory policy prefers NUMA node 1, which this machine lacks: still the node
    // check, never a memory policy said to be refused (E0412, or W0217 and run without it).
    std::fs::write(dir.path().join("far.yaml"), "command: [true]\ngpus: [7]\n").unwrap();
    let fixture = repo().join("examples/topologies/aws-p4d.24xlarge.yaml");
    let far = [
        "compile",
        "far.yaml",
        "--topology",
        fixture.to_str().unwrap(),
    ];
    let far = numaplan_in(dir.path(), &[&far[..], &["-o", "far-plan.yaml"]].concat()).ok();
    assert!(far.is_empty());
    let out = bind(dir.path(), &[], &["far-plan.yaml", "--", "true"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error[E0411]: this node ("), "{err}");
    assert!(!err.contains("W0217") && !err.contains("E0412"), "{err}");
}

/// `--local-rank gpu` (and `NUMAPLAN_LOCAL_RANK=gpu`): a worker that Ray or an inference server
/// started with one GPU visible is the plan's rank of that GPU, by index or UUID (a MIG
/// instance by its GPU's), read back from /proc; with `gpu.visible: own` the worker's own
/// variable is left as its launcher set it; `--verbose` says which variable chose it; no
/// launcher's numbering is checked against the plan, and no visibility warning is given.
#[test]
fn bind_by_the_gpu_a_worker_sees() {
    let dir = tempfile::tempdir().unwrap();
    let four = repo().join("tests/cases/topologies/two-cpus-four-gpus.yaml");
    std::fs::write(
        dir.path().join("job.yaml"),
        "cpu: {policy: node}\ngpu: {visible: own}\nenv: {FROM_PLAN: yes}\n",
    )
    .unwrap();
    let compiled = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--topology",
            four.to_str().unwrap(),
            "-o",
            "plan.yaml",
        ],
    );
    assert_eq!(compiled.code, 0, "{}", compiled.stderr);
    // One GPU per worker, each named as a launcher names it: the CPU of its GPU's node.
    for (visible, rank, cpus) in [
        ("0", "0", "0"),
        ("1", "1", "0"),
        ("GPU-2b7d2", "2", "1"),
        ("MIG-GPU-2b7d3333/1/0", "3", "1"),
    ] {
        let out = bind(
            dir.path(),
            &[
                ("CUDA_VISIBLE_DEVICES", visible),
                ("WORLD_SIZE", "64"),
                ("LOCAL_RANK", "7"),
            ],
            &[
                &[
                    "plan.yaml",
                    "--local-rank",
                    "gpu",
                    "--force",
                    "--verbose",
                    "--",
                ][..],
                PROBE,
            ]
            .concat(),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{visible}: {err}");
        assert!(
            err.contains(&format!("rank {rank}: CPUs {cpus} memory"))
                && err.contains(&format!("via CUDA_VISIBLE_DEVICES={visible}")),
            "{err}"
        );
        assert!(!err.contains("renumbers"), "no visibility warning: {err}");
        // The worker's LOCAL_RANK (7) stays; the probe records under it.
        let s = seen(dir.path(), 7);
        assert_eq!(s.cpus, cpus, "{visible}");
        assert_eq!(
            s.env["CUDA_VISIBLE_DEVICES"], visible,
            "the worker's own variable stays"
        );
        assert_eq!(s.env["FROM_PLAN"], "yes");
    }
    // Started by someone else's code: NUMAPLAN_LOCAL_RANK=gpu, and ROCm's variables compose
    // (ROCR_VISIBLE_DEVICES narrows to GPUs 2 and 3, HIP_VISIBLE_DEVICES takes the second).
    let out = bind(
        dir.path(),
        &[
            ("NUMAPLAN_LOCAL_RANK", "gpu"),
            ("ROCR_VISIBLE_DEVICES", "2,3"),
            ("HIP_VISIBLE_DEVICES", "1"),
        ],
        &["plan.yaml", "--force", "--dry-run", "--format", "json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["local_rank"], 3);
    assert_eq!(
        report["via"],
        "ROCR_VISIBLE_DEVICES=2,3 HIP_VISIBLE_DEVICES=1"
    );
    assert_eq!(report["gpus"], serde_json::json!([3]));
    assert!(
        report["env"].get("CUDA_VISIBLE_DEVICES").is_none(),
        "the plan's own visibility is not set over the worker's: {report}"
    );
    // Without `gpu`, the same plan under the same variable is the launcher's rank, and the
    // plan's own visibility replaces the worker's.
    let out = bind(
        dir.path(),
        &[("LOCAL_RANK", "0"), ("CUDA_VISIBLE_DEVICES", "3")],
        &["plan.yaml", "--force", "--dry-run", "--format", "json"],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["local_rank"], 0);
    assert_eq!(report["env"]["CUDA_VISIBLE_DEVICES"], "0");
}

/// A GPU-visibility variable in the ranks' environment that renumbers the GPUs, where the plan
/// sets none, is a warning from `bind` and `exec` (fatal with `--deny-warnings`, before anything
/// runs); a variable listing every GPU in order, one the plan sets itself, or one that shows a
/// rank exactly its own GPUs, is not.
#[test]
fn a_visibility_variable_that_renumbers_the_gpus_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = repo().join("examples/topologies/aws-p4d.24xlarge.yaml");
    for (spec, out) in [
        ("command: [true]\ngpus: 2\n", "two-plan.yaml"),
        (
            "command: [true]\ngpus: 2\ngpu: {visible: own}\n",
            "own-plan.yaml",
        ),
    ] {
        std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
        numaplan_in(
            dir.path(),
            &[
                "compile",
                "spec.yaml",
                "--topology",
                fixture.to_str().unwrap(),
                "-o",
                out,
            ],
        )
        .ok();
    }
    let warned = "warning[W0214]: CUDA_VISIBLE_DEVICES=1 in the environment renumbers the GPUs a \
                  rank sees, but the plan placed its ranks next to GPU 0 by the machine's \
                  numbering and sets no CUDA_VISIBLE_DEVICES";
    let run = |plan: &str, visible: Option<&str>| {
        // Local rank 0 speaks for the node.
        let mut env = vec![("LOCAL_RANK", "0")];
        env.extend(visible.map(|v| ("CUDA_VISIBLE_DEVICES", v)));
        text(
            &bind(
                dir.path(),
                &env,
                &[plan, "--dry-run", "--force", "--", "true"],
            )
            .stderr,
        )
    };
    let err = run("two-plan.yaml", Some("1"));
    assert!(err.contains(warned), "{err}");
    for (plan, visible) in [
        ("two-plan.yaml", None),
        ("two-plan.yaml", Some("0,1,2,3,4,5,6,7")),
        ("own-plan.yaml", Some("1")),
        // The rank sees exactly its own GPU (torchrun --virtual-local-rank does this).
        ("two-plan.yaml", Some("0")),
    ] {
        let err = run(plan, visible);
        assert!(
            !err.contains("VISIBLE_DEVICES"),
            "{plan} {visible:?}: {err}"
        );
    }
    // --deny-warnings: refused before the node check.
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args([
            "--deny-warnings",
            "bind",
            "two-plan.yaml",
            "--force",
            "--",
            "true",
        ])
        .current_dir(dir.path())
        .env_clear_launchers()
        .env("LOCAL_RANK", "1")
        .env("CUDA_VISIBLE_DEVICES", "0")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error[E0214]") && !err.contains("E0411"),
        "{err}"
    );
    // `exec` checks the environment its ranks inherit, for all of them.
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "two-plan.yaml", "--dry-run", "--force"])
        .current_dir(dir.path())
        .env_clear_launchers()
        .env("CUDA_VISIBLE_DEVICES", "4,5")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("CUDA_VISIBLE_DEVICES=4,5 in the environment renumbers the GPUs a rank sees, but the plan placed its ranks next to GPUs 0, 1"),
        "{err}"
    );
}

/// `--dry-run --format json` is what the Python package reads.
#[test]
fn bind_dry_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_here(dir.path());
    let out = bind(
        dir.path(),
        &[("LOCAL_RANK", "0")],
        &[
            "plan.yaml",
            "--dry-run",
            "--format",
            "json",
            "--",
            "python",
            "train.py",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["numaplan_bind"], 1);
    assert_eq!(v["local_rank"], 0);
    assert_eq!(v["via"], "LOCAL_RANK");
    assert_eq!(v["cpus"], plan["ranks"][0]["cpus"]);
    assert_eq!(v["memory"]["numa_maps"], "bind:0");
    assert_eq!(v["argv"], serde_json::json!(["python", "train.py"]));
    assert_eq!(v["env"]["FROM_PLAN"], "yes");
}

/// A process already narrowed to its own rank's CPUs (a launcher that bound it, or a
/// `numaplan.spawn` child calling `numaplan.bind`) binds as that rank: only its own CPUs must be
/// within its affinity, not the other ranks'. As another rank it is refused (E0411).
#[test]
fn bind_checks_only_its_own_ranks_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_here(dir.path());
    let ranks = plan["ranks"].as_array().unwrap();
    if ranks.len() < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let cpus = ranks[1]["cpus"].as_str().unwrap();
    let under_taskset = |local: &str| {
        Command::new("taskset")
            .args([
                "-c",
                cpus,
                env!("CARGO_BIN_EXE_numaplan"),
                "bind",
                "plan.yaml",
            ])
            .args(["--local-rank", local, "--"])
            .args(PROBE)
            .current_dir(dir.path())
            .env("OUT", dir.path())
            .env_clear_launchers()
            .output()
            .unwrap()
    };
    let own = under_taskset("1");
    assert!(own.status.success(), "{}", text(&own.stderr));
    assert_eq!(seen(dir.path(), 1).cpus, cpus);
    let other = under_taskset("0");
    assert_eq!(other.status.code(), Some(1), "{}", text(&other.stderr));
    assert!(
        text(&other.stderr).contains("error[E0411]"),
        "{}",
        text(&other.stderr)
    );
    assert!(!dir.path().join("bind-0").exists(), "rank 0 must not run");
}

/// `mpirun:` in the spec reaches the real mpirun of the `--emit mpirun` script: Open MPI's
/// words under Open MPI (here `--allow-run-as-root` in place of the environment variables, and
/// `-x` of a variable with a value), MPICH's under MPICH, `extra` under both; a binding
/// option is refused at compile time.
#[test]
fn the_mpirun_script_passes_the_specs_mpirun_options() {
    for mpirun in ["mpirun.openmpi", "mpiexec.mpich"] {
        let dir = tempfile::tempdir().unwrap();
        let job = format!(
            "command: [{}]\ngpus: none\nranks_per_node: 1\nmemory: {{policy: bind}}\n\
             env: {{FROM_PLAN: yes}}\n\
             mpirun: {{openmpi: [--allow-run-as-root, -x, 'SEEN=open mpi'], \
             mpich: [-genv, SEEN, 'mpich hydra'], extra: [-v]}}\n",
            probe_words()
        );
        let plan = common::emit_here(dir.path(), &job, "mpirun", "mpirun.sh");
        check_script(&dir.path().join("mpirun.sh"));
        // No OMPI_ALLOW_RUN_AS_ROOT: as root, Open MPI starts only with the spec's option.
        let out = Command::new(dir.path().join("mpirun.sh"))
            .current_dir(dir.path())
            .env("OUT", dir.path())
            .env("MPIRUN", mpirun)
            .env("PATH", path_with_numaplan())
            .env_remove("OMPI_ALLOW_RUN_AS_ROOT")
            .env_remove("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
            .env_clear_launchers()
            .output()
            .unwrap();
        assert!(out.status.success(), "{mpirun}: {}", text(&out.stderr));
        let seen = assert_bound(dir.path(), &plan);
        let expected = match mpirun {
            "mpirun.openmpi" => "open mpi",
            _ => "mpich hydra",
        };
        assert_eq!(seen[0].env.get("SEEN").map(String::as_str), Some(expected));
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nmpirun: {openmpi: [--bind-to, core]}\n",
    )
    .unwrap();
    let run = common::numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "mpirun"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`--bind-to` would bind the ranks, which `numaplan bind` does"),
        "{}",
        run.stderr
    );
}

/// Ranks that share this machine's CPUs (`policy: node`), so that no launcher's one-CPU binding
/// is the plan's.
fn shared_plan_here(dir: &Path) -> serde_json::Value {
    let job = format!(
        "command: [{}]\ngpus: none\nranks_per_node: 2\ncpu: {{policy: node}}\n\
         memory: {{policy: bind}}\nenv: {{FROM_PLAN: yes}}\n",
        probe_words()
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let run = common::numaplan_in(dir, &["-q", "compile", "job.yaml", "-o", "plan.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json = common::numaplan_in(dir, &["-q", "compile", "job.yaml", "--format", "json"]).ok();
    serde_json::from_str(&json).unwrap()
}

/// A launcher that binds first (Open MPI's and MPICH's `--bind-to hwthread`, srun's
/// `--cpu-bind=map_cpu`) has its binding replaced by the plan's, and `bind` says so once
/// (W0215, from local rank 0); under `--deny-warnings` nothing runs. Without the launcher's
/// binding, nothing is said.
#[test]
fn bind_replaces_a_launchers_binding_and_says_so() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let numaplan = env!("CARGO_BIN_EXE_numaplan");
    let srun = std::env::var("NUMAPLAN_SLURM").as_deref() == Ok("1");
    let mut launchers = vec![
        (
            "Open MPI's mpirun",
            vec![
                "mpirun.openmpi",
                "--bind-to",
                "hwthread",
                "-np",
                "2",
                "-x",
                "OUT",
            ],
        ),
        (
            "MPICH's mpiexec",
            vec!["mpiexec.mpich", "-bind-to", "hwthread", "-n", "2"],
        ),
    ];
    if srun {
        launchers.push((
            "srun",
            vec![
                "srun",
                "-n",
                "2",
                "--cpu-bind=map_cpu:0,1",
                "--time=00:02:00",
            ],
        ));
    }
    for (name, line) in launchers {
        for deny in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let plan = shared_plan_here(dir.path());
            let mut cmd = Command::new(line[0]);
            cmd.args(&line[1..]).arg(numaplan);
            if deny {
                cmd.arg("--deny-warnings");
            }
            if name != "srun" {
                // srun needs SLURM_CONF; the MPIs must not see a launcher's variables.
                cmd.env_clear_launchers();
            }
            let out = mpi_env(&mut cmd)
                .args(["bind", "plan.yaml", "--"])
                .args(PROBE)
                .current_dir(dir.path())
                .env("OUT", dir.path())
                .output()
                .unwrap();
            let stderr = text(&out.stderr);
            let said = format!("warning[W0215]: {name}");
            assert_eq!(
                stderr.matches(&said).count(),
                1,
                "{name}, deny {deny}: {stderr}"
            );
            if deny {
                assert!(!out.status.success(), "{name}: {stderr}");
                assert!(!dir.path().join("bind-0").exists(), "{name}: a rank ran");
            } else {
                assert!(out.status.success(), "{name}: {stderr}");
                assert_bound(dir.path(), &plan);
            }
        }
    }
    // The launcher told not to bind: nothing to say.
    let dir = tempfile::tempdir().unwrap();
    shared_plan_here(dir.path());
    let out = mpi_env(Command::new("mpirun.openmpi").args([
        "--bind-to",
        "none",
        "-np",
        "2",
        "-x",
        "OUT",
        numaplan,
    ]))
    .args(["bind", "plan.yaml", "--"])
    .args(PROBE)
    .current_dir(dir.path())
    .env("OUT", dir.path())
    .env_clear_launchers()
    .output()
    .unwrap();
    assert!(
        out.status.success() && !text(&out.stderr).contains("W0215"),
        "{}",
        text(&out.stderr)
    );
}

/// A cgroup cpuset on this kernel, made for one test and removed after it: cgroup v1's cpuset
/// hierarchy, or v2's root with the cpuset controller (root only).
struct Cpuset(std::path::PathBuf);

impl Cpuset {
    fn new(cpus: &str) -> Option<Cpuset> {
        let name = format!("numaplan-test-{}", std::process::id());
        let v1 = Path::new("/sys/fs/cgroup/cpuset");
        let parent = if v1.join("cpuset.cpus").exists() {
            v1.to_path_buf()
        } else {
            let v2 = Path::new("/sys/fs/cgroup");
            std::fs::write(v2.join("cgroup.subtree_control"), "+cpuset").ok()?;
            v2.to_path_buf()
        };
        let cpuset = Cpuset(parent.join(name));
        std::fs::create_dir(&cpuset.0).ok()?;
        std::fs::write(cpuset.0.join("cpuset.cpus"), cpus).ok()?;
        std::fs::write(cpuset.0.join("cpuset.mems"), "0").ok()?;
        Some(cpuset)
    }
}

impl Drop for Cpuset {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A rank started inside a cgroup cpuset of one CPU, by a launcher that binds (Open MPI's
/// variables): its affinity is the cgroup's, so there is no launcher binding to replace, and the
/// plan's other CPU is refused as outside its affinity (E0411), with no W0215. Were the cgroup
/// not found (read as every online CPU), `bind` would take the cgroup for Open MPI's binding and
/// "replace" it with a CPU the cgroup does not allow.
#[test]
fn a_cgroup_cpuset_is_no_launchers_binding() {
    let two_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let is_root = text(&Command::new("id").arg("-u").output().unwrap().stdout).trim() == "0";
    if !two_cpus || !is_root {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = shared_plan_here(dir.path());
    assert_eq!(plan["ranks"][0]["cpus"], "0-1", "{plan}");
    let Some(cpuset) = Cpuset::new("1") else {
        // A container whose cgroup tree is read-only, or v2 without the cpuset controller.
        eprintln!(
            "a_cgroup_cpuset_is_no_launchers_binding: skipped, no cgroup cpuset could be made"
        );
        return;
    };
    let out = Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$1/cgroup.procs\" && exec \"$0\" bind plan.yaml -- true",
        ])
        .arg(env!("CARGO_BIN_EXE_numaplan"))
        .arg(&cpuset.0)
        .env_clear_launchers()
        .env("OMPI_COMM_WORLD_LOCAL_RANK", "0")
        .env("OMPI_COMM_WORLD_LOCAL_SIZE", "2")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("W0215"), "{stderr}");
    assert!(
        stderr.contains("error[E0411]")
            && stderr.contains("CPUs 0 are outside this process's affinity (it may use CPUs 1"),
        "{stderr}"
    );
}

/// A worker of a multi-node plan bound by the GPU it sees, with no launcher to number it:
/// every such worker (not only local rank 0) says that nothing gives its RANK, NODE_RANK and
/// MASTER_ADDR while the plan sets WORLD_SIZE (W0216, fatal under `--deny-warnings`); a worker
/// whose environment says them binds without a word. Before, they were silently left unset.
#[test]
fn a_worker_of_a_multi_node_plan_that_nothing_numbers_is_warned() {
    let dir = tempfile::tempdir().unwrap();
    let four = repo().join("tests/cases/topologies/two-cpus-four-gpus.yaml");
    std::fs::write(
        dir.path().join("job.yaml"),
        "nodes: 2\ncpu: {policy: node}\ngpu: {visible: own}\n",
    )
    .unwrap();
    let topology = four.to_str().unwrap();
    let args = [
        "job.yaml",
        "--topology",
        topology,
        "--local-rank",
        "gpu",
        "--force",
        "--dry-run",
    ];
    let out = bind(dir.path(), &[("CUDA_VISIBLE_DEVICES", "3")], &args);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.starts_with(
            "warning[W0216]: local rank 3 of a 2-node plan: nothing says its RANK, NODE_RANK \
             and MASTER_ADDR (no launcher variable; WORLD_SIZE=8 comes from the plan)"
        ),
        "{err}"
    );
    let denied = bind(
        dir.path(),
        &[("CUDA_VISIBLE_DEVICES", "3")],
        &[&["--deny-warnings"][..], &args].concat(),
    );
    assert_eq!(denied.status.code(), Some(1), "{}", text(&denied.stderr));
    let numbered = bind(
        dir.path(),
        &[
            ("CUDA_VISIBLE_DEVICES", "3"),
            ("RANK", "7"),
            ("NODE_RANK", "1"),
            ("MASTER_ADDR", "head"),
        ],
        &args,
    );
    assert!(numbered.status.success());
    assert!(
        !text(&numbered.stderr).contains("W0216"),
        "{}",
        text(&numbered.stderr)
    );
}

/// A pod or container that runs one worker has no launcher: with one local rank in the plan,
/// `bind` takes it, and `--verbose` says why; with two it still needs the launcher's word.
#[test]
fn one_local_rank_needs_no_launcher_variable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("one.yaml"),
        "command: [true]\ngpus: none\nmemory: {policy: none}\n",
    )
    .unwrap();
    let out = bind(
        dir.path(),
        &[],
        &[
            "--verbose",
            "one.yaml",
            "--",
            "sh",
            "-c",
            "echo \"$LOCAL_RANK\"",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "0\n");
    assert!(
        err.starts_with("rank 0: CPUs ") && err.contains("via the plan's only local rank"),
        "{err}"
    );
    let out = bind(
        dir.path(),
        &[],
        &["one.yaml", "--set", "ranks_per_node=2", "--", "true"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error[E0419]"),
        "{}",
        text(&out.stderr)
    );
}
