//! Every topology XML of the published collection (tests/data/xml) imports through hwloc and
//! round-trips through a numaplan fixture, or fails with a clear diagnostic, never a panic.

mod common;

use std::path::PathBuf;

use common::{numaplan, numaplan_in, repo};
use numaplan::ids::{GpuIndex, NodeId};
use numaplan::topology::model::{NicKind, NodeKind, Vendor};
use numaplan::topology::{Topology, load_file};

fn xml_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/data/xml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    v.sort();
    assert!(v.len() >= 27, "the XML collection is incomplete");
    v
}

/// What each file must do: import (hwloc 1.x, 2.x and 3.0 exports), or fail with this code.
fn expected_error(name: &str) -> Option<&'static str> {
    if name.starts_with("aws-") || name.starts_with("azure-") {
        Some("E0303") // NCCL topology files
    } else {
        None
    }
}

#[test]
fn every_xml_converts_and_round_trips_or_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for path in xml_files() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let out = dir.path().join(format!("{name}.yaml"));
        let run = numaplan_in(
            dir.path(),
            &[
                "topo",
                "--topology",
                path.to_str().unwrap(),
                "--format",
                "yaml",
                "-o",
                out.to_str().unwrap(),
            ],
        );
        match expected_error(&name) {
            Some(code) => {
                assert_eq!(run.code, 1, "{name}: {}", run.stderr);
                assert!(
                    run.stderr.starts_with(&format!("error[{code}]: ")),
                    "{name}: {}",
                    run.stderr
                );
                assert!(
                    run.stderr.contains(&name),
                    "{name}: the error names the file"
                );
                assert!(!run.stderr.contains("panicked"), "{name}");
                assert!(!out.exists(), "{name}: no output file after a failure");
            }
            None => {
                assert_eq!(run.code, 0, "{name}: {}", run.stderr);
                assert!(run.stdout.is_empty(), "{name}: -o writes nothing to stdout");
                let first = std::fs::read_to_string(&out).unwrap();
                let again = numaplan(&[
                    "topo",
                    "--topology",
                    out.to_str().unwrap(),
                    "--format",
                    "yaml",
                ])
                .ok();
                assert_eq!(
                    first, again,
                    "{name}: the converted fixture must load and dump identically"
                );
                let t = load_file(&out).unwrap();
                assert!(!t.cores().is_empty(), "{name}");
            }
        }
    }
}

fn xml(name: &str) -> Topology {
    load_file(&repo().join("tests/data/xml").join(name)).unwrap()
}

#[test]
fn eas_tioga_is_a_frontier_blade_in_rocm_order() {
    // LLNL's EAS (tioga) node: the Frontier/LUMI EX235a design, GPUs named rsmi0..7.
    let t = xml("eas-tioga.xml");
    let nodes: Vec<u32> = (0..8)
        .map(|g| {
            t.gpus()
                .iter()
                .find(|x| x.index == GpuIndex(g))
                .unwrap()
                .numa_node
                .unwrap()
                .0
        })
        .collect();
    assert_eq!(nodes, [3, 3, 1, 1, 0, 0, 2, 2]);
    assert!(t.gpus().iter().all(|g| g.vendor == Vendor::Amd));
    assert_eq!(t.gpus()[0].pci.to_string(), "0000:c1:00.0");
    assert_eq!(t.node_cpus(NodeId(3)).to_string(), "48-63,112-127");
    assert_eq!(t.l3_caches().len(), 8);
    assert_eq!(t.distance(NodeId(0), NodeId(1)), Some(12));
    let hsi0 = t.nics().iter().find(|n| n.name == "hsi0").unwrap();
    assert_eq!(
        (hsi0.kind, hsi0.numa_node),
        (NicKind::Slingshot, Some(NodeId(3)))
    );
    assert_eq!(hsi0.pci_path, ["host:0000:c4", "0000:c4:01.1"]);
}

/// The four hwloc 3.0 exports (tests/data/xml/*--*.xml, from hwloc's own tests) import with
/// the shapes their machines have (../shared/topologies/README.md), and where numaplan has a
/// fixture of the machine built from other sources, with the same GPU and CPU-kind facts.
#[test]
fn hwloc3_exports_have_their_machines_shape() {
    // DGX-2H (CPUs trimmed to 2 per package by hwloc): 16 V100s, 0-7 on node 0 and 8-15 on
    // node 1, which 3.0 says only in <pci_locality>.
    let t = xml("nvidia-dgx2h--nvidiaDGX2.xml");
    assert_eq!(
        (t.packages().len(), t.nodes().len(), t.cores().len()),
        (2, 2, 4)
    );
    let fixture = load_file(&repo().join("examples/topologies/nvidia-dgx2h.yaml")).unwrap();
    let placed = |t: &Topology| -> Vec<(u32, String, Option<u32>)> {
        t.gpus()
            .iter()
            .map(|g| (g.index.0, g.pci.to_string(), g.numa_node.map(|n| n.0)))
            .collect()
    };
    assert_eq!(placed(&t).len(), 16);
    assert_eq!(placed(&t), placed(&fixture));
    assert!(t.gpus().iter().all(|g| g.vendor == Vendor::Nvidia
        && g.model.as_deref() == Some("Tesla V100-SXM3-32GB-H")
        && g.uuid.as_deref().is_some_and(|u| u.starts_with("GPU-"))));
    assert_eq!(t.distance(NodeId(0), NodeId(1)), Some(21));

    // DGX Spark (GB10): 20 cores of two kinds (Cortex-A725 and X925). The fixture, discovered
    // from a sysfs snapshot that also tells clusters' frequencies apart, splits them finer:
    // each of its kinds lies within one of these.
    let t = xml("nvidia-dgx-spark-gb10--nvidia-dgx-gb10.xml");
    assert_eq!(t.cores().len(), 20);
    let kinds: Vec<String> = t.cpu_kinds().iter().map(|k| k.cpus.to_string()).collect();
    assert_eq!(kinds, ["0-4,10-14", "5-9,15-19"]);
    let fixture =
        load_file(&repo().join("examples/topologies/nvidia-dgx-spark-gb10.yaml")).unwrap();
    for finer in fixture.cpu_kinds() {
        assert!(
            t.cpu_kinds()
                .iter()
                .any(|k| finer.cpus.difference(&k.cpus).is_empty()),
            "{} straddles the XML's kinds",
            finer.cpus
        );
    }

    // 2x EPYC 9654 and 2x Xeon Max 9460 (CPUID only: no NUMA layout): 192 cores in 24 CCDs
    // of 8, and 80 cores with one L3 per socket, SMT 2; the fixtures built from them (with an
    // inferred NUMA layout) have the same cores and L3 groups.
    for (file, name, cores, l3) in [
        (
            "amd-epyc-genoa-9654-2s--AMD-19h-Zen4-2xEpyc-9654.xml",
            "amd-epyc-genoa-9654-2s",
            192,
            24,
        ),
        (
            "intel-xeon-max-spr-snc4-hbm-flat--hwloc-x86-Intel-SapphireRapids-2xXeonMax9460.xml",
            "intel-xeon-max-9460-2s",
            80,
            2,
        ),
    ] {
        let t = xml(file);
        assert_eq!(
            (t.cores().len(), t.l3_caches().len()),
            (cores, l3),
            "{file}"
        );
        assert!(t.cores().iter().all(|c| c.cpus.len() == 2), "{file}");
        let fixture = load_file(&repo().join(format!("examples/topologies/{name}.yaml"))).unwrap();
        assert_eq!(cores_and_l3s(&t), cores_and_l3s(&fixture), "{name}");
    }
}

/// Every core's CPUs, and every L3 group's, as text.
fn cores_and_l3s(t: &Topology) -> (Vec<String>, Vec<String>) {
    let mut l3s: std::collections::BTreeMap<_, numaplan::cpuset::CpuSet> = Default::default();
    for c in t.cores() {
        let set = l3s.entry(c.l3).or_default();
        *set = set.union(&c.cpus);
    }
    (
        t.cores().iter().map(|c| c.cpus.to_string()).collect(),
        l3s.values().map(ToString::to_string).collect(),
    )
}

#[test]
fn knl_flat_mcdram_nodes_are_memory_only() {
    let t = xml("knl-snc4-flat-hwloc1.xml");
    let cpu_nodes: Vec<u32> = t
        .nodes()
        .iter()
        .filter(|n| n.kind == NodeKind::Cpu)
        .map(|n| n.id.0)
        .collect();
    let memory_only = t.nodes().iter().filter(|n| n.kind.is_memory_only()).count();
    assert_eq!(cpu_nodes.len(), 4);
    assert_eq!(memory_only, 4);
    assert_eq!(t.cores().len(), 68);
    assert_eq!(t.smt_width(), 4);
    for n in t.nodes().iter().filter(|n| n.kind.is_memory_only()) {
        assert!(t.node_cpus(n.id).is_empty(), "node {} owns no CPUs", n.id);
    }
}

#[test]
fn power9_gpu_memory_nodes_own_no_cpus() {
    let t = xml("coral-lassen-hwloc1.xml");
    assert_eq!(t.node_cpus(NodeId(0)).to_string(), "8-87");
    for id in [252, 253, 254, 255] {
        let n = t.node(NodeId(id)).unwrap();
        assert!(n.kind.is_memory_only(), "node {id}");
        assert!(t.node_cpus(NodeId(id)).is_empty());
    }
    // The GPUs' locality is the CPU node of their package, never a memory-only node.
    assert_eq!(
        t.gpus()
            .iter()
            .map(|g| g.numa_node.unwrap().0)
            .collect::<Vec<_>>(),
        [0, 0, 8, 8]
    );
}

#[test]
fn nvml_indices_are_kept() {
    let t = xml("g4dnmetal.xml");
    assert_eq!(t.gpus().len(), 8);
    let indices: Vec<u32> = t.gpus().iter().map(|g| g.index.0).collect();
    assert_eq!(indices, (0..8).collect::<Vec<_>>());
    assert!(
        t.gpus().iter().all(|g| g.uuid.is_some()),
        "NVML osdevs carry UUIDs"
    );
}

#[test]
fn xml_summaries() {
    for name in [
        "eas-tioga.xml",
        "knl-snc4-flat-hwloc1.xml",
        "coral-lassen-hwloc1.xml",
    ] {
        let text = numaplan(&["topo", "--topology", &format!("tests/data/xml/{name}")]).ok();
        insta::assert_snapshot!(name, text);
    }
}

#[test]
fn truncated_xml_fails_with_one_clear_error_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read_to_string(repo().join("tests/data/xml/eas-tioga.xml")).unwrap();
    let truncated = dir.path().join("node.xml");
    std::fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let run = numaplan_in(
        dir.path(),
        &[
            "topo",
            "--topology",
            "node.xml",
            "--format",
            "yaml",
            "-o",
            "node.yaml",
        ],
    );
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0305]: hwloc cannot import `node.xml`: the XML is malformed or truncated
     --> node.xml
     = help: re-export the topology with `lstopo --of xml`
    ");
    assert!(!dir.path().join("node.yaml").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "only the input remains: {leftovers:?}");
}

/// An export whose `allowed_cpuset` is narrower than the machine (made here by the real
/// `lstopo --allow`, as a cgroup-restricted `lstopo --of xml` writes it) describes the same
/// machine: only the allowed set and the allowed memory nodes narrow.
#[test]
fn a_restricted_export_narrows_only_the_allowed_set() {
    let dir = tempfile::tempdir().unwrap();
    let whole = repo().join("tests/data/xml/epyc-corona.xml");
    let restricted = dir.path().join("restricted.xml");
    common::succeed(
        std::process::Command::new("lstopo-no-graphics")
            .arg("--input")
            .arg(&whole)
            // CPUs 0-5: node 0 only; GPU 0's node 1 keeps no allowed CPU.
            .args(["--allow", "0x0000003f", "--of", "xml"])
            .arg(&restricted),
    );
    let text = std::fs::read_to_string(&restricted).unwrap();
    assert!(
        text.contains("allowed_cpuset=\"0x0000003f\""),
        "lstopo wrote the restriction"
    );
    let a = load_file(&whole).unwrap();
    let b = load_file(&restricted).unwrap();
    assert_eq!(
        b.cores(),
        a.cores(),
        "cores and siblings are the whole machine's"
    );
    assert_eq!(b.nodes(), a.nodes());
    for n in a.nodes() {
        assert_eq!(b.node_cpus(n.id), a.node_cpus(n.id), "node {}", n.id);
    }
    assert_eq!(b.gpus(), a.gpus(), "GPU localities are unchanged");
    assert_eq!(
        b.gpus()[0].numa_node,
        Some(NodeId(1)),
        "not unknown locality"
    );
    assert_eq!(b.allowed().to_string(), "0-5");
    let topo = numaplan(&["topo", "--topology", restricted.to_str().unwrap()]).ok();
    assert!(topo.contains("allowed: 0-5 (6 of 96 CPUs)"), "{topo}");
    // A plan on it says what the restriction cuts and keeps GPU 0 on its own node's GPU.
    let spec = dir.path().join("job.yaml");
    std::fs::write(&spec, "gpus: [0]\n").unwrap();
    let plan = numaplan(&[
        "compile",
        spec.to_str().unwrap(),
        "--topology",
        restricted.to_str().unwrap(),
        "--format",
        "json",
    ])
    .ok();
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let warnings = common::plan_warnings(&plan);
    assert!(
        warnings.contains(&"node 1 has 0 of 12 CPUs allowed"),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(&"GPU 0's node 1 has no allowed CPUs; using node 0 at distance 16"),
        "{warnings:?}"
    );
}

/// One NUMA node over two packages (AMD's NPS0, node interleaving, many VMs): hwloc attaches the
/// node above both packages. Each core keeps its package through the import (which passes a
/// fixture between processes), through a fixture written and read back (its L3 groups name
/// their package), and in the plan's fingerprint; the summary draws the node under both.
#[test]
fn a_node_over_two_packages_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let xml = std::process::Command::new("lstopo-no-graphics")
        .args(["--input", "numa:1 pack:2 l3:1 core:2 pu:2", "--of", "xml"])
        .output()
        .unwrap();
    assert!(xml.status.success());
    std::fs::write(dir.path().join("nps0.xml"), &xml.stdout).unwrap();
    let from_xml = numaplan_in(dir.path(), &["topo", "--topology", "nps0.xml"]);
    assert_eq!(from_xml.code, 0, "{}", from_xml.stderr);
    insta::assert_snapshot!(from_xml.stdout, @r"
    nps0: 2 packages, 1 NUMA node, 4 cores, 8 CPUs (SMT 2), 2 L3 groups, 0 GPUs, 0 NICs
    allowed: all CPUs

    packages 0, 1 (one NUMA node spans them)
      node 0: 4 cores, CPUs 0-7, 1 GiB
        L3 groups (2): 0-3 | 4-7
    ");
    let fixture = numaplan_in(
        dir.path(),
        &[
            "topo",
            "--topology",
            "nps0.xml",
            "--format",
            "yaml",
            "-o",
            "nps0.yaml",
        ],
    );
    assert_eq!(fixture.code, 0, "{}", fixture.stderr);
    let text = std::fs::read_to_string(dir.path().join("nps0.yaml")).unwrap();
    assert!(text.contains("  - id: 1\n    package: 1\n"), "{text}");
    let from_fixture = numaplan_in(dir.path(), &["topo", "--topology", "nps0.yaml"]);
    assert_eq!(from_fixture.stdout, from_xml.stdout);
    let fingerprint = |topology: &str| {
        std::fs::write(
            dir.path().join("job.yaml"),
            "gpus: none\nranks_per_node: 2\n",
        )
        .unwrap();
        let plan = numaplan_in(
            dir.path(),
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
        let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
        plan["topology"]["fingerprint"].clone()
    };
    assert_eq!(fingerprint("nps0.xml"), fingerprint("nps0.yaml"));
}

/// CPUs that no NUMA node covers in hwloc's view (their nodeset empty, as hwloc's restriction
/// and hwloc's `fakeheterocpunuma` test leave them) are never put on node 0: they are left out
/// of the machine, and the topology's notes say so in every plan.
#[test]
fn cpus_without_a_numa_node_are_left_out_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::restricted_to_node_1(dir.path());
    assert!(
        text.contains(r#"<object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x0" complete_nodeset="0x0""#),
        "hwloc left PU 0 without a node: {text}"
    );
    let topo = numaplan_in(dir.path(), &["topo", "--topology", "restricted.xml"]).ok();
    assert!(
        topo.starts_with("restricted: 1 package, 1 NUMA node, 2 cores, 4 CPUs"),
        "{topo}"
    );
    assert!(topo.contains("note: CPUs 0-3 have no NUMA node in hwloc's view (their nodeset is empty); plans leave them out"), "{topo}");
    assert!(!topo.contains("node 0"), "{topo}");
    std::fs::write(dir.path().join("job.yaml"), "gpus: none\n").unwrap();
    let plan = numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "--topology", "restricted.xml"],
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("  cpus: 4-7\n"), "{}", plan.stdout);
    assert!(
        plan.stderr.contains("CPUs 0-3 have no NUMA node"),
        "the note is a plan warning: {}",
        plan.stderr
    );
}

/// A cgroup export made on Linux leaves out the NUMA node whose memory the job may not use but
/// keeps its CPUs, whose complete nodeset still names it (hwloc's
/// `16amd64-8n2c-cpusets.xml`, `linux/allowed/test1.xml`). hwloc reads such files; numaplan
/// gives those CPUs that node (not a refusal, not node 0 by default), keeps its memory out of
/// the allowed nodes, and a rank there binds its memory to the nearest allowed node.
#[test]
fn cpus_of_a_node_left_out_of_the_export_keep_that_node() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::restricted_to_node_1(dir.path())
        .replace(
            r#"nodeset="0x0" complete_nodeset="0x0""#,
            r#"nodeset="0x0" complete_nodeset="0x00000001""#,
        )
        .replace(
            r#"nodeset="0x00000002" complete_nodeset="0x00000002" allowed_nodeset"#,
            r#"nodeset="0x00000002" complete_nodeset="0x00000003" allowed_nodeset"#,
        );
    std::fs::write(dir.path().join("cgroup.xml"), text).unwrap();
    let topo = numaplan_in(dir.path(), &["topo", "--topology", "cgroup.xml"]).ok();
    assert!(
        topo.starts_with("cgroup: 2 packages, 2 NUMA nodes, 4 cores, 8 CPUs"),
        "{topo}"
    );
    assert!(
        topo.contains("allowed memory: node 1 (1 of 2 nodes)"),
        "{topo}"
    );
    assert!(topo.contains("note: NUMA node 0 is not in the export, though CPUs 0-3 are its (their complete nodeset); its memory size is unknown"), "{topo}");
    assert!(topo.contains("  node 0: 2 cores, CPUs 0-3\n"), "{topo}");
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\n",
    )
    .unwrap();
    let plan = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--topology",
            "cgroup.xml",
            "--format",
            "json",
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let rank0 = &plan["ranks"][0];
    assert_eq!(rank0["cpus"], "0-3");
    assert_eq!(
        rank0["memory"]["nodes"], "1",
        "node 0's memory is not allowed"
    );
}

/// hwloc 3's lstopo writes `<support>` elements before the CPU kinds; the translation to 2.x
/// once ended them with `</support>`, after which hwloc 2.9 silently ignored the rest of the
/// file. The DGX Spark (GB10) export with the supports lstopo 3 writes keeps its two kinds.
#[test]
fn cpu_kinds_survive_the_supports_of_a_hwloc3_export() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(
        repo().join("tests/data/xml/nvidia-dgx-spark-gb10--nvidia-dgx-gb10.xml"),
    )
    .unwrap();
    assert!(original.contains("<cpukind") && !original.contains("<support"));
    let supports = "  <support name=\"discovery.pu\"/>\n  <support name=\"discovery.numa\"/>\n  \
                    <support name=\"discovery.cpukind_efficiency\"/>\n  <support name=\"custom.exported_support\"/>\n";
    let at = original.find("  <cpukind").unwrap();
    let with_supports = format!("{}{supports}{}", &original[..at], &original[at..]);
    std::fs::write(dir.path().join("gb10.xml"), with_supports).unwrap();
    let fixture = numaplan_in(
        dir.path(),
        &["topo", "--topology", "gb10.xml", "--format", "json"],
    )
    .ok();
    let fixture: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    let kinds: Vec<&str> = fixture["cpu_kinds"]
        .as_array()
        .expect("the CPU kinds are kept")
        .iter()
        .map(|k| k["cpus"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["0-4,10-14", "5-9,15-19"]);
}

/// A server's display chip is not a GPU (hwloc's `24em64t-2n6c2t-pci.xml` has a BMC's ATI
/// ES1000): an AMD or Intel display device counts only where something says it computes (an
/// OpenCL, RSMI or Level Zero device) or it is a known accelerator (an MI250X by its id);
/// what is left out is named in the topology's notes, and the default plan has a rank per GPU.
#[test]
fn display_chips_are_not_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::succeed(std::process::Command::new("lstopo-no-graphics").args([
        "--input",
        "pack:1 numa:1 core:4 pu:1",
        "--of",
        "xml",
        "-",
    ]));
    let bridge = |bus: &str, device: &str| {
        format!(
            "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[{bus}-{bus}]\">\n{device}\n</object>\n"
        )
    };
    let devices = [
        // The BMC's VGA: no rank.
        bridge("01", r#"<object type="PCIDev" pci_busid="0000:01:03.0" pci_type="0300 [1002:515e] [003c:00fb] 02 00"><info name="PCIDevice" value="ES1000"/></object>"#),
        // An MI250X GCD, known by its id.
        bridge("c1", r#"<object type="PCIDev" pci_busid="0000:c1:00.0" pci_type="0380 [1002:740c] [1002:0b0c] 01 00"/>"#),
        // A Radeon that an OpenCL device says computes.
        bridge("c6", r#"<object type="PCIDev" pci_busid="0000:c6:00.0" pci_type="0300 [1002:73bf] [1002:0e3a] c1 00"><object type="OSDev" name="opencl0d0" subtype="OpenCL" osdev_type="5"/></object>"#),
        // An integrated Intel GPU, nothing says it computes: no rank.
        bridge("00", r#"<object type="PCIDev" pci_busid="0000:00:02.0" pci_type="0300 [8086:9a49] [8086:3002] 01 00"/>"#),
    ]
    .concat();
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.rfind("    </object>\n  </object>").unwrap();
    let text = format!("{}{devices}{}", &text[..at], &text[at..]);
    std::fs::write(dir.path().join("server.xml"), text).unwrap();
    let topo = numaplan_in(dir.path(), &["topo", "--topology", "server.xml"]).ok();
    assert!(topo.contains(", 2 GPUs, 0 NICs"), "{topo}");
    assert!(
        topo.contains("note: PCI device 0000:01:03.0 [1002:515e] (ES1000) is not counted as a GPU"),
        "{topo}"
    );
    assert!(
        topo.contains("note: PCI device 0000:00:02.0 [8086:9a49] is not counted as a GPU"),
        "{topo}"
    );
    assert!(
        topo.contains("GPU 0: amd ") && topo.contains("(0000:c1:00.0)"),
        "{topo}"
    );
    assert!(
        topo.contains("GPU 1: amd ") && topo.contains("(0000:c6:00.0)"),
        "{topo}"
    );
    std::fs::write(dir.path().join("job.yaml"), "{}\n").unwrap();
    let plan = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--topology",
            "server.xml",
            "--format",
            "json",
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(
        plan["ranks"].as_array().unwrap().len(),
        2,
        "one rank per real GPU"
    );
    assert!(
        common::plan_warnings(&plan)
            .iter()
            .any(|w| w.contains("ES1000")),
        "the plan says what was left out"
    );
}

/// An imported export is named as hwloc names the machine (its root's HostName, as a live
/// discovery is named after the host), else after its file.
#[test]
fn an_imported_export_is_named_by_its_hostname() {
    let name = |file: &str| {
        let text = numaplan(&["topo", "--topology", file, "--format", "yaml"]).ok();
        let value: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        value["name"].as_str().unwrap().to_string()
    };
    assert_eq!(name("tests/data/xml/arm64-ulna-hwloc1.xml"), "ulna32");
    assert_eq!(
        name("tests/data/xml/nvidia-dgx2h--nvidiaDGX2.xml"),
        "nvidia-dgx2h--nvidiaDGX2"
    );
}
