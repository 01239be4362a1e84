//! A machine written as a numaplan fixture and as hwloc's own XML export of it (our hwloc 2.x
//! text passed through the real `lstopo --input ... --of xml`) is the same machine: the same
//! topology fingerprint and the same plan, on random machines with uneven SMT, shuffled CPU
//! numbering, memory-only and CPU-less nodes, GPUs of unknown locality and GPU lists the job
//! names out of index order.

mod common;

use std::path::Path;
use std::process::Command;

use common::hwloc_export::hwloc_xml;
use common::{numaplan_in, repo};
use numaplan::cpuset::CpuSet;
use numaplan::ids::{GpuIndex, L3Id, NodeId, PackageId};
use numaplan::pci_addr::PciAddr;
use numaplan::topology::model::{Core, Gpu, NodeKind, NumaNode, Topology, TopologyParts, Vendor};
use numaplan::topology::{fixture, load_file};
use proptest::prelude::*;

/// `t` written as a fixture and as hwloc's export of it, in `dir`.
fn write_both(dir: &Path, t: &Topology) {
    std::fs::write(dir.join("machine.yaml"), fixture::dump(t)).unwrap();
    std::fs::write(dir.join("ours.xml"), hwloc_xml(t)).unwrap();
    // lstopo refuses to write over a file.
    let _ = std::fs::remove_file(dir.join("machine.xml"));
    common::succeed(Command::new("lstopo-no-graphics").current_dir(dir).args([
        "--input",
        "ours.xml",
        "--of",
        "xml",
        "machine.xml",
    ]));
}

/// The machine numaplan imports from hwloc's export (through the binary, whose import runs in
/// a child process that hwloc may abort).
fn imported(dir: &Path) -> Topology {
    let run = numaplan_in(
        dir,
        &[
            "topo",
            "--topology",
            "machine.xml",
            "--format",
            "yaml",
            "-o",
            "imported.yaml",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    load_file(&dir.join("imported.yaml")).unwrap()
}

/// The plan of `spec` on both forms of the machine, as JSON without the topology's name and
/// file (its content fingerprint stays), or the error's first line.
fn plans(dir: &Path, spec: &str) -> (String, String) {
    std::fs::write(dir.join("job.yaml"), spec).unwrap();
    let plan = |topology: &str| {
        let run = numaplan_in(
            dir,
            &[
                "-q",
                "compile",
                "job.yaml",
                "--topology",
                topology,
                "--format",
                "json",
            ],
        );
        if run.code != 0 {
            return run.stderr.lines().next().unwrap_or_default().to_string();
        }
        let mut plan: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let topology = plan["topology"].as_object_mut().unwrap();
        topology.remove("name");
        topology.remove("file");
        serde_json::to_string_pretty(&plan).unwrap()
    };
    (plan("machine.yaml"), plan("machine.xml"))
}

/// A random machine: its packages, CPU nodes (ids shuffled), L3 groups of cores with one or
/// two threads each, CPUs numbered in a shuffled order, memory-only nodes tied to a CPU node,
/// and GPUs (one in five of unknown locality).
#[derive(Clone, Debug)]
struct Shape {
    packages: u32,
    nodes_per_package: Vec<u32>,
    node_ids: prop::sample::Index,
    /// Per node, per L3 group, per core: its thread count (1 or 2).
    threads: Vec<Vec<Vec<u32>>>,
    numbering: prop::sample::Index,
    memory_only: Vec<(u8, prop::sample::Index)>,
    gpus: Vec<Option<prop::sample::Index>>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        1u32..3,
        prop::collection::vec(1u32..4, 2),
        any::<prop::sample::Index>(),
        prop::collection::vec(
            prop::collection::vec(prop::collection::vec(1u32..3, 1..4), 1..3),
            6,
        ),
        any::<prop::sample::Index>(),
        prop::collection::vec((0u8..3, any::<prop::sample::Index>()), 0..3),
        prop::collection::vec(
            prop::option::weighted(0.8, any::<prop::sample::Index>()),
            0..5,
        ),
    )
        .prop_map(
            |(packages, nodes_per_package, node_ids, threads, numbering, memory_only, gpus)| {
                Shape {
                    packages,
                    nodes_per_package,
                    node_ids,
                    threads,
                    numbering,
                    memory_only,
                    gpus,
                }
            },
        )
}

/// A pseudo-random permutation of 0..n picked by `index`.
fn permutation(n: usize, index: prop::sample::Index) -> Vec<usize> {
    let mut left: Vec<usize> = (0..n).collect();
    let mut k = index.index(usize::MAX);
    let mut out = Vec::new();
    while !left.is_empty() {
        out.push(left.remove(k % left.len()));
        k = k / out.len() + 7;
    }
    out
}

fn machine(s: &Shape) -> Topology {
    let mut parts = TopologyParts {
        name: "random".into(),
        ..Default::default()
    };
    // Node ids: a shuffled choice out of 0..12.
    let ids = permutation(12, s.node_ids);
    let mut cpu_nodes: Vec<(NodeId, PackageId)> = Vec::new();
    for p in 0..s.packages {
        for _ in 0..s.nodes_per_package[p as usize] {
            cpu_nodes.push((NodeId(ids[cpu_nodes.len()] as u32), PackageId(p)));
        }
    }
    let total: u32 = cpu_nodes
        .iter()
        .enumerate()
        .map(|(i, _)| s.threads[i].iter().flatten().sum::<u32>())
        .sum();
    let numbers = permutation(total as usize, s.numbering);
    let mut next = numbers.into_iter().map(|n| n as u32);
    let mut l3 = 0;
    for (i, (node, package)) in cpu_nodes.iter().enumerate() {
        parts.nodes.push(NumaNode {
            id: *node,
            package: Some(*package),
            kind: NodeKind::Cpu,
            memory_mib: Some(1024),
        });
        for group in &s.threads[i] {
            l3 += 1;
            for &width in group {
                parts.cores.push(Core {
                    cpus: (0..width).map(|_| next.next().unwrap()).collect(),
                    package: *package,
                    node: *node,
                    l3: L3Id(l3),
                });
            }
        }
    }
    // Memory-only nodes, each 13 away from the CPU node it is tied to.
    let mut ties: Vec<(NodeId, NodeId)> = Vec::new();
    for (k, (kind, near)) in s.memory_only.iter().enumerate() {
        // A CPU-less node of no known technology has an id above the CPU nodes: hwloc cannot
        // tell it from a CPU node it sits beside, and numaplan then takes the lowest id for
        // the CPUs' node (ARCHITECTURE.md, "A PU's node is the one with CPUs").
        let id = match kind {
            2 => NodeId(12 + k as u32),
            _ => NodeId(ids[cpu_nodes.len() + k] as u32),
        };
        let (cpu_node, package) = cpu_nodes[near.index(cpu_nodes.len())];
        parts.nodes.push(NumaNode {
            id,
            package: Some(package),
            kind: match kind {
                0 => NodeKind::Hbm,
                1 => NodeKind::GpuMemory { gpu: None },
                _ => NodeKind::Memory,
            },
            memory_mib: Some(512),
        });
        ties.push((id, cpu_node));
    }
    let package_of = |n: NodeId| parts.nodes.iter().find(|x| x.id == n).unwrap().package;
    let tied = |n: NodeId| ties.iter().find(|(m, _)| *m == n).map(|(_, c)| *c);
    // One node has no distance matrix in hwloc (a 1x1 matrix says nothing).
    let ids: Vec<NodeId> = parts.nodes.iter().map(|n| n.id).collect();
    for &a in ids.iter().filter(|_| ids.len() > 1) {
        for &b in &ids {
            let d = if a == b {
                10
            } else if tied(a) == Some(b) || tied(b) == Some(a) {
                13
            } else if package_of(a) == package_of(b) {
                20
            } else {
                30
            };
            parts.distances.push((a, b, d));
        }
    }
    for (i, gpu) in s.gpus.iter().enumerate() {
        // On a machine of one node, a GPU of unknown locality is on that node (hwloc's view:
        // the whole machine is the node), so every GPU there has a known one.
        let node = match gpu {
            Some(n) => Some(cpu_nodes[n.index(cpu_nodes.len())]),
            None if cpu_nodes.len() == 1 => Some(cpu_nodes[0]),
            None => None,
        };
        let pci = PciAddr {
            domain: 0,
            bus: 0x10 + i as u8,
            device: 0,
            function: 0,
        };
        parts.gpus.push(Gpu {
            index: GpuIndex(i as u32),
            vendor: Vendor::Nvidia,
            model: None,
            pci,
            uuid: None,
            numa_node: node.map(|(n, _)| n),
            package: node.map(|(_, p)| p),
            pci_path: vec![format!("host:{:04x}:{:02x}", pci.domain, pci.bus)],
        });
    }
    Topology::build(parts).unwrap()
}

fn specs(gpus: usize, order: prop::sample::Index) -> Vec<String> {
    let gpus_key = match gpus {
        0 => "gpus: none".to_string(),
        n => {
            let order: Vec<String> = permutation(n, order)
                .iter()
                .map(|g| g.to_string())
                .collect();
            format!("gpus: [{}]", order.join(", "))
        }
    };
    [
        "auto",
        "exclusive",
        "node",
        "unique-contiguous",
        "core-complex",
    ]
    .iter()
    .map(|policy| format!("{gpus_key}\ncpu: {{policy: {policy}}}\n"))
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_fixture_and_hwloc_s_export_of_it_give_the_same_plans(
        s in shape(),
        order in any::<prop::sample::Index>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let t = machine(&s);
        write_both(dir.path(), &t);
        let imported = imported(dir.path());
        prop_assert_eq!(imported.cores(), t.cores());
        prop_assert_eq!(imported.nodes(), t.nodes());
        prop_assert_eq!(imported.gpus(), t.gpus());
        for spec in specs(t.gpus().len(), order) {
            let (fixture, xml) = plans(dir.path(), &spec);
            prop_assert_eq!(fixture, xml, "{}", spec);
        }
    }
}

/// Uneven SMT through hwloc: a 1-thread core before a 2-thread core whose siblings are not
/// numbered in step ({0} and {1,2}), and offline siblings as hwloc's
/// 16em64t-4s2c2t-offlines.xml has them ({0} and {4,12}). The import keeps hwloc's cores, and
/// PyTorch's `exclusive` gives rank 0 CPU 0 and rank 1 CPUs 1-2.
#[test]
fn uneven_smt_keeps_hwloc_s_cores() {
    let dir = tempfile::tempdir().unwrap();
    let t = load_file(&repo().join("tests/cases/topologies/uneven-smt.yaml")).unwrap();
    write_both(dir.path(), &t);
    let cores: Vec<String> = imported(dir.path())
        .cores()
        .iter()
        .map(|c| c.cpus.to_string())
        .collect();
    assert_eq!(cores, ["0", "1-2"]);
    let (fixture, xml) = plans(dir.path(), "cpu: {policy: exclusive}\n");
    assert_eq!(fixture, xml);
    let plan: serde_json::Value = serde_json::from_str(&xml).unwrap();
    let cpus: Vec<&str> = plan["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cpus"].as_str().unwrap())
        .collect();
    assert_eq!(cpus, ["0", "1-2"]);

    let mut parts = TopologyParts {
        name: "offlines".into(),
        ..Default::default()
    };
    parts.nodes.push(NumaNode {
        id: NodeId(0),
        package: Some(PackageId(0)),
        kind: NodeKind::Cpu,
        memory_mib: None,
    });
    for cpus in ["0", "4,12"] {
        parts.cores.push(Core {
            cpus: cpus.parse::<CpuSet>().unwrap(),
            package: PackageId(0),
            node: NodeId(0),
            l3: L3Id(0),
        });
    }
    let t = Topology::build(parts).unwrap();
    write_both(dir.path(), &t);
    let run = numaplan_in(
        dir.path(),
        &["topo", "--topology", "machine.xml", "--format", "yaml"],
    );
    assert!(
        run.stdout.contains("cores: ['0', '4,12']"),
        "{}",
        run.stdout
    );
    assert_eq!(imported(dir.path()).cores(), t.cores());
}
