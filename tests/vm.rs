//! A real multi-NUMA Linux kernel under QEMU (tests/vm/qemu-numa.sh, software emulation): inside
//! a 4-node guest, `numaplan topo` discovers the nodes QEMU was told about, and `numaplan exec`
//! with `policy: auto, memory: bind` starts one rank per node whose CPUs are its node's and
//! whose touched pages all land on that node. Needs root (apt, the guest's kernel package):
//! `scripts/test.sh` sets NUMAPLAN_QEMU=1 when it runs as root, as CI does.

mod common;

use std::process::Command;

#[test]
fn exec_binds_ranks_on_a_four_node_guest() {
    if std::env::var_os("NUMAPLAN_QEMU").is_none() {
        eprintln!("skipped: set NUMAPLAN_QEMU=1 (as root) to boot the multi-NUMA guest");
        return;
    }
    let repo = common::repo();
    let work = tempfile::tempdir().unwrap();
    let touch = work.path().join("rank-touch");
    let cc = Command::new("cc")
        .args(["-static", "-O1", "-o"])
        .arg(&touch)
        .arg(repo.join("tests/vm/rank-touch.c"))
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let dir = std::env::var("QEMU_NUMA_DIR").unwrap_or_else(|_| "/tmp/numaplan-qemu".into());
    let out = Command::new("bash")
        .arg(repo.join("tests/vm/qemu-numa.sh"))
        .args(["all", "--"])
        .arg(repo.join("tests/vm/exec-guest.sh"))
        .env("QEMU_NUMA_DIR", &dir)
        .env("QEMU_NUMA_NODES", "4")
        .env("QEMU_NUMA_CPUS", "8")
        .env("QEMU_NUMA_MEM_MB", "256")
        .env("QEMU_NUMA_DISTANCE", "21")
        .env(
            "QEMU_NUMA_EXTRA",
            format!("{} {}", env!("CARGO_BIN_EXE_numaplan"), touch.display()),
        )
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "guest failed:\n{log}");
    let guest: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("  guest| "))
        .collect();

    // Discovery: what QEMU was told (4 nodes of 2 CPUs, distance 21 between nodes).
    let begin = guest
        .iter()
        .position(|l| *l == "TOPO_JSON_BEGIN")
        .expect("topology printed");
    let end = guest.iter().position(|l| *l == "TOPO_JSON_END").unwrap();
    let topo: serde_json::Value = serde_json::from_str(&guest[begin + 1..end].join("\n")).unwrap();
    let nodes = topo["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{topo}");
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(n["id"], i as u64);
        let threads: Vec<String> = n["l3_groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| {
                g["threads"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_string())
            })
            .collect();
        assert_eq!(
            threads.join(","),
            format!("{}-{}", 2 * i, 2 * i + 1),
            "node {i}: {n}"
        );
        let row: Vec<u64> = topo["distances"][i.to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let want: Vec<u64> = (0..4).map(|j| if j == i { 10 } else { 21 }).collect();
        assert_eq!(row, want, "distances of node {i}");
    }

    // exec: one rank per node, its CPUs the node's and all its pages there.
    let mut seen = Vec::new();
    for rank in 0..4 {
        let line = guest
            .iter()
            .find(|l| l.starts_with(&format!("[{rank}] rank {rank}: ")))
            .unwrap_or_else(|| panic!("no line from rank {rank}:\n{log}"));
        assert!(line.ends_with(": ok"), "{line}");
        let node: u32 = line
            .split("= node ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        seen.push(node);
    }
    seen.sort();
    assert_eq!(seen, [0, 1, 2, 3], "one rank per node");
    // --verify printed a table with every rank bound as planned.
    assert_eq!(
        guest
            .iter()
            .filter(|l| l.contains("bind:") && l.ends_with(" ok"))
            .count(),
        4,
        "{log}"
    );
}
