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
        texts(&p).contains(&"GPU 0's node 9 has no allowed CPUs; using node 1 at distance 12"),
        "{:?}",
        texts(&p)
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
        no_node_zero in any::<bool>(),
        hide_group_firsts in any::<bool>(),
    ) {
        let gpu_nodes: Vec<u32> = gpu_nodes.into_iter().map(|n| n % nodes).collect();
        let mut parts = small_parts(nodes, cores, smt, &gpu_nodes);
        if no_node_zero {
            // Nodes numbered from 1, as on some partitioned machines.
            for n in &mut parts.nodes {
                n.id = NodeId(n.id.0 + 1);
            }
            for c in &mut parts.cores {
                c.node = NodeId(c.node.0 + 1);
            }
            for g in &mut parts.gpus {
                g.numa_node = g.numa_node.map(|n| NodeId(n.0 + 1));
            }
        }
        let t = Topology::build(parts).unwrap();
        let all = t.all_cpus();
        // Cut a few CPUs away, as a cgroup would; optionally hide the first CPU of every L3
        // group, which reorders groups and cores for a tool that sorts by allowed CPUs.
        let group_firsts: CpuSet = t
            .l3_caches()
            .iter()
            .filter_map(|l3| t.cores().iter().filter(|c| c.l3 == *l3).map(|c| c.key()).min())
            .collect();
        let allowed: CpuSet = all
            .iter()
            .filter(|c| cut == 0 || c % (cut + 3) != 0)
            .filter(|c| !hide_group_firsts || !group_firsts.contains(*c))
            .collect();
        prop_assume!(!allowed.is_empty());
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Inside every rank: the helper pool is `cpu.helpers` whole cores of the rank, the OpenMP
    /// places are inside the compute set and disjoint, and places and pool together are the
    /// rank's CPUs; the variables say the same as the plan's places.
    #[test]
    fn helpers_and_places_split_each_rank(
        nodes in 1u32..4,
        cores in 2u32..9,
        smt in 1u32..3,
        gpu_nodes in prop::collection::vec(0u32..4, 0..5),
        policy in policy_name(),
        helpers in 0u32..3,
        places in prop::sample::select(vec!["cores", "threads"]),
        bind in prop::sample::select(vec!["close", "spread", "master"]),
        threads in prop::sample::select(vec!["cores", "cpus", "3"]),
        cpu_only in any::<bool>(),
    ) {
        let gpu_nodes: Vec<u32> = gpu_nodes.into_iter().map(|n| n % nodes).collect();
        let t = Topology::build(small_parts(nodes, cores, smt, &gpu_nodes)).unwrap();
        let spec = format!(
            "gpus: {}\ncpu: {{policy: {policy}, helpers: {helpers}}}\nopenmp: {{places: {places}, bind: {bind}, threads: {threads}}}\n",
            if cpu_only { "none" } else { "all" },
        );
        let spec = load_str("spec.yaml", &spec).unwrap().spec;
        let Ok(p) = resolve(&spec, &t) else { return Ok(()) };
        for r in &p.ranks {
            let omp = r.openmp.as_ref().unwrap();
            prop_assert!(r.helpers.is_subset(&r.cpus));
            let helper_cores = t.cores().iter().filter(|c| c.cpus.intersects(&r.helpers)).count();
            prop_assert_eq!(helper_cores as u32, helpers);
            let mut union = CpuSet::new();
            for place in &omp.places {
                prop_assert!(place.is_subset(&r.compute()));
                prop_assert!(!place.intersects(&union), "places overlap");
                union = union.union(place);
            }
            prop_assert_eq!(union.union(&r.helpers), r.cpus.clone());
            let written: Vec<String> = omp.places.iter().map(|p| {
                let cpus: Vec<String> = p.iter().map(|c| c.to_string()).collect();
                format!("{{{}}}", cpus.join(","))
            }).collect();
            prop_assert_eq!(&r.env["OMP_PLACES"], &written.join(","));
            prop_assert_eq!(&r.env["OMP_NUM_THREADS"], &omp.threads.to_string());
            let kmp = &r.env["KMP_AFFINITY"];
            prop_assert!(kmp.starts_with("granularity=fine,proclist=[") && kmp.ends_with("],explicit"));
        }
    }
}

/// A node's L3 groups: each a list of cores, each core its CPUs.
type Groups<'a> = &'a [&'a [&'a [u32]]];

/// A machine from rows `(node, package, L3 groups)`; GPUs by node (`None`: unknown locality).
fn build(rows: &[(u32, u32, Groups)], gpu_nodes: &[Option<u32>]) -> Topology {
    let mut parts = TopologyParts {
        name: "hand-made".into(),
        ..Default::default()
    };
    let mut l3 = 0;
    for &(node, package, groups) in rows {
        parts.nodes.push(NumaNode {
            id: NodeId(node),
            package: Some(PackageId(package)),
            kind: NodeKind::Cpu,
            memory_mib: None,
        });
        for group in groups {
            for core in *group {
                parts.cores.push(Core {
                    cpus: core.iter().copied().collect(),
                    package: PackageId(package),
                    node: NodeId(node),
                    l3: L3Id(l3),
                });
            }
            l3 += 1;
        }
    }
    let gpus: Vec<u32> = gpu_nodes.iter().map(|n| n.unwrap_or(0)).collect();
    parts.gpus = small_parts(1, 1, 1, &gpus).gpus;
    for (g, node) in parts.gpus.iter_mut().zip(gpu_nodes) {
        g.numa_node = node.map(NodeId);
    }
    Topology::build(parts).unwrap()
}

fn plan_err(topology: &Topology, spec: &str) -> String {
    let spec = load_str("spec.yaml", spec).unwrap().spec;
    resolve(&spec, topology).unwrap_err().to_string()
}

#[test]
fn core_complex_orders_equal_groups_by_the_first_cpu_of_the_whole_group() {
    // Node 0: L3 group X = cores {0,8} {1,9}, group Y = {2,10} {3,11}. The mask leaves X its
    // high siblings and Y its low ones: 2 allowed CPUs each, Y's first allowed CPU (2) below
    // X's (8), but X's whole group starts at 0, so X comes first, as PyTorch reads
    // `shared_cpu_list`.
    let t = build(
        &[
            (0, 0, &[&[&[0, 8], &[1, 9]], &[&[2, 10], &[3, 11]]]),
            (1, 1, &[&[&[4, 12], &[5, 13]]]),
        ],
        &[Some(0), Some(0)],
    );
    let p = plan(
        &t,
        "cpu: {policy: core-complex, allowed: \"2,3,8,9,4-5,12-13\"}",
    );
    assert_eq!(cpus(&p), ["8-9", "2-3"]);
}

#[test]
fn pytorch_counts_every_selected_gpu_as_a_peer() {
    // Two GPUs on node 0 and one rank: PyTorch counts both GPUs (torch.cuda.device_count()),
    // so `exclusive` gives rank 0 half the node, not all of it.
    let t = build(
        &[
            (0, 0, &[&[&[0], &[1], &[2], &[3]]]),
            (1, 1, &[&[&[4], &[5]]]),
        ],
        &[Some(0), Some(0)],
    );
    let p = plan(&t, "ranks_per_node: 1\ncpu: {policy: exclusive}");
    assert_eq!(cpus(&p), ["0-1"]);
    // Under gpu_affinity only the GPUs ranks use are peers.
    let p = plan(&t, "ranks_per_node: 1\ncpu: {policy: unique-contiguous}");
    assert_eq!(cpus(&p), ["0-3"]);
}

#[test]
fn pytorch_unknown_locality_needs_node_zero_with_allowed_cpus() {
    let no_zero = build(
        &[(1, 0, &[&[&[0], &[1]]]), (2, 1, &[&[&[2], &[3]]])],
        &[Some(1), None],
    );
    for policy in ["node", "socket", "exclusive", "core-complex"] {
        let e = plan_err(&no_zero, &format!("cpu: {{policy: {policy}}}"));
        assert_eq!(
            e,
            "GPU 1 has unknown NUMA locality, which PyTorch reads as node 0, but the machine has no node 0"
        );
    }
    let zero = build(
        &[(0, 0, &[&[&[0], &[1]]]), (1, 1, &[&[&[2], &[3]]])],
        &[None],
    );
    assert_eq!(cpus(&plan(&zero, "cpu: {policy: node}")), ["0-1"]);
    let e = plan_err(&zero, "cpu: {policy: node, allowed: \"2-3\"}");
    assert!(e.ends_with("but node 0 has no allowed CPUs"), "{e}");
}

#[test]
fn single_unique_ignores_min_and_max_cores_with_a_warning() {
    let t = build(&[(0, 0, &[&[&[0], &[1], &[2]]])], &[Some(0), Some(0)]);
    let p = plan(
        &t,
        "cpu: {policy: single-unique, min_cores: 4, max_cores: 2}",
    );
    assert_eq!(cpus(&p), ["0", "1"]);
    assert_eq!(
        texts(&p),
        [
            "cpu.min_cores is ignored by policy single-unique (it always gives a GPU one core); use unique-contiguous for several cores per GPU, or remove it",
            "cpu.max_cores is ignored by policy single-unique (it always gives a GPU one core); use unique-contiguous for several cores per GPU, or remove it",
        ]
    );
    // Where the limits apply, min above max stays an error.
    let spec = "cpu: {policy: unique-contiguous, min_cores: 4, max_cores: 2}";
    assert!(load_str("spec.yaml", spec).is_err());
}

#[test]
fn unbalanced_unique_interleaved_takes_buckets_to_the_end_of_the_list() {
    // POLICIES.md's example: one group of 3 GPUs over 10 buckets, unbalanced.
    let cores: Vec<Vec<u32>> = (0..10).map(|c| vec![c]).collect();
    let cores: Vec<&[u32]> = cores.iter().map(Vec::as_slice).collect();
    let t = build(&[(0, 0, &[&cores])], &[Some(0), Some(0), Some(0)]);
    let p = plan(&t, "cpu: {policy: unique-interleaved, balanced: false}");
    assert_eq!(cpus(&p), ["0,3,6,9", "1,4,7", "2,5,8"]);
    let p = plan(&t, "cpu: {policy: unique-interleaved}");
    assert_eq!(cpus(&p), ["0,3,6", "1,4,7", "2,5,8"], "balanced: 3 each");
}

#[test]
fn gpu_affinity_all_follows_each_cores_first_allowed_cpu() {
    // Cores {0,4} {1,5} {2,6} {3,7}; the mask hides CPU 0, so core {0,4} starts at 4 and comes
    // last: `all` with `max_cores: 1` keeps core {1,5}, as gpu_affinity sorts the cores' tuples.
    let t = build(
        &[(0, 0, &[&[&[0, 4], &[1, 5], &[2, 6], &[3, 7]]])],
        &[Some(0)],
    );
    let p = plan(&t, "cpu: {policy: all, max_cores: 1, allowed: \"1-7\"}");
    assert_eq!(cpus(&p), ["1,5"]);
}

#[test]
fn gpu_affinity_buckets_deal_by_first_allowed_cpu_but_lists_follow_the_key() {
    // Package 0: node 0 with cores {0,8} {1,9} (GPU 0), node 1 with {2,10} {3,11}. CPU 0 is
    // hidden, so A = [{1,9}, {8}] by first allowed CPU and U = [{2,10}, {3,11}] is dealt onto
    // them in that order; GPU 0's list follows the key: [{8}+{3,11}, {1,9}+{2,10}]. Flattened
    // by socket: {8}, {1,9}, {3,11}, {2,10}; `max_cores: 3` keeps the first three.
    let t = build(
        &[
            (0, 0, &[&[&[0, 8], &[1, 9]]]),
            (1, 0, &[&[&[2, 10], &[3, 11]]]),
        ],
        &[Some(0)],
    );
    let spec =
        "cpu: {policy: unique-contiguous, scope: socket, max_cores: 3, allowed: \"1-3,8-11\"}";
    assert_eq!(cpus(&plan(&t, spec)), ["1,3,8-9,11"]);
}

#[test]
fn every_gpu_affinity_mode_checks_socket_sets() {
    // GPU 0 has unknown locality (its sets are the whole machine); GPU 1's node 1 has no allowed
    // CPU, so its NODE set is empty (disjoint from all) but its SOCKET set is package 0, which
    // overlaps the machine without being it: gpu_affinity fails, in every mode and scope.
    let t = build(
        &[
            (0, 0, &[&[&[0], &[1]]]),
            (1, 0, &[&[&[2], &[3]]]),
            (2, 1, &[&[&[4], &[5]]]),
        ],
        &[None, Some(1)],
    );
    for policy in [
        "all",
        "single",
        "single-unique",
        "unique-contiguous",
        "unique-interleaved",
    ] {
        for scope in ["node", "socket"] {
            let e = plan_err(
                &t,
                &format!("cpu: {{policy: {policy}, scope: {scope}, allowed: \"0-1,4-5\"}}"),
            );
            assert_eq!(
                e, "GPUs 0 and 1 have overlapping but different socket CPU sets",
                "{policy} {scope}"
            );
        }
    }
}

#[test]
fn options_a_policy_ignores_are_warnings() {
    let t = machine("nvidia-dgx-a100");
    let with = plan(&t, "cpu: {policy: node, smt: one, reserve_per_l3: 1}");
    let without = plan(&t, "cpu: {policy: node}");
    assert_eq!(cpus(&with), cpus(&without), "the plan does not change");
    assert_eq!(
        texts(&with),
        [
            "cpu.smt is ignored by policy node (`torchrun --numa-binding=node` has no such setting); use policy auto, which honours it",
            "cpu.reserve_per_l3 is ignored by policy node (PyTorch's node has no reserved cores); use policy auto, which honours it",
            "ranks 0-7 share their CPUs, 2 ranks to 16 cores: OMP_NUM_THREADS is 8 in each, their fair share rather than one per core (set `env: {OMP_NUM_THREADS: N}` to choose)",
        ]
    );
    let p = plan(&t, "cpu: {policy: unique-contiguous, reserve_cores: 1}");
    assert_eq!(
        texts(&p),
        [
            "cpu.reserve_cores is ignored by policy unique-contiguous (gpu_affinity has no reserved cores); use policy auto, which honours it"
        ]
    );
    let p = plan(&t, "cpu: {policy: all, balanced: false}");
    let ignored: Vec<&str> = texts(&p)
        .into_iter()
        .filter(|w| w.contains(" is ignored "))
        .collect();
    assert_eq!(ignored.len(), 1, "{:?}", texts(&p));
    // `auto` uses every option: no warning.
    let p = plan(
        &t,
        "cpu: {smt: one, reserve_per_l3: 1, reserve_cores: 1, scope: socket, balanced: true, min_cores: 1, max_cores: 6}",
    );
    assert_eq!(texts(&p), Vec::<&str>::new());
}

#[test]
fn reserve_cores_keeps_the_last_cores_of_every_node() {
    let t = build(
        &[
            (0, 0, &[&[&[0], &[1], &[2]]]),
            (1, 0, &[&[&[3], &[4], &[5]]]),
        ],
        &[Some(0), Some(1)],
    );
    let p = plan(&t, "cpu: {reserve_cores: 1}");
    assert_eq!(cpus(&p), ["0-1", "3-4"]);
    assert_eq!(p.reserved.to_string(), "2,5");
}

#[test]
fn memory_nodes_local_follow_each_ranks_home() {
    // Aurora: CPU nodes 0 and 1, HBM nodes 2 and 3 (node + 2).
    let t = machine("alcf-aurora");
    let p = plan(&t, "memory: {policy: bind, nodes: \"local+2\"}");
    let nodes: Vec<String> = p
        .ranks
        .iter()
        .map(|r| format!("{:?}->{:?}", r.numa_node, r.memory.nodes))
        .collect();
    assert!(
        p.ranks
            .iter()
            .all(|r| r.memory.nodes == [NodeId(r.numa_node.unwrap().0 + 2)]),
        "{nodes:?}"
    );
    assert!(
        texts(&p).is_empty(),
        "HBM of the home node is local: {:?}",
        texts(&p)
    );
    let p = plan(&t, "memory: {policy: interleave, nodes: \"local,local+2\"}");
    assert!(p.ranks.iter().all(|r| r.memory.nodes.len() == 2));
    // An absolute list remote from some ranks' home is said.
    let p = plan(&t, "memory: {policy: bind, nodes: \"0\"}");
    let remote: Vec<&str> = texts(&p)
        .into_iter()
        .filter(|w| w.contains("remote"))
        .collect();
    assert_eq!(remote.len(), 1, "{:?}", texts(&p));
    assert!(
        remote[0].starts_with("memory of rank(s) 3-5 goes to node(s) 0"),
        "{}",
        remote[0]
    );
    // A `local+N` that names no node is an error.
    let spec = load_str("spec.yaml", "memory: {policy: bind, nodes: \"local+3\"}")
        .unwrap()
        .spec;
    let e = resolve(&spec, &t).unwrap_err();
    assert_eq!(
        e.to_string(),
        "memory node 4 does not exist on `alcf-aurora`"
    );
}

#[test]
fn cpu_only_ranks_spanning_nodes_keep_the_default_memory_policy() {
    // 2 CPU-only ranks on the 8 nodes of a DGX A100: each spans 4 nodes. `interleave` and
    // `bind` cover them all; `preferred` (the default, MPOL_PREFERRED, one node) prefers the
    // first and says so, instead of a list the kernel would cut to its first node.
    let t = machine("nvidia-dgx-a100");
    let p = plan(&t, "gpus: none\nranks_per_node: 2\nmemory: {policy: bind}");
    let nodes: Vec<String> = p
        .ranks
        .iter()
        .map(|r| numaplan::ids::node_list(&r.memory.nodes))
        .collect();
    assert_eq!(nodes, ["0-3", "4-7"]);
    let p = plan(&t, "gpus: none\nranks_per_node: 2");
    let nodes: Vec<String> = p
        .ranks
        .iter()
        .map(|r| numaplan::ids::node_list(&r.memory.nodes))
        .collect();
    assert_eq!(nodes, ["0", "4"]);
    assert!(
        texts(&p)
            .iter()
            .any(|w| w.starts_with("CPU-only rank(s) 0-1 span several nodes")),
        "{:?}",
        texts(&p)
    );
    let spec = load_str(
        "s.yaml",
        "gpus: none\nranks_per_node: 2\nmemory: {nodes: \"0,1\"}",
    )
    .unwrap()
    .spec;
    let e = resolve(&spec, &machine("nvidia-dgx-a100")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`preferred` memory takes one node, but 2 are listed"
    );
}

/// Ranks that share CPUs get their fair share of threads (cores / ranks sharing them, at least
/// 1), as torchrun sets 1 when it oversubscribes, and the plan says so; ranks of their own keep
/// one thread per core, and `env: {OMP_NUM_THREADS}` still wins.
#[test]
fn ranks_sharing_cores_get_their_fair_share_of_threads() {
    let t = machine("nvidia-dgx-a100");
    let threads = |p: &numaplan::plan::Plan| -> Vec<String> {
        p.ranks
            .iter()
            .map(|r| r.env["OMP_NUM_THREADS"].clone())
            .collect()
    };
    let shared =
        |p: &numaplan::plan::Plan| texts(p).iter().filter(|w| w.contains("fair share")).count();
    // node: two ranks on each node's 16 cores.
    let node = plan(&t, "cpu: {policy: node}");
    assert_eq!(threads(&node), vec!["8"; 8]);
    assert_eq!(shared(&node), 1, "{:?}", node.warnings);
    // exclusive: 8 cores each, nothing shared.
    let exclusive = plan(&t, "cpu: {policy: exclusive}");
    assert_eq!(threads(&exclusive), vec!["8"; 8]);
    assert_eq!(shared(&exclusive), 0, "{:?}", exclusive.warnings);
    // The user's own count wins, and then there is nothing to say.
    let own = plan(&t, "cpu: {policy: node}\nenv: {OMP_NUM_THREADS: '16'}");
    assert_eq!(threads(&own), vec!["16"; 8]);
    assert_eq!(shared(&own), 0, "{:?}", own.warnings);
    // More ranks than cores: at least one thread each.
    let many = plan(&t, "gpus: none\nranks_per_node: 300\ncpu: {policy: node}");
    assert!(
        threads(&many).iter().all(|n| n == "1"),
        "{:?}",
        threads(&many)
    );
}

/// The texts of a plan's warnings, in order.
fn texts(p: &Plan) -> Vec<&str> {
    p.warnings.iter().map(|w| w.message.as_str()).collect()
}
