//! Multi-node jobs on a real Slurm cluster of 3 nodes, each its own network namespace with its
//! own hostname and address (tests/slurm/slurm-multi.sh; scripts/test.sh starts it and sets
//! NUMAPLAN_MSLURM_CONF to its slurm.conf when run as root). For `--emit sbatch` (Slurm binds
//! every task) and `--emit sbatch-exec` (one `numaplan exec` per node) it submits generated
//! files for 2 and 3 nodes whose ranks report their place, environment and binding, and then
//! meet at MASTER_ADDR:MASTER_PORT across the namespaces; and it checks that a node of another
//! shape than the plan's topology refuses to start on both paths.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The cluster's slurm.conf, when the tests should run.
fn cluster() -> Option<String> {
    std::env::var("NUMAPLAN_MSLURM_CONF").ok()
}

/// `tests/slurm/rendezvous.c`, built once per test into `dir`.
fn rendezvous(dir: &Path) -> PathBuf {
    let bin = dir.join("rendezvous");
    common::cc(
        &["-O2", "-Wall", "-Werror"],
        "tests/slurm/rendezvous.c",
        &bin,
    );
    bin
}

/// A job whose every rank prints a TASK line (RANK LOCAL_RANK NODE_RANK GROUP_RANK WORLD_SIZE
/// MASTER_ADDR MASTER_PORT hostname Cpus_allowed_list numa_maps-policy), then meets the others
/// through `rendezvous`.
fn job(nodes: u32, port: u16, memory: &str, rendezvous: &Path, output: &Path) -> String {
    format!(
        r#"name: numaplan-multinode
command:
  - bash
  - -c
  - 'echo "TASK $RANK $LOCAL_RANK $NODE_RANK $GROUP_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $(cat /proc/sys/kernel/hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(head -1 /proc/self/numa_maps | cut -d" " -f2)"; exec "$0"'
  - {}
gpus: none
nodes: {nodes}
ranks_per_node: 2
memory: {{policy: {memory}}}
rendezvous: {{port: {port}}}
slurm: {{time: "00:02:00", extra: ["--output={}"]}}
"#,
        rendezvous.display(),
        output.display()
    )
}

/// Compiles `job` for this machine (or `topology`) as `kind`, submits it to the cluster with
/// `NUMAPLAN` pointing at this build, and returns how it ended, its output and the plan.
fn submit(
    dir: &Path,
    job: &str,
    kind: &str,
    topology: &str,
    output: &Path,
) -> (common::Ended, String, Value) {
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let args = ["compile", "job.yaml", "--topology", topology];
    let file = format!("job.{kind}");
    common::numaplan_in(dir, &[&args[..], &["--emit", kind, "-o", &file]].concat()).ok();
    let plan = common::numaplan_in(dir, &[&args[..], &["--format", "json"]].concat()).ok();
    let conf = cluster().unwrap();
    let ended = common::sbatch(
        &dir.join(&file),
        &[
            ("SLURM_CONF", conf.as_str()),
            ("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan")),
        ],
    );
    let text = std::fs::read_to_string(output).unwrap_or_default();
    (ended, text, serde_json::from_str(&plan).unwrap())
}

/// Runs a `nodes`-node job through `kind` and checks every rank's report against the plan and
/// the allocation, and that every rank met rank 0 at MASTER_ADDR:MASTER_PORT.
fn every_rank_is_placed_and_meets_rank_0(kind: &str, nodes: u32, port: u16) {
    if cluster().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("job.out");
    let bin = rendezvous(dir.path());
    let job = job(nodes, port, "bind", &bin, &output);
    let (ended, text, plan) = submit(dir.path(), &job, kind, "discover", &output);
    assert_eq!(ended.state, "COMPLETED", "job {}:\n{text}", ended.id);
    assert_eq!(ended.hosts.len(), nodes as usize, "{:?}", ended.hosts);
    let ranks = plan["ranks"].as_array().unwrap();
    let per_node = ranks.len() as u32;
    let world = nodes * per_node;
    let master = &ended.hosts[0];

    // Every global rank reports exactly once, with the values the plan and allocation give it.
    let mut seen = BTreeMap::new();
    for words in common::tagged_lines(&text, "TASK ") {
        let rank: u32 = words[1].parse().unwrap();
        assert!(
            seen.insert(rank, words.clone()).is_none(),
            "rank {rank} twice:\n{text}"
        );
    }
    assert_eq!(seen.len() as u32, world, "{text}");
    for (&rank, words) in &seen {
        let (node, local) = (rank / per_node, rank % per_node);
        let planned = &ranks[local as usize];
        let expected = [
            "TASK".to_string(),
            rank.to_string(),
            local.to_string(),
            node.to_string(),
            node.to_string(),
            world.to_string(),
            master.clone(),
            port.to_string(),
            ended.hosts[node as usize].clone(),
            planned["cpus"].as_str().unwrap().to_string(),
            format!("bind:{}", planned["memory"]["nodes"].as_str().unwrap()),
        ];
        assert_eq!(words, &expected, "rank {rank}:\n{text}");
    }

    // Rank 0 listened on MASTER_ADDR on its own node and heard every other rank, from its node.
    let heard = common::tagged_lines(&text, "RDV 0 ");
    assert_eq!(heard.len(), 1, "{text}");
    assert_eq!(heard[0][2], master.as_str(), "{text}");
    assert_eq!(heard[0][4], format!("{master}:{port}"), "{text}");
    let mut peers: Vec<&str> = heard[0][6].split(',').collect();
    peers.sort_by_key(|p| p.split('@').next().unwrap().parse::<u32>().unwrap());
    let expected: Vec<String> = (1..world)
        .map(|r| format!("{r}@{}", ended.hosts[(r / per_node) as usize]))
        .collect();
    assert_eq!(peers, expected, "{text}");
    let acked = common::tagged_lines(&text, "RDV ")
        .into_iter()
        .filter(|w| w[1] != "0" && w[3] == "connected" && w[6] == "ack")
        .count();
    assert_eq!(acked as u32, world - 1, "{text}");
    if kind == "sbatch-exec" {
        // numaplan exec --verify read every rank's binding back on every node: one table each,
        // headed `node K of N:`.
        let mut headings: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("node ") && l.ends_with(':'))
            .collect();
        headings.sort();
        let expected: Vec<String> = (0..nodes)
            .map(|k| format!("node {k} of {nodes}:"))
            .collect();
        assert_eq!(headings, expected, "{text}");
        assert!(!text.contains("MISMATCH"), "{text}");
    }
}

#[test]
fn sbatch_two_nodes() {
    every_rank_is_placed_and_meets_rank_0("sbatch", 2, 29601);
}

#[test]
fn sbatch_three_nodes() {
    every_rank_is_placed_and_meets_rank_0("sbatch", 3, 29602);
}

#[test]
fn sbatch_exec_two_nodes() {
    every_rank_is_placed_and_meets_rank_0("sbatch-exec", 2, 29603);
}

#[test]
fn sbatch_exec_three_nodes() {
    every_rank_is_placed_and_meets_rank_0("sbatch-exec", 3, 29604);
}

/// A plan for a machine with one more (memory-only) NUMA node than the cluster's nodes: the
/// same CPUs, so Slurm could apply the masks, but every node must refuse, naming itself and the
/// difference, and no rank may start.
#[test]
fn a_node_of_another_shape_refuses_on_both_paths() {
    if cluster().is_none() {
        return;
    }
    let (other, planned) = common::one_more_node_fixture();
    let expected = format!("{} NUMA nodes, the plan expects {planned}", planned - 1);

    for (kind, port) in [("sbatch", 29605), ("sbatch-exec", 29606)] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("other.yaml"), &other).unwrap();
        let output = dir.path().join("job.out");
        let bin = rendezvous(dir.path());
        let job = job(2, port, "none", &bin, &output);
        let (ended, text, _) = submit(dir.path(), &job, kind, "other.yaml", &output);
        assert_eq!(ended.state, "FAILED", "{kind}:\n{text}");
        // A node that cannot run the plan is status 1 from every launcher, as from `exec`. srun
        // ends the step once one node has refused (--kill-on-bad-exit) and reports the highest
        // status of its tasks, so a node it terminated before that node exited by itself makes
        // it 143 (128 + SIGTERM): Slurm's rule, which srun's own line shows.
        let terminated = text
            .lines()
            .any(|l| l.starts_with("srun: error: ") && l.ends_with(": Terminated"));
        let status = if terminated { "143:0" } else { "1:0" };
        assert_eq!(ended.exit_code, status, "{kind}:\n{text}");
        let refusal = match kind {
            "sbatch" => format!("numaplan: node {{}} has {expected}\n"),
            _ => format!(
                "error[E0411]: this node ({{}}) cannot run the plan: it has {expected}; it does not look like topology `other-machine`\n"
            ),
        };
        let refused: Vec<&String> = ended
            .hosts
            .iter()
            .filter(|h| text.contains(&refusal.replace("{}", h)))
            .collect();
        // srun ends the step once one node has refused (--kill-on-bad-exit), so the other node
        // may not have had time to say so.
        assert!(!refused.is_empty(), "{kind}: no node refused:\n{text}");
        assert!(!text.contains("TASK "), "{kind}: a rank started:\n{text}");
    }
}
