//! The machine fixtures in examples/topologies: their text summaries (snapshots, read by a
//! person), the published facts of each machine, and the fixture format's round trip.

mod common;

use common::{fixtures, numaplan};
use numaplan::cpuset::CpuSet;
use numaplan::ids::{GpuIndex, NodeId};
use numaplan::topology::model::NodeKind;
use numaplan::topology::{Topology, fixture, load_file};

#[test]
fn topo_text_of_every_fixture() {
    insta::glob!("../examples/topologies", "*.yaml", |path| {
        let name = path.file_name().unwrap().to_str().unwrap();
        let text = numaplan(&[
            "topo",
            "--topology",
            &format!("examples/topologies/{name}"),
            "--format",
            "text",
        ])
        .ok();
        insta::assert_snapshot!(text);
    });
}

#[test]
fn every_fixture_is_its_own_canonical_dump() {
    for path in fixtures() {
        let on_disk = std::fs::read_to_string(&path).unwrap();
        let dumped = numaplan(&[
            "topo",
            "--topology",
            path.to_str().unwrap(),
            "--format",
            "yaml",
        ])
        .ok();
        assert_eq!(
            dumped,
            on_disk,
            "{} is not in canonical form; regenerate it with `numaplan topo --topology {0} --format yaml -o {0}`",
            path.display()
        );
    }
}

#[test]
fn json_has_the_same_content_as_yaml() {
    for path in fixtures() {
        let p = path.to_str().unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&numaplan(&["topo", "--topology", p, "--format", "json"]).ok())
                .unwrap();
        let yaml: serde_json::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json, yaml, "{p}");
    }
}

#[test]
fn reordering_a_fixture_changes_nothing() {
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut raw: fixture::FixtureFile = serde_yaml::from_str(&text).unwrap();
        raw.nodes.reverse();
        for n in &mut raw.nodes {
            n.l3_groups.reverse();
        }
        raw.cpu_kinds.reverse();
        raw.gpus.reverse();
        raw.nics.reverse();
        let shuffled = serde_yaml::to_string(&raw).unwrap();
        let a = fixture::load("original", &text).unwrap();
        let b = fixture::load("shuffled", &shuffled).unwrap();
        assert_eq!(a, b, "{}", path.display());
        assert_eq!(fixture::dump(&a), fixture::dump(&b));
    }
}

fn machine(name: &str) -> Topology {
    load_file(&common::repo().join(format!("examples/topologies/{name}.yaml"))).unwrap()
}

fn cpus(t: &Topology, node: u32) -> String {
    t.node_cpus(NodeId(node)).to_string()
}

fn gpu_node(t: &Topology, index: u32) -> u32 {
    t.gpus()
        .iter()
        .find(|g| g.index == GpuIndex(index))
        .unwrap()
        .numa_node
        .unwrap()
        .0
}

fn nic_node(t: &Topology, name: &str) -> u32 {
    t.nics()
        .iter()
        .find(|n| n.name == name)
        .unwrap()
        .numa_node
        .unwrap()
        .0
}

fn l3_groups_of(t: &Topology, node: u32) -> Vec<String> {
    t.l3_caches()
        .into_iter()
        .map(|l3| {
            t.cores()
                .iter()
                .filter(|c| c.node == NodeId(node) && c.l3 == l3)
                .map(|c| &c.cpus)
                .collect::<CpuSet>()
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The SMT siblings of `cpu`.
fn siblings(t: &Topology, cpu: u32) -> String {
    t.cores()
        .iter()
        .find(|c| c.cpus.contains(cpu))
        .unwrap()
        .cpus
        .to_string()
}

#[test]
fn dgx_a100_published_facts() {
    let t = machine("nvidia-dgx-a100");
    // nvidia-smi topo -m (DCGM#149, nccl#1505) and the NCCL topology dump.
    assert_eq!(cpus(&t, 3), "48-63,176-191");
    assert_eq!(cpus(&t, 1), "16-31,144-159");
    assert_eq!(cpus(&t, 7), "112-127,240-255");
    assert_eq!(cpus(&t, 0), "0-15,128-143");
    assert_eq!(cpus(&t, 5), "80-95,208-223");
    let gpu_nodes: Vec<u32> = (0..8).map(|g| gpu_node(&t, g)).collect();
    assert_eq!(gpu_nodes, [3, 3, 1, 1, 7, 7, 5, 5]);
    for n in [0, 2, 4, 6] {
        assert!(
            t.gpus().iter().all(|g| g.numa_node != Some(NodeId(n))),
            "node {n} has no GPU"
        );
    }
    assert_eq!(t.gpus()[0].pci.to_string(), "0000:07:00.0");
    assert_eq!(nic_node(&t, "mlx5_0"), 3);
    assert_eq!(nic_node(&t, "mlx5_4"), 0);
    assert_eq!(siblings(&t, 48), "48,176");
    assert_eq!(t.smt_width(), 2);
    assert_eq!(
        l3_groups_of(&t, 3),
        [
            "48-51,176-179",
            "52-55,180-183",
            "56-59,184-187",
            "60-63,188-191"
        ]
    );
    assert_eq!(t.l3_caches().len(), 32);
}

#[test]
fn dgx_h100_published_facts() {
    let t = machine("nvidia-dgx-h100");
    assert_eq!(cpus(&t, 0), "0-55,112-167");
    assert_eq!(cpus(&t, 1), "56-111,168-223");
    let gpu_nodes: Vec<u32> = (0..8).map(|g| gpu_node(&t, g)).collect();
    assert_eq!(gpu_nodes, [0, 0, 0, 0, 1, 1, 1, 1]);
    // DGX H100 user guide, table 6: each GPU's compute NIC shares its PCIe switch.
    for (gpu, nic) in [
        (0, "mlx5_0"),
        (1, "mlx5_3"),
        (2, "mlx5_4"),
        (3, "mlx5_5"),
        (4, "mlx5_6"),
        (5, "mlx5_9"),
        (6, "mlx5_10"),
        (7, "mlx5_11"),
    ] {
        let g = &t.gpus()[gpu];
        let n = t.nics().iter().find(|n| n.name == nic).unwrap();
        // The same switch, behind different bridges of it (nvidia-smi: PXB).
        assert_eq!(g.pci_path[0], n.pci_path[0], "GPU {gpu} and {nic}");
        assert_ne!(g.pci_path, n.pci_path, "GPU {gpu} and {nic}");
        assert_eq!(g.numa_node, n.numa_node);
    }
    assert_eq!(
        t.nics()
            .iter()
            .find(|n| n.name == "mlx5_0")
            .unwrap()
            .pci
            .unwrap()
            .to_string(),
        "0000:18:00.0"
    );
    assert_eq!(siblings(&t, 0), "0,112");
    assert_eq!(t.l3_caches().len(), 2);
}

#[test]
fn dgx1v_and_dgx2h_published_facts() {
    let t = machine("nvidia-dgx1-v100");
    assert_eq!(cpus(&t, 0), "0-19,40-59");
    assert_eq!(cpus(&t, 1), "20-39,60-79");
    assert_eq!(
        (0..8).map(|g| gpu_node(&t, g)).collect::<Vec<_>>(),
        [0, 0, 0, 0, 1, 1, 1, 1]
    );
    assert_eq!(t.gpus()[0].pci_path, ["0000:03:00.0"]);
    assert_eq!(siblings(&t, 19), "19,59");

    let t = machine("nvidia-dgx2h");
    assert_eq!(cpus(&t, 0), "0-23,48-71");
    assert_eq!(cpus(&t, 1), "24-47,72-95");
    assert_eq!(t.gpus().len(), 16);
    assert!((0..8).all(|g| gpu_node(&t, g) == 0) && (8..16).all(|g| gpu_node(&t, g) == 1));
    assert_eq!(t.gpus()[8].pci.to_string(), "0000:b7:00.0");
    assert_eq!(t.distance(NodeId(0), NodeId(1)), Some(21));
    assert_eq!(nic_node(&t, "mlx5_0"), 0);
    assert_eq!(
        t.gpus()[0].pci_path,
        t.nics()
            .iter()
            .find(|n| n.name == "mlx5_0")
            .unwrap()
            .pci_path
    );
}

#[test]
fn p4d_published_facts() {
    let t = machine("aws-p4d.24xlarge");
    assert_eq!(cpus(&t, 0), "0-23,48-71");
    assert_eq!(cpus(&t, 1), "24-47,72-95");
    let pci: Vec<String> = t.gpus().iter().map(|g| g.pci.to_string()).collect();
    assert_eq!(
        pci,
        [
            "0000:10:1c.0",
            "0000:10:1d.0",
            "0000:20:1c.0",
            "0000:20:1d.0",
            "0000:90:1c.0",
            "0000:90:1d.0",
            "0000:a0:1c.0",
            "0000:a0:1d.0"
        ]
    );
    assert_eq!(
        (0..8).map(|g| gpu_node(&t, g)).collect::<Vec<_>>(),
        [0, 0, 0, 0, 1, 1, 1, 1]
    );
    let efa: Vec<(String, u32)> = t
        .nics()
        .iter()
        .map(|n| (n.pci.unwrap().to_string(), n.numa_node.unwrap().0))
        .collect();
    assert_eq!(efa.len(), 4);
    assert!(efa.contains(&("0000:10:1b.0".into(), 0)) && efa.contains(&("0000:a0:1b.0".into(), 1)));
    assert!(
        t.nics()
            .iter()
            .all(|n| n.kind == numaplan::topology::model::NicKind::Efa)
    );
    // Two GPUs and one EFA per PCIe switch.
    let efa0 = t
        .nics()
        .iter()
        .find(|n| n.pci.unwrap().to_string() == "0000:10:1b.0")
        .unwrap();
    assert_eq!(t.gpus()[0].pci_path, efa0.pci_path);
    assert_eq!(t.gpus()[1].pci_path, efa0.pci_path);
    assert_ne!(t.gpus()[2].pci_path, efa0.pci_path);
}

#[test]
fn frontier_and_lumi_published_facts() {
    for name in ["olcf-frontier", "lumi-g"] {
        let t = machine(name);
        assert_eq!(cpus(&t, 0), "0-15,64-79", "{name}");
        assert_eq!(cpus(&t, 3), "48-63,112-127", "{name}");
        // GCD -> NUMA: Frontier NUMA note, LUMI `rocm-smi --showtoponuma`.
        assert_eq!(
            (0..8).map(|g| gpu_node(&t, g)).collect::<Vec<_>>(),
            [3, 3, 1, 1, 0, 0, 2, 2],
            "{name}"
        );
        assert_eq!(l3_groups_of(&t, 0), ["0-7,64-71", "8-15,72-79"], "{name}");
        assert_eq!(
            l3_groups_of(&t, 3),
            ["48-55,112-119", "56-63,120-127"],
            "{name}"
        );
        assert_eq!(t.l3_caches().len(), 8);
        assert_eq!(siblings(&t, 49), "49,113");
        let bus: Vec<u8> = t.gpus().iter().map(|g| g.pci.bus).collect();
        assert_eq!(bus, [0xc1, 0xc6, 0xc9, 0xce, 0xd1, 0xd6, 0xd9, 0xde]);
        assert_eq!(nic_node(&t, "hsn0"), 3);
    }
}

#[test]
fn aurora_published_facts() {
    let t = machine("alcf-aurora");
    assert_eq!(cpus(&t, 0), "0-51,104-155");
    assert_eq!(cpus(&t, 1), "52-103,156-207");
    for hbm in [2, 3] {
        assert_eq!(t.node(NodeId(hbm)).unwrap().kind, NodeKind::Hbm);
        assert!(t.node_cpus(NodeId(hbm)).is_empty());
        assert_eq!(t.node(NodeId(hbm)).unwrap().memory_mib, Some(65536));
    }
    assert_eq!(t.distance(NodeId(0), NodeId(2)), Some(13));
    assert_eq!(t.distance(NodeId(0), NodeId(3)), Some(23));
    assert_eq!(
        (0..6).map(|g| gpu_node(&t, g)).collect::<Vec<_>>(),
        [0, 0, 0, 1, 1, 1]
    );
    assert_eq!(siblings(&t, 0), "0,104");
}

#[test]
fn gh200_published_facts() {
    let t = machine("nvidia-gh200-4way");
    for g in 0..4u32 {
        assert_eq!(cpus(&t, g), CpuSet::range(72 * g, 72 * g + 71).to_string());
        assert_eq!(gpu_node(&t, g), g);
        let gpu = &t.gpus()[g as usize];
        let mem: Vec<u32> = t.gpu_memory_nodes(gpu).iter().map(|n| n.0).collect();
        assert_eq!(mem, (4 + 8 * g..12 + 8 * g).collect::<Vec<_>>(), "GPU {g}");
        assert_eq!(nic_node(&t, &format!("hsn{g}")), g);
    }
    assert_eq!(t.smt_width(), 1);
    assert_eq!(t.distance(NodeId(0), NodeId(4)), Some(80));
    assert_eq!(t.distance(NodeId(1), NodeId(4)), Some(120));
    assert_eq!(t.distance(NodeId(4), NodeId(5)), Some(255));
    assert_eq!(t.distance(NodeId(0), NodeId(1)), Some(40));
}

#[test]
fn ac922_published_facts() {
    let t = machine("ibm-ac922-summit");
    assert_eq!(cpus(&t, 0), "0-87");
    assert_eq!(cpus(&t, 8), "88-175");
    assert_eq!(t.smt_width(), 4);
    assert_eq!(siblings(&t, 5), "4-7");
    assert_eq!(l3_groups_of(&t, 0).first().unwrap(), "0-7");
    assert_eq!(t.l3_caches().len(), 22);
    let memory: Vec<(String, u32)> = t
        .gpus()
        .iter()
        .map(|g| (g.pci.to_string(), t.gpu_memory_nodes(g)[0].0))
        .collect();
    assert_eq!(
        memory,
        [
            ("0004:05:00.0".into(), 255),
            ("0004:06:00.0".into(), 254),
            ("0006:00:00.0".into(), 253),
            ("0007:00:00.0".into(), 252),
            ("0035:04:00.0".into(), 251),
            ("0035:05:00.0".into(), 250)
        ]
    );
    assert_eq!(
        (0..6).map(|g| gpu_node(&t, g)).collect::<Vec<_>>(),
        [0, 0, 0, 8, 8, 8]
    );
    assert_eq!(t.distance(NodeId(0), NodeId(8)), Some(40));
    assert_eq!(t.distance(NodeId(0), NodeId(255)), Some(80));
}

#[test]
fn azure_ndv4_published_facts() {
    let t = machine("azure-nd-a100-v4");
    for n in 0..4u32 {
        assert_eq!(cpus(&t, n), CpuSet::range(24 * n, 24 * n + 23).to_string());
    }
    let by_pci = |pci: &str| {
        t.gpus()
            .iter()
            .find(|g| g.pci.to_string() == pci)
            .unwrap()
            .numa_node
            .unwrap()
            .0
    };
    assert_eq!(by_pci("0003:00:00.0"), 0);
    assert_eq!(by_pci("0001:00:00.0"), 1);
    assert_eq!(by_pci("000d:00:00.0"), 2);
    assert_eq!(by_pci("000b:00:00.0"), 3);
    assert_eq!(t.smt_width(), 1);
    assert_eq!(t.nics().len(), 8);
}

/// `topo --format yaml -o node.yaml` captures this machine so that compiling against the file
/// gives the plan that discovering directly gives (fingerprint included).
#[test]
fn a_captured_fixture_compiles_like_discovery() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [true]\ngpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    common::numaplan_in(dir.path(), &["topo", "--format", "yaml", "-o", "node.yaml"]).ok();
    let compile = |topology: &str| {
        common::numaplan_in(
            dir.path(),
            &[
                "compile",
                "job.yaml",
                "--topology",
                topology,
                "--format",
                "json",
            ],
        )
        .ok()
    };
    let discovered = compile("discover");
    assert!(discovered.contains("\"ranks\""), "{discovered}");
    // Only the plan of the fixture names its topology file.
    let mut from_fixture: serde_json::Value = serde_json::from_str(&compile("node.yaml")).unwrap();
    let file = from_fixture["topology"]
        .as_object_mut()
        .unwrap()
        .remove("file");
    assert_eq!(file, Some("node.yaml".into()));
    assert_eq!(
        from_fixture,
        serde_json::from_str::<serde_json::Value>(&discovered).unwrap()
    );
}
