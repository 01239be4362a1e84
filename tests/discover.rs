//! Discovery (`--topology discover`, the default) on real machines other than this one: hwloc
//! reads a sysfs snapshot in place of the live machine when HWLOC_FSROOT names it, so these tests
//! run numaplan's real discovery code on the hybrid-core DGX Spark and on an IBM AC922 with GPU
//! memory as NUMA nodes (tests/data/sysfs/README.md), and check it against the snapshots' files.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{numaplan_env, repo};
use numaplan::cpuset::CpuSet;

fn dgx_spark() -> (tempfile::TempDir, PathBuf) {
    common::sysfs_snapshot("nvidia-dgx-gb10")
}

fn discover(root: &Path, args: &[&str]) -> String {
    numaplan_env(root.parent().unwrap(), &[("HWLOC_FSROOT", root)], args).ok()
}

/// CPUs by the capacity the kernel gives them (`cpuN/cpu_capacity`), read from the snapshot.
fn cpus_by_capacity(root: &Path) -> BTreeMap<u32, CpuSet> {
    let mut by_capacity: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let cpus = root.join("sys/devices/system/cpu");
    for entry in std::fs::read_dir(&cpus).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let capacity = std::fs::read_to_string(cpus.join(&name).join("cpu_capacity")).unwrap();
        by_capacity
            .entry(capacity.trim().parse().unwrap())
            .or_default()
            .insert(cpu);
    }
    by_capacity
}

#[test]
fn cpu_kinds_of_a_hybrid_machine_follow_the_kernels_capacities() {
    let (_dir, root) = dgx_spark();
    let json: serde_json::Value =
        serde_json::from_str(&discover(&root, &["topo", "--format", "json"])).unwrap();
    assert_eq!(json["name"], "nvidia-dgx-gb10");
    // hwloc 2.x makes one kind per distinct capacity, ranked from the smallest (most
    // power-efficient) to the largest.
    let expected: Vec<(String, u32, String)> = cpus_by_capacity(&root)
        .into_iter()
        .enumerate()
        .map(|(rank, (capacity, cpus))| (cpus.to_string(), rank as u32, capacity.to_string()))
        .collect();
    assert_eq!(expected.len(), 5, "the snapshot has five capacities");
    let found: Vec<(String, u32, String)> = json["cpu_kinds"]
        .as_array()
        .expect("cpu_kinds")
        .iter()
        .map(|k| {
            (
                k["cpus"].as_str().unwrap().to_string(),
                k["efficiency"].as_u64().unwrap() as u32,
                k["info"]["LinuxCapacity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(found, expected);
    // The two core designs differ in their maximum frequency (cpufreq's cpuinfo_max_freq, kHz).
    for kind in json["cpu_kinds"].as_array().unwrap() {
        let cpus: CpuSet = kind["cpus"].as_str().unwrap().parse().unwrap();
        let khz = std::fs::read_to_string(root.join(format!(
            "sys/devices/system/cpu/cpu{}/cpufreq/cpuinfo_max_freq",
            cpus.first().unwrap()
        )))
        .unwrap();
        let mhz = khz.trim().parse::<u64>().unwrap() / 1000;
        assert_eq!(kind["info"]["FrequencyMaxMHz"], mhz.to_string(), "{kind}");
    }

    let text = discover(&root, &["topo"]);
    assert!(
        text.contains(
            "CPU kinds (5, most power-efficient first):\n  efficiency 0: CPUs 0-4 (FrequencyMaxMHz 2808, LinuxCapacity 718)\n"
        ),
        "{text}"
    );
}

#[test]
fn the_dgx_spark_fixture_is_what_discovery_finds() {
    let (_dir, root) = dgx_spark();
    let job = repo().join("examples/dgx-spark.yaml");
    let compile = |topology: &Path| {
        let plan: serde_json::Value = serde_json::from_str(&discover(
            &root,
            &[
                "compile",
                job.to_str().unwrap(),
                "--topology",
                topology.to_str().unwrap(),
                "--format",
                "json",
            ],
        ))
        .unwrap();
        (
            plan["topology"]["fingerprint"].clone(),
            plan["ranks"].clone(),
            plan["warnings"].clone(),
        )
    };
    let fixture = compile(&repo().join("examples/topologies/nvidia-dgx-spark-gb10.yaml"));
    assert_eq!(compile(Path::new("discover")), fixture);
    assert_eq!(fixture.1[0]["cpus"], "5-9", "{:?}", fixture.1);
}

#[test]
fn ranks_that_mix_core_speeds_are_warned_about() {
    let (_dir, root) = dgx_spark();
    let job = root.parent().unwrap().join("job.yaml");
    std::fs::write(
        &job,
        "command: [true]\ngpus: none\nranks_per_node: 2\nmemory: {policy: bind}\n",
    )
    .unwrap();
    let plan: serde_json::Value = serde_json::from_str(&discover(
        &root,
        &["compile", "job.yaml", "--format", "json"],
    ))
    .unwrap();
    let warnings = common::plan_warnings(&plan);
    assert_eq!(
        warnings,
        [
            "rank 0 mixes cores of 2 speeds (0-4 at FrequencyMaxMHz 2808; 5-9 at FrequencyMaxMHz 3900); a synchronous job runs at the pace of its slowest threads",
            "rank 1 mixes cores of 2 speeds (10-14 at FrequencyMaxMHz 2808; 15-19 at FrequencyMaxMHz 3900); a synchronous job runs at the pace of its slowest threads",
        ]
    );
}

#[test]
fn an_lstopo_export_of_the_snapshot_imports_like_discovery() {
    let (dir, root) = dgx_spark();
    let xml = dir.path().join("spark.xml");
    common::succeed(
        Command::new("lstopo-no-graphics")
            .env("HWLOC_FSROOT", &root)
            .args(["--of", "xml", "--force"])
            .arg(&xml),
    );
    let kinds = |args: &[&str]| {
        let json: serde_json::Value = serde_json::from_str(&discover(&root, args)).unwrap();
        assert_eq!(
            json["cpu_kinds"].as_array().map(Vec::len),
            Some(5),
            "{json}"
        );
        (json["cpu_kinds"].clone(), json["nodes"].clone())
    };
    let xml = xml.to_str().unwrap();
    assert_eq!(
        kinds(&["topo", "--topology", xml, "--format", "json"]),
        kinds(&["topo", "--format", "json"])
    );
}

/// hwloc hides NVIDIA GPU-memory NUMA nodes unless HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1; discovery
/// sets it, so a POWER9 + V100 node shows its six GPU-memory nodes, each named after its GPU as
/// the NVIDIA driver's `numa_status` files say, with the sizes and distances of the node files.
#[test]
fn gpu_memory_nodes_of_an_ac922_are_discovered() {
    let (_dir, root) = common::sysfs_snapshot("nvidiagpunumanodes");
    let json: serde_json::Value =
        serde_json::from_str(&discover(&root, &["topo", "--format", "json"])).unwrap();
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap();

    let mut expected: BTreeMap<u64, String> = BTreeMap::new();
    let gpus = root.join("proc/driver/nvidia/gpus");
    for entry in std::fs::read_dir(&gpus).unwrap() {
        let pci = entry.unwrap().file_name().into_string().unwrap();
        let status = read(gpus.join(&pci).join("numa_status"));
        let node = status
            .lines()
            .find_map(|l| l.strip_prefix("Node:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        expected.insert(node, pci.to_lowercase());
    }
    assert_eq!(expected.len(), 6);
    let found: BTreeMap<u64, String> = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "gpu-memory")
        .map(|n| {
            (
                n["id"].as_u64().unwrap(),
                n["gpu"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(found, expected);

    let node_dir = |id: u64| root.join(format!("sys/devices/system/node/node{id}"));
    let ids: Vec<u64> = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [0, 8, 250, 251, 252, 253, 254, 255]);
    for node in json["nodes"].as_array().unwrap() {
        let id = node["id"].as_u64().unwrap();
        let meminfo = read(node_dir(id).join("meminfo"));
        let kib: u64 = meminfo
            .lines()
            .find(|l| l.contains("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(node["memory_mib"].as_u64(), Some(kib / 1024), "node {id}");
        let row: Vec<u64> = read(node_dir(id).join("distance"))
            .split_whitespace()
            .map(|d| d.parse().unwrap())
            .collect();
        let found: Vec<u64> = json["distances"][id.to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(found, row, "distances of node {id}");
    }
}

#[test]
fn a_users_hwloc_keep_nvidia_gpu_numa_nodes_wins() {
    let (_dir, root) = common::sysfs_snapshot("nvidiagpunumanodes");
    let hidden = numaplan_env(
        root.parent().unwrap(),
        &[
            ("HWLOC_FSROOT", &root),
            ("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", Path::new("0")),
        ],
        &["topo"],
    )
    .ok();
    assert!(
        hidden.starts_with("nvidiagpunumanodes: 2 packages, 2 NUMA nodes,"),
        "{hidden}"
    );
}
