//! The published bindings of POLICIES.md, asserted on the real fixtures, plus property tests over
//! random machines and specs.

mod common;

use numaplan::cpuset::CpuSet;
use numaplan::ids::{GpuIndex, L3Id, NodeId, PackageId};
use numaplan::pci_addr::PciAddr;
use numaplan::plan::Plan;
use numaplan::resolve::resolve;
use numaplan::spec::load::load_str;
use numaplan::topology::model::{Core, Gpu, NodeKind, NumaNode, Topology, TopologyParts, Vendor};
use numaplan::topology::{fixture, load_file};
use proptest::prelude::*;

fn machine(name: &str) -> Topology {
    load_file(&common::repo().join(format!("examples/topologies/{name}.yaml"))).unwrap()
}

fn plan(topology: &Topology, spec: &str) -> Plan {
    let spec = load_str("spec.yaml", spec)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .spec;
    let plan = resolve(&spec, topology).unwrap_or_else(|e| panic!("{e}"));
    plan.check(topology.allowed()).unwrap();
    plan
}

fn cpus(p: &Plan) -> Vec<String> {
    p.ranks.iter().map(|r| r.cpus.to_string()).collect()
}

#[test]
fn lumi_and_frontier_low_noise_masks() {
    // LUMI user guide: map_cpu:49,57,17,25,1,9,33,41 and mask_cpu fe... per GCD (7 cores each).
    let expected = [
        "49-55", "57-63", "17-23", "25-31", "1-7", "9-15", "33-39", "41-47",
    ];
    for name in ["lumi-g", "olcf-frontier"] {
        let p = plan(&machine(name), "cpu: {reserve_per_l3: 1, smt: one}");
        assert_eq!(cpus(&p), expected, "{name}");
    }
    // The guide's mask_cpu values, decoded: GCD 0 = fe000000000000 = CPUs 49-55.
    let mask = u64::from_str_radix("fe000000000000", 16).unwrap();
    let decoded: CpuSet = (0..64).filter(|b| mask >> b & 1 == 1).collect();
    assert_eq!(decoded.to_string(), expected[0]);
}

#[test]
fn lumi_max_cores_keeps_whole_l3_groups() {
    let p = plan(
        &machine("lumi-g"),
        "cpu: {reserve_per_l3: 1, smt: one, max_cores: 6}",
    );
    assert_eq!(cpus(&p)[1], "57-62", "not 55,57-61");
}

#[test]
fn dgx_a100_unique_contiguous_and_auto_agree() {
    let t = machine("nvidia-dgx-a100");
    let affinity = plan(&t, "cpu: {policy: unique-contiguous}");
    assert_eq!(cpus(&affinity)[0], "48-55,176-183");
    assert_eq!(cpus(&affinity)[1], "56-63,184-191");
    let auto = plan(&t, "{}");
    assert_eq!(
        cpus(&auto),
        cpus(&affinity),
        "POLICIES: auto equals family 2's node example"
    );
}

#[test]
fn gh200_gives_each_gpu_its_grace() {
    let p = plan(&machine("nvidia-gh200-4way"), "{}");
    for (i, r) in p.ranks.iter().enumerate() {
        let i = i as u32;
        assert_eq!(r.cpus, CpuSet::range(72 * i, 72 * i + 71));
        assert_eq!(r.numa_node, Some(NodeId(i)), "never a GPU-memory node");
        assert_eq!(r.memory.nodes, [NodeId(i)]);
    }
}

#[test]
fn p4d_exclusive() {
    let p = plan(&machine("aws-p4d.24xlarge"), "cpu: {policy: exclusive}");
    assert_eq!(cpus(&p)[0], "0-5,48-53");
    assert_eq!(cpus(&p)[7], "42-47,90-95");
}

#[test]
fn exclusive_gives_the_remainder_to_the_lowest_gpus() {
    // 24 cores, allowed 0-21 -> 22 cores over 4 peers: 6,6,5,5.
    let p = plan(
        &machine("aws-p4d.24xlarge"),
        "gpus: [0,1,2,3]\ncpu: {policy: exclusive, allowed: \"0-21,48-69\"}",
    );
    let counts: Vec<u32> = p.ranks.iter().map(|r| r.cores).collect();
    assert_eq!(counts, [6, 6, 5, 5]);
}

#[test]
fn cpu_less_gpu_node_falls_back_to_the_nearest_node() {
    // A GPU whose node has no CPU: home is the nearest node with CPUs by distance.
    let mut parts = small_parts(3, 2, 2, &[0, 0]);
    parts.nodes.push(NumaNode {
        id: NodeId(9),
        package: Some(PackageId(0)),
        kind: NodeKind::Cpu,
        memory_mib: None,
    });
    // Make node 9 a CPU node without allowed CPUs by restricting `allowed` later.
    parts.cores.push(Core {
        cpus: "100".parse().unwrap(),
        package: PackageId(0),
        node: NodeId(9),
        l3: L3Id(99),
    });
    parts.gpus[0].numa_node = Some(NodeId(9));
    parts.distances = vec![
        (NodeId(9), NodeId(0), 30),
        (NodeId(9), NodeId(1), 12),
        (NodeId(9), NodeId(2), 20),
    ];
    let t = Topology::build(parts).unwrap();
    let p = plan(&t, "cpu: {allowed: \"0-99\"}");
    assert_eq!(p.ranks[0].numa_node, Some(NodeId(1)));
    assert!(
        p.warnings
            .iter()
            .any(|w| w == "GPU 0's node 9 has no allowed CPUs; using node 1 at distance 12"),
        "{:?}",
        p.warnings
    );
}

/// A machine of `nodes` nodes in one package, `cores` cores each (SMT2), L3 groups of 2 cores,
/// GPUs on the listed nodes.
fn small_parts(nodes: u32, cores: u32, smt: u32, gpu_nodes: &[u32]) -> TopologyParts {
    let total = nodes * cores;
    let mut parts = TopologyParts {
        name: "random".into(),
        ..Default::default()
    };
    for n in 0..nodes {
        parts.nodes.push(NumaNode {
            id: NodeId(n),
            package: Some(PackageId(n / 2)),
            kind: NodeKind::Cpu,
            memory_mib: None,
        });
        for c in 0..cores {
            let key = n * cores + c;
            let cpus: CpuSet = (0..smt).map(|t| key + t * total).collect();
            parts.cores.push(Core {
                cpus,
                package: PackageId(n / 2),
                node: NodeId(n),
                l3: L3Id(key / 2),
            });
        }
    }
    for (i, n) in gpu_nodes.iter().enumerate() {
        parts.gpus.push(Gpu {
            index: GpuIndex(i as u32),
            vendor: Vendor::Nvidia,
            model: None,
            pci: PciAddr {
                domain: 0,
                bus: i as u8 + 1,
                device: 0,
                function: 0,
            },
            uuid: None,
            numa_node: Some(NodeId(*n)),
            package: None,
            pci_path: Vec::new(),
        });
    }
    parts
}

fn policy_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "auto",
        "node",
        "socket",
        "exclusive",
        "core-complex",
        "all",
        "single",
        "single-unique",
        "unique-contiguous",
        "unique-interleaved",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every successful plan keeps ranks inside the allowed set, never shares a CPU under an
    /// exclusive policy, keeps SMT siblings together with `smt: all`, balances `auto`, and is
    /// deterministic, including after a topology dump and reload.
    #[test]
    fn plan_invariants(
        nodes in 1u32..5,
        cores in 1u32..9,
        smt in 1u32..3,
        gpu_nodes in prop::collection::vec(0u32..5, 0..7),
        policy in policy_name(),
        smt_one in any::<bool>(),
        reserve_per_l3 in 0u32..2,
        cut in 0u32..4,
        cpu_only in any::<bool>(),
    ) {
        let gpu_nodes: Vec<u32> = gpu_nodes.into_iter().map(|n| n % nodes).collect();
        let parts = small_parts(nodes, cores, smt, &gpu_nodes);
        let t = Topology::build(parts).unwrap();
        let all = t.all_cpus();
        // Cut a few CPUs away, as a cgroup would.
        let allowed: CpuSet = all.iter().filter(|c| cut == 0 || c % (cut + 3) != 0).collect();
        let spec = format!(
            "gpus: {}\ncpu: {{policy: {policy}, smt: {}, reserve_per_l3: {reserve_per_l3}, allowed: \"{allowed}\"}}\n",
            if cpu_only { "none" } else { "all" },
            if smt_one { "one" } else { "all" },
        );
        let spec = load_str("spec.yaml", &spec).unwrap().spec;
        let Ok(p) = resolve(&spec, &t) else { return Ok(()) };
        prop_assert_eq!(p.check(&allowed), Ok(()));
        for r in &p.ranks {
            prop_assert!(r.cpus.is_subset(&allowed));
            if !smt_one && matches!(policy, "auto" | "all" | "single" | "single-unique" | "unique-contiguous" | "unique-interleaved") {
                for core in t.cores() {
                    let mine = core.cpus.intersection(&allowed);
                    prop_assert!(!r.cpus.intersects(&mine) || mine.is_subset(&r.cpus), "SMT siblings split");
                }
            }
        }
        if policy == "auto" && p.ranks.iter().all(|r| r.numa_node.is_some()) {
            let counts: Vec<u32> = p.ranks.iter().map(|r| r.cores).collect();
            prop_assert!(counts.windows(2).all(|w| w[0] == w[1]), "unbalanced: {:?}", counts);
        }
        let again = resolve(&spec, &t).unwrap();
        prop_assert_eq!(&again, &p);
        let reloaded = fixture::load("dump.yaml", &fixture::dump(&t)).unwrap();
        prop_assert_eq!(resolve(&spec, &reloaded).unwrap(), p);
    }
}
