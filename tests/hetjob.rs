//! Plans of several groups (`groups:`) on a real Slurm cluster of 3 nodes
//! (tests/slurm/slurm-multi.sh; scripts/test.sh starts it and sets NUMAPLAN_MSLURM_CONF when run
//! as root): the heterogeneous batch files of `--emit sbatch` (Slurm binds every component's
//! tasks) and `--emit sbatch-exec` (one `numaplan exec --group` per node) run a job of two
//! groups that differ in ranks per node, CPUs per rank and policy. Every task reads its CPUs
//! back, its global rank is Slurm's SLURM_PROCID, and all ranks are one world: one MPI program
//! (MPICH, `srun --mpi=pmi2`) across the components, or every rank meeting rank 0 at
//! MASTER_ADDR.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn cluster() -> Option<String> {
    std::env::var("NUMAPLAN_MSLURM_CONF").ok()
}

/// A job of two groups on this machine's shape: `pairs`, 1 node of 2 one-CPU ranks (policy
/// exclusive), and `wide`, 2 nodes of 1 rank on the whole node (policy node). Every rank prints
/// `TASK SLURM_PROCID RANK WORLD_SIZE LOCAL_RANK NODE_RANK NUMAPLAN_GROUP host CPUs`, then runs
/// `program`.
fn job(program: &Path, port: u16, output: &Path) -> String {
    job_with(program, port, output, "")
}

/// `job`, with `wide_extra` added to the `wide` group (`topology: other.yaml`).
fn job_with(program: &Path, port: u16, output: &Path, wide_extra: &str) -> String {
    format!(
        r#"name: numaplan-hetjob
command:
  - bash
  - -c
  - 'echo "TASK ${{SLURM_PROCID:--}} $RANK $WORLD_SIZE $LOCAL_RANK $NODE_RANK $NUMAPLAN_GROUP $(cat /proc/sys/kernel/hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2)"; exec "$0"'
  - {}
gpus: none
memory: {{policy: none}}
rendezvous: {{port: {port}}}
slurm: {{time: "00:02:00", exclusive: false, extra: ["--output={}"]}}
groups:
  - name: pairs
    nodes: 1
    ranks_per_node: 2
    cpu: {{policy: exclusive}}
  - name: wide
    nodes: 2
    ranks_per_node: 1
    cpu: {{policy: node}}
{wide_extra}"#,
        program.display(),
        output.display()
    )
}

/// tests/slurm/rendezvous.c, built in `dir`.
fn rendezvous(dir: &Path) -> PathBuf {
    let program = dir.join("rendezvous");
    common::cc(
        &["-O2", "-Wall", "-Werror"],
        "tests/slurm/rendezvous.c",
        &program,
    );
    program
}

/// Compiles `job` for this machine as `kind` and submits it with `envs`; returns how it ended,
/// its output and the plan (JSON).
fn submit(
    dir: &Path,
    job: &str,
    kind: &str,
    output: &Path,
    envs: &[(&str, &str)],
) -> (common::Ended, String, Value) {
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let args = ["compile", "job.yaml", "--topology", "discover", "-q"];
    let file = format!("job.{kind}");
    common::numaplan_in(dir, &[&args[..], &["--emit", kind, "-o", &file]].concat()).ok();
    common::check_script(&dir.join(&file));
    let plan = common::numaplan_in(dir, &[&args[..], &["--format", "json"]].concat()).ok();
    let conf = cluster().unwrap();
    let mut all = vec![
        ("SLURM_CONF", conf.as_str()),
        ("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan")),
    ];
    all.extend_from_slice(envs);
    let ended = common::sbatch(&dir.join(&file), &all);
    let text = std::fs::read_to_string(output).unwrap_or_default();
    (ended, text, serde_json::from_str(&plan).unwrap())
}

/// Each global rank's group, local rank, node within its group and planned CPUs, from the plan.
fn planned(plan: &Value) -> BTreeMap<u64, (String, u64, u64, String)> {
    let mut out = BTreeMap::new();
    for g in plan["groups"].as_array().unwrap() {
        let first = g["first_rank"].as_u64().unwrap();
        let per_node = g["ranks_per_node"].as_u64().unwrap();
        for node in 0..g["nodes"].as_u64().unwrap() {
            for r in g["ranks"].as_array().unwrap() {
                let local = r["local_rank"].as_u64().unwrap();
                let cpus = r["cpus"].as_str().unwrap().to_string();
                let name = g["group"].as_str().unwrap().to_string();
                out.insert(first + node * per_node + local, (name, local, node, cpus));
            }
        }
    }
    out
}

/// Every rank reported once, with the plan's global rank, world size, group and CPUs, on its
/// group's hosts (the components' hosts in order: `pairs` on the first, `wide` on the next two);
/// `procid`: whether SLURM_PROCID is the task's (one task per rank) and equals the rank.
fn every_rank_as_planned(text: &str, plan: &Value, hosts: &[String], procid: bool) {
    let planned = planned(plan);
    assert_eq!(planned.len(), 4, "{plan}");
    let mut seen = BTreeMap::new();
    for w in common::tagged_lines(text, "TASK ") {
        let rank: u64 = w[2].parse().unwrap();
        assert!(
            seen.insert(rank, w.clone()).is_none(),
            "rank {rank} twice:\n{text}"
        );
    }
    assert_eq!(seen.len(), planned.len(), "{text}");
    for (rank, (group, local, node, cpus)) in &planned {
        let w = &seen[rank];
        let first_node = if group == "pairs" { 0 } else { 1 };
        if procid {
            assert_eq!(
                w[1],
                rank.to_string(),
                "SLURM_PROCID of rank {rank}:\n{text}"
            );
        }
        assert_eq!(w[3], "4", "WORLD_SIZE of rank {rank}:\n{text}");
        assert_eq!(
            w[4],
            local.to_string(),
            "LOCAL_RANK of rank {rank}:\n{text}"
        );
        assert_eq!(
            w[5],
            (first_node + node).to_string(),
            "NODE_RANK of {rank}:\n{text}"
        );
        assert_eq!(w[6], group, "NUMAPLAN_GROUP of rank {rank}:\n{text}");
        assert_eq!(
            w[7],
            hosts[(first_node + node) as usize],
            "host of rank {rank}:\n{text}"
        );
        assert_eq!(&w[8], cpus, "CPUs of rank {rank}:\n{text}");
    }
}

/// `--emit sbatch`: one heterogeneous srun step; Slurm binds each component with its own masks,
/// numbers the tasks component by component as the plan does, and one MPI program spans both
/// components.
#[test]
fn one_heterogeneous_step_is_one_mpi_world() {
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("mpi_world");
    common::mpi_world(&program);
    let output = dir.path().join("job.out");
    let job = job(&program, 29611, &output);
    let envs = [("SLURM_MPI_TYPE", "pmi2")];
    let (ended, text, plan) = submit(dir.path(), &job, "sbatch", &output, &envs);
    assert_eq!(ended.state, "COMPLETED", "job {}:\n{text}", ended.id);
    assert_eq!(ended.hosts.len(), 3, "{:?}", ended.hosts);
    every_rank_as_planned(&text, &plan, &ended.hosts, true);
    // MPI_COMM_WORLD is the whole job: 4 ranks, whose numbers sum to 6.
    let mut mpi: Vec<String> = common::tagged_lines(&text, "MPI ")
        .iter()
        .map(|w| format!("{} {} {}", w[1], w[2], w[3]))
        .collect();
    mpi.sort();
    assert_eq!(mpi, ["0 4 6", "1 4 6", "2 4 6", "3 4 6"], "{text}");
}

/// `--emit sbatch-exec`: one `numaplan exec --group` per node, in one heterogeneous step; each
/// reads its ranks' bindings back under its group's heading, and every rank meets rank 0 at the
/// first component's first node.
#[test]
fn sbatch_exec_runs_each_group_on_its_nodes() {
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = rendezvous(dir.path());
    let output = dir.path().join("job.out");
    let port = 29612;
    let job = job(&program, port, &output);
    let (ended, text, plan) = submit(dir.path(), &job, "sbatch-exec", &output, &[]);
    assert_eq!(ended.state, "COMPLETED", "job {}:\n{text}", ended.id);
    every_rank_as_planned(&text, &plan, &ended.hosts, false);
    let mut headings: Vec<&str> = text.lines().filter(|l| l.starts_with("group `")).collect();
    headings.sort();
    assert_eq!(
        headings,
        [
            "group `pairs`, node 0 of 1:",
            "group `wide`, node 0 of 2:",
            "group `wide`, node 1 of 2:"
        ],
        "{text}"
    );
    assert!(!text.contains("MISMATCH"), "{text}");
    let heard = common::tagged_lines(&text, "RDV 0 ");
    assert_eq!(heard.len(), 1, "{text}");
    assert_eq!(heard[0][4], format!("{}:{port}", ended.hosts[0]), "{text}");
    let mut peers: Vec<&str> = heard[0][6].split(',').collect();
    peers.sort();
    let expected: Vec<String> = [(1, 0), (2, 1), (3, 2)]
        .iter()
        .map(|(r, h)| format!("{r}@{}", ended.hosts[*h]))
        .collect();
    assert_eq!(peers, expected, "{text}");
}

/// A group planned for a machine of another shape than its nodes (this machine with one more,
/// memory-only, NUMA node): its tasks check their node against their own group's machine and
/// refuse, naming the node and the difference, and no rank of that group starts; the step fails.
#[test]
fn a_component_on_nodes_of_another_shape_refuses() {
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (other, planned) = common::one_more_node_fixture();
    std::fs::write(dir.path().join("other.yaml"), other).unwrap();
    let program = rendezvous(dir.path());
    let output = dir.path().join("job.out");
    let job = job_with(&program, 29613, &output, "    topology: other.yaml\n");
    let (ended, text, _) = submit(dir.path(), &job, "sbatch", &output, &[]);
    assert_eq!(ended.state, "FAILED", "{text}");
    let expected = format!("{} NUMA nodes, the plan expects {planned}", planned - 1);
    let refused = ended.hosts[1..]
        .iter()
        .any(|h| text.contains(&format!("numaplan: node {h} has {expected}\n")));
    assert!(refused, "no node of `wide` refused:\n{text}");
    assert!(
        text.contains("does not look like topology other-machine"),
        "{text}"
    );
    let wide_started = common::tagged_lines(&text, "TASK ")
        .iter()
        .any(|w| w[6] == "wide");
    assert!(!wide_started, "a rank of `wide` started:\n{text}");
}

/// A heterogeneous batch file, written as a user writes one around a launch script: component
/// 0 one node, component 1 two, one task per node, and one step `srun SCRIPT : SCRIPT`.
fn het_batch(dir: &Path, script: &str, output: &Path, envs: &str) -> PathBuf {
    let file = dir.join("het.sbatch");
    std::fs::write(
        &file,
        format!(
            "#!/bin/bash\n#SBATCH --job-name=numaplan-het-launch --time=00:02:00 --output={}\n\
             #SBATCH --nodes=1 --ntasks-per-node=1 --exclusive=user\n#SBATCH hetjob\n\
             #SBATCH --nodes=2 --ntasks-per-node=1 --exclusive=user\n\
             {envs}\nsrun --kill-on-bad-exit=1 {script} : {script}\n",
            output.display()
        ),
    )
    .unwrap();
    file
}

/// `--emit torchrun` in a heterogeneous job, run on every node without flags: each node finds
/// its group from its Slurm component and its node rank within that group (SLURM_NODEID counts
/// the whole step), and all four ranks are one world meeting at the first component's node.
#[test]
fn the_torchrun_script_finds_its_group_and_node_in_a_heterogeneous_job() {
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = rendezvous(dir.path());
    let output = dir.path().join("job.out");
    let port = 29614;
    std::fs::write(dir.path().join("job.yaml"), job(&program, port, &output)).unwrap();
    let args = ["compile", "job.yaml", "--topology", "discover", "-q"];
    common::numaplan_in(
        dir.path(),
        &[&args[..], &["--emit", "torchrun", "-o", "job.torchrun"]].concat(),
    )
    .ok();
    let plan = common::numaplan_in(dir.path(), &[&args[..], &["--format", "json"]].concat()).ok();
    let plan: Value = serde_json::from_str(&plan).unwrap();
    let stand_in = common::repo().join("tests/bind/torchrun");
    let batch = het_batch(
        dir.path(),
        &dir.path().join("job.torchrun").display().to_string(),
        &output,
        &format!(
            "export TORCHRUN={} TORCHRUN_STANDIN_DIR={}",
            stand_in.display(),
            dir.path().display()
        ),
    );
    let conf = cluster().unwrap();
    let envs = [
        ("SLURM_CONF", conf.as_str()),
        ("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan")),
    ];
    let ended = common::sbatch(&batch, &envs);
    let text = std::fs::read_to_string(&output).unwrap_or_default();
    assert_eq!(ended.state, "COMPLETED", "job {}:\n{text}", ended.id);
    every_rank_as_planned(&text, &plan, &ended.hosts, false);
    let heard = common::tagged_lines(&text, "RDV 0 ");
    assert_eq!(heard.len(), 1, "{text}");
    assert_eq!(heard[0][4], format!("{}:{port}", ended.hosts[0]), "{text}");
}

/// `--emit mpirun` in a heterogeneous job: mpirun's Slurm launcher reaches only the first
/// component (Hydra then hangs), so the script refuses at once, saying what to run instead,
/// under MPICH and Open MPI alike; the job fails in seconds, and no rank started.
#[test]
fn the_mpirun_script_refuses_a_heterogeneous_job_at_once() {
    if cluster().is_none() {
        return;
    }
    for mpirun in ["mpiexec.mpich", "mpirun.openmpi"] {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("job.out");
        let job = job(Path::new("/bin/true"), 29615, &output);
        std::fs::write(dir.path().join("job.yaml"), job).unwrap();
        let args = ["compile", "job.yaml", "--topology", "discover", "-q"];
        common::numaplan_in(
            dir.path(),
            &[&args[..], &["--emit", "mpirun", "-o", "job.mpirun"]].concat(),
        )
        .ok();
        common::check_script(&dir.path().join("job.mpirun"));
        let file = dir.path().join("het.sbatch");
        std::fs::write(
            &file,
            format!(
                "#!/bin/bash\n#SBATCH --job-name=numaplan-het-mpirun --time=00:01:00 --output={}\n\
                 #SBATCH --nodes=1 --ntasks-per-node=2 --exclusive=user\n#SBATCH hetjob\n\
                 #SBATCH --nodes=2 --ntasks-per-node=1 --exclusive=user\n\
                 MPIRUN={mpirun} {}\n",
                output.display(),
                dir.path().join("job.mpirun").display()
            ),
        )
        .unwrap();
        let conf = cluster().unwrap();
        let envs = [
            ("SLURM_CONF", conf.as_str()),
            ("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan")),
        ];
        let started = std::time::Instant::now();
        let ended = common::sbatch(&file, &envs);
        let text = std::fs::read_to_string(&output).unwrap_or_default();
        assert_eq!(ended.state, "FAILED", "{mpirun}, job {}:\n{text}", ended.id);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{mpirun}: {text}"
        );
        assert!(
            text.contains("cannot start ranks across the components")
                && text.contains("--emit sbatch"),
            "{mpirun}: {text}"
        );
        assert!(
            common::tagged_lines(&text, "TASK ").is_empty(),
            "{mpirun}: {text}"
        );
    }
}
