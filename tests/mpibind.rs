//! `policy: mpibind` (docs/mpibind.md): mpibind's 48 published test-suite cases on their
//! original machine files (tests/data/mpibind), the 15 that differ from the 2021 publication
//! with their reasons, properties on random machines, and the plan on the node it runs on.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{numaplan, repo};
use numaplan::cpuset::CpuSet;
use numaplan::ids::{L3Id, NodeId, PackageId};
use numaplan::plan::Plan;
use numaplan::resolve::resolve;
use numaplan::spec::load::load_str;
use numaplan::topology::load_file;
use numaplan::topology::model::{Core, NodeKind, NumaNode, Topology, TopologyParts};
use proptest::prelude::*;
use serde_json::Value;

fn cases() -> Value {
    let text = std::fs::read_to_string(repo().join("tests/data/mpibind/cases.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A case's machine: the original XML of mpibind's `topo-xml/`, as numaplan reads it.
fn machine(case: &Value, loaded: &mut BTreeMap<String, Topology>) -> Topology {
    let file = case["original_xml"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    loaded
        .entry(file.to_string())
        .or_insert_with(|| load_file(&repo().join("tests/data/mpibind").join(file)).unwrap())
        .clone()
}

/// A case's parameters as a job spec.
fn spec_of(case: &Value, gpus: bool) -> String {
    let p = &case["params"];
    let mut spec = format!(
        "ranks_per_node: {}\ngpus: {}\ncpu:\n  policy: mpibind\n  greedy: {}\n  gpu_optim: {}\n",
        p["ntasks"],
        if gpus { "all" } else { "none" },
        p["greedy"] == 1,
        p["gpu_optim"] == 1
    );
    if p["smt"] != 0 {
        spec += &format!("  smt: {}\n", p["smt"]);
    }
    if p["in_nthreads"] != 0 {
        spec += &format!("  threads: {}\n", p["in_nthreads"]);
    }
    if let Some(set) = p["restr_set"].as_str() {
        let key = match p["restrict_type"].as_str() {
            Some("mem") => "allowed_nodes",
            _ => "allowed",
        };
        spec += &format!("  {key}: \"{set}\"\n");
    }
    spec
}

/// A job spec written to a file of its own: the directory (kept alive) and the file's path.
fn job_file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.yaml");
    std::fs::write(&job, text).unwrap();
    let job = job.to_str().unwrap().to_string();
    (dir, job)
}

fn plan(topo: &Topology, spec: &str) -> Plan {
    let spec = load_str("spec.yaml", spec)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .spec;
    let plan = resolve(&spec, topo).unwrap_or_else(|e| panic!("{e}\n{spec:?}"));
    plan.check(topo.allowed()).unwrap();
    plan
}

/// A plan as the cases write a mapping: per task its CPUs, reported threads and GPUs.
fn tasks(plan: &Plan) -> Value {
    plan.ranks
        .iter()
        .map(|r| {
            serde_json::json!({
                "cpus": r.cpus.to_string(),
                "nthreads": r.env["OMP_NUM_THREADS"].parse::<u64>().unwrap(),
                "gpus": r.gpus.iter().map(|g| g.index.0).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// Each published case's `expected` mapping, from numaplan's own reading of the original XML
/// (its GPUs counted by numaplan, not patched in).
#[test]
fn the_48_published_cases() {
    let cases = cases();
    let mut loaded = BTreeMap::new();
    let mut wrong = Vec::new();
    let all = cases["cases"].as_array().unwrap();
    for case in all {
        let topo = machine(case, &mut loaded);
        let name = case["topology"].as_str().unwrap();
        let counts = cases["topologies"][name]["patch"]["gpus_numaplan_counts"]
            .as_u64()
            .unwrap();
        assert_eq!(
            topo.gpus().len() as u64,
            counts,
            "{name}: GPUs numaplan counts"
        );
        let got = tasks(&plan(&topo, &spec_of(case, counts > 0)));
        if got != case["expected"] {
            wrong.push(format!(
                "{}:\n  got      {got}\n  expected {}",
                case["id"], case["expected"]
            ));
        }
    }
    assert_eq!(all.len(), 48);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The 15 cases whose mapping differs from the 2021 publication: each is marked, and its reason
/// names every part that differs (CPUs, threads, GPUs); the others equal the publication.
#[test]
fn the_cases_that_differ_from_2021_say_why() {
    let cases = cases();
    let mut differing = 0;
    for case in cases["cases"].as_array().unwrap() {
        let (now, then) = (&case["expected"], &case["expected_2021"]);
        let part_differs = |part: &str| {
            now.as_array().unwrap().len() != then.as_array().unwrap().len()
                || now
                    .as_array()
                    .unwrap()
                    .iter()
                    .zip(then.as_array().unwrap())
                    .any(|(a, b)| a[part] != b[part])
        };
        let parts: Vec<&str> = ["cpus", "nthreads", "gpus"]
            .into_iter()
            .filter(|p| part_differs(p))
            .collect();
        let marked = case["differs_from_2021"].as_bool().unwrap_or(false);
        assert_eq!(
            marked,
            !parts.is_empty(),
            "{}: differs_from_2021",
            case["id"]
        );
        if parts.is_empty() {
            continue;
        }
        differing += 1;
        let reason = case["reason"].as_str().unwrap();
        for part in parts {
            assert!(
                reason.contains(part),
                "{}: the reason does not explain {part}",
                case["id"]
            );
        }
    }
    assert_eq!(differing, 15);
    assert_eq!(cases["summary"]["differs_from_2021"], 15);
}

/// GPUs in hwloc's device order, not by index: LLNL's eas-tioga numbers its GCDs 4,5,2,3,6,7,0,1
/// along its CPUs; each rank's ROCR_VISIBLE_DEVICES names exactly its own.
#[test]
fn gpus_follow_hwlocs_device_order() {
    let topo = load_file(&repo().join("tests/data/mpibind/eas-tioga.xml")).unwrap();
    let p = plan(&topo, "ranks_per_node: 8\ncpu: {policy: mpibind}\n");
    let gpus: Vec<u32> = p.ranks.iter().map(|r| r.gpus[0].index.0).collect();
    assert_eq!(gpus, [4, 5, 2, 3, 6, 7, 0, 1]);
    for r in &p.ranks {
        assert_eq!(r.env["ROCR_VISIBLE_DEVICES"], r.gpus[0].index.0.to_string());
        assert_eq!(r.env["OMP_PLACES"], "threads");
        assert_eq!(r.env["OMP_PROC_BIND"], "spread");
    }
    // 16 tasks share each GCD by two; a GPU-less job sets no variable naming GPUs.
    let p = plan(&topo, "ranks_per_node: 16\ncpu: {policy: mpibind}\n");
    assert_eq!(p.ranks[0].gpus, p.ranks[1].gpus);
    let p = plan(
        &topo,
        "ranks_per_node: 4\ngpus: none\ncpu: {policy: mpibind}\n",
    );
    assert!(p.ranks.iter().all(|r| r.gpus.is_empty()));
    assert!(
        p.ranks
            .iter()
            .all(|r| !r.env.contains_key("ROCR_VISIBLE_DEVICES"))
    );
}

/// Without `ranks_per_node`, one task per GPU left, else one per NUMA domain (mpibind itself
/// has no default ntasks).
#[test]
fn the_default_is_a_task_per_gpu_else_per_domain() {
    let lassen = load_file(&repo().join("tests/data/mpibind/coral-lassen.xml")).unwrap();
    let p = plan(&lassen, "cpu: {policy: mpibind}\n");
    let gpus: Vec<u32> = p.ranks.iter().map(|r| r.gpus[0].index.0).collect();
    assert_eq!(gpus, [0, 1, 2, 3]);
    let p = plan(&lassen, "gpus: none\ncpu: {policy: mpibind}\n");
    assert_eq!(p.ranks.len(), 2);
    // One task per domain: its 20 cores, one PU each (mpibind's test coral-lassen.10).
    assert_eq!(p.ranks[0].cpus.len(), 20);
    assert_eq!(p.ranks[0].env["OMP_NUM_THREADS"], "20");
    let quartz = load_file(&repo().join("tests/data/mpibind/cts1-quartz-smt1.xml")).unwrap();
    assert_eq!(plan(&quartz, "cpu: {policy: mpibind}\n").ranks.len(), 2);
}

/// hwloc's structure rule, after a restriction: Lassen restricted to one core (8-11) is a chain
/// Machine-Package-L3-Core whose levels add nothing, so the Core vanishes into the Machine and
/// its PUs act as cores (docs/mpibind.md §10 B). Then `smt: 2` asks two PUs of a one-PU slot:
/// mpibind would set CPU -1, numaplan refuses (E0220); without smt each task gets one PU.
#[test]
fn a_restriction_to_one_core_leaves_no_core_level() {
    let lassen = load_file(&repo().join("tests/data/mpibind/coral-lassen.xml")).unwrap();
    let job = |smt: &str| {
        format!("ranks_per_node: 2\ncpu: {{policy: mpibind, allowed: \"8-11\"{smt}}}\n")
    };
    let spec = load_str("spec.yaml", &job(", smt: 2")).unwrap().spec;
    let error = resolve(&spec, &lassen).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("2 PU(s) of the slot of CPUs 8, which has 1 (8)"),
        "{error}"
    );
    let p = plan(&lassen, &job(""));
    let cpus: Vec<String> = p.ranks.iter().map(|r| r.cpus.to_string()).collect();
    assert_eq!(cpus, ["8-9", "10-11"]);
}

/// The structure rule on a tree of its own: a level whose objects each have one child goes
/// (the lower-ranked of the two; the Machine and PU levels never), its NUMA nodes passed on; an
/// SMT-1 machine has no Core level.
#[test]
fn the_structure_rule_merges_levels_that_add_nothing() {
    use numaplan::topology::tree::{CpuTree, Kind, TreeObject, TreeView};
    let core = |first: u32, smt: u32| {
        TreeObject::over(
            Kind::Core,
            3,
            (first..first + smt).map(|c| TreeObject::pu(c, 4)),
        )
    };
    let tree = |smt: u32| {
        let mut package = TreeObject::over(
            Kind::Package,
            1,
            std::iter::once(TreeObject::over(
                Kind::DataCache(3),
                2,
                [core(0, smt), core(smt, smt)].into_iter(),
            )),
        );
        package.nodes = vec![NodeId(0)];
        let mut machine = TreeObject::over(Kind::Machine, 0, std::iter::once(package));
        machine.nodes = vec![NodeId(9)];
        let mut tree = CpuTree { root: machine };
        tree.merge_levels();
        tree
    };
    let smt2 = tree(2);
    // The Package and the L3 go into the Machine, which takes node 0 after its own node 9.
    assert_eq!(smt2.root.nodes, [NodeId(9), NodeId(0)]);
    assert_eq!(smt2.root.children.len(), 2);
    assert!(smt2.root.children.iter().all(|c| c.kind == Kind::Core));
    let view = TreeView::new(&smt2);
    assert_eq!((view.core_depth(), view.smt_level()), (3, 2));
    let smt1 = TreeView::new(&tree(1));
    assert_eq!(
        (smt1.core_depth(), smt1.smt_level()),
        (4, 1),
        "no Core level"
    );
}

/// The tree an XML import's child sends back reads back whole (its PUs left implicit); loaded
/// for a policy that never reads it, the child walks and sends none.
#[test]
fn the_tree_reads_back_as_sent() {
    use numaplan::topology::tree::{CpuTree, HwlocTree};
    use numaplan::topology::{Reading, load_file_for};
    for file in ["coral-lassen.xml", "eas-tioga.xml", "cts1-quartz-smt1.xml"] {
        let path = repo().join("tests/data/mpibind").join(file);
        let topo = load_file(&path).unwrap();
        let HwlocTree::Read(tree) = topo.hwloc_tree().clone() else {
            panic!("{file}: an hwloc source read for mpibind keeps hwloc's tree");
        };
        let model = load_file_for(&path, Reading::Model).unwrap();
        assert_eq!(model.hwloc_tree(), &HwlocTree::NotRead, "{file}");
        assert!(model.cpu_tree().is_none(), "{file}");
        let text = tree.encode();
        assert_eq!(CpuTree::decode(&text), Some(tree), "{file}");
        assert!(!text.contains(" U "), "{file}: PUs are implicit");
    }
}

/// A GPU list out of index order (`gpus: [1, 0]`): mpibind selects those GPUs and hands them
/// out in hwloc's device order, not in the job's order (docs/mpibind.md §4.1: mpibind has no
/// job order); a list of one GPU of the other package maps every task there.
#[test]
fn a_gpu_list_selects_gpus_that_mpibind_takes_in_device_order() {
    let lassen = load_file(&repo().join("tests/data/mpibind/coral-lassen.xml")).unwrap();
    let p = plan(
        &lassen,
        "ranks_per_node: 2\ngpus: [1, 0]\ncpu: {policy: mpibind}\n",
    );
    let gpus: Vec<Vec<u32>> = p
        .ranks
        .iter()
        .map(|r| r.gpus.iter().map(|g| g.index.0).collect())
        .collect();
    assert_eq!(gpus, [[0], [1]]);
    assert_eq!(p.ranks[0].env["CUDA_VISIBLE_DEVICES"], "0");
    assert_eq!(p.ranks[1].env["CUDA_VISIBLE_DEVICES"], "1");
    assert!(
        p.ranks
            .iter()
            .all(|r| r.cpus.is_subset(&lassen.node_cpus(NodeId(0))))
    );
    let p = plan(
        &lassen,
        "ranks_per_node: 2\ngpus: [2]\ncpu: {policy: mpibind}\n",
    );
    assert!(
        p.ranks
            .iter()
            .all(|r| r.gpus.len() == 1 && r.gpus[0].index.0 == 2)
    );
    assert!(
        p.ranks
            .iter()
            .all(|r| r.cpus.is_subset(&lassen.node_cpus(NodeId(8))))
    );
}

/// Cores with different thread counts (a hybrid machine: two cores of 2 threads, two of 1):
/// when the tasks need 2 PUs of every core, an E-core slot has 1 and mpibind would set CPU -1;
/// numaplan refuses and names the slot. With one PU per core the plan is made.
#[test]
fn cores_of_different_thread_counts_are_refused_only_where_a_core_falls_short() {
    let mut parts = TopologyParts {
        name: "hybrid".into(),
        ..Default::default()
    };
    parts.nodes.push(NumaNode {
        id: NodeId(0),
        package: Some(PackageId(0)),
        kind: NodeKind::Cpu,
        memory_mib: None,
    });
    for cpus in ["0-1", "2-3", "4", "5"] {
        parts.cores.push(Core {
            cpus: cpus.parse().unwrap(),
            package: PackageId(0),
            node: NodeId(0),
            l3: L3Id(0),
        });
    }
    let hybrid = Topology::build(parts).unwrap();
    let spec = load_str(
        "spec.yaml",
        "ranks_per_node: 6\ngpus: none\ncpu: {policy: mpibind}\n",
    )
    .unwrap()
    .spec;
    let error = resolve(&spec, &hybrid).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("2 PU(s) of the core of CPU 4, which has 1 (4)"),
        "{error}"
    );
    let p = plan(
        &hybrid,
        "ranks_per_node: 4\ngpus: none\ncpu: {policy: mpibind}\n",
    );
    let cpus: Vec<String> = p.ranks.iter().map(|r| r.cpus.to_string()).collect();
    assert_eq!(cpus, ["0", "2", "4", "5"]);
}

/// CPUs that no NUMA node covers in hwloc's view (an export restricted to node 1's memory
/// leaves CPUs 0-3 without one) are not the machine's: mpibind's restriction leaves them out,
/// and the plan says so.
#[test]
fn cpus_without_a_numa_node_get_no_task() {
    let dir = tempfile::tempdir().unwrap();
    common::restricted_to_node_1(dir.path());
    let topo = load_file(&dir.path().join("restricted.xml")).unwrap();
    let p = plan(
        &topo,
        "ranks_per_node: 2\ngpus: none\ncpu: {policy: mpibind}\n",
    );
    let cpus: Vec<String> = p.ranks.iter().map(|r| r.cpus.to_string()).collect();
    // Node 1's two cores, one task and one PU each (mpibind's thread count: a core per task).
    assert_eq!(cpus, ["4", "6"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.message.contains("CPUs 0-3 have no NUMA node")),
        "{:?}",
        p.warnings
    );
}

/// A restriction that leaves a GPU-less part of the machine gives GPU-less ranks whose
/// visibility variable is empty (not every GPU), never an error for want of GPUs.
#[test]
fn a_restriction_without_gpus_gives_gpu_less_ranks() {
    let topo = load_file(&repo().join("tests/data/mpibind/epyc-corona.xml")).unwrap();
    let p = plan(
        &topo,
        "ranks_per_node: 2\ngpus: all\ncpu: {policy: mpibind, allowed_nodes: \"0\"}\n",
    );
    for r in &p.ranks {
        assert!(r.gpus.is_empty());
        assert_eq!(r.env["ROCR_VISIBLE_DEVICES"], "");
    }
}

/// `explain --format mpibind` prints mpibind's own verbose lines, and the text explain says
/// where OMP_NUM_THREADS (mpibind's count) is not the CPU count.
#[test]
fn explain_speaks_mpibind() {
    let (_dir, job) = job_file("ranks_per_node: 1\ncpu: {policy: mpibind, threads: 4}\n");
    let topology = repo().join("tests/data/mpibind/coral-lassen.xml");
    let (job, topology) = (job.as_str(), topology.to_str().unwrap());
    let lines = numaplan(&[
        "explain",
        job,
        "--topology",
        topology,
        "--format",
        "mpibind",
    ])
    .ok();
    assert_eq!(
        lines,
        "mpibind: task   0 nths  4 gpus 0,1,2,3 cpus 8-87,96-175\n"
    );
    let text = numaplan(&["explain", job, "--topology", topology, "--color", "never"]).ok();
    assert!(
        text.contains("rank 0: OMP_NUM_THREADS=4 on 160 CPUs (mpibind's count"),
        "{text}"
    );
}

/// Compiled on the node, the CPUs this process may use are mpibind's CPU restriction (as its
/// Slurm and Flux plugins restrict it to the job's cores): under `taskset -c 1` both ranks get
/// CPU 1, and `bind` binds there.
#[test]
fn on_the_node_the_allowed_cpus_restrict_the_machine() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let (_dir, job) = job_file("ranks_per_node: 2\ngpus: none\ncpu: {policy: mpibind}\n");
    let job = job.as_str();
    let bin = env!("CARGO_BIN_EXE_numaplan");
    let compile = |taskset: Option<&str>| {
        let mut cmd = match taskset {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus, bin]);
                c
            }
            None => Command::new(bin),
        };
        let out = common::succeed(cmd.args([
            "compile",
            job,
            "--topology",
            "discover",
            "--format",
            "json",
            "-q",
        ]));
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        plan["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cpus"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let whole = compile(None);
    assert_ne!(whole[0], whole[1], "two CPUs, two ranks: {whole:?}");
    assert_eq!(compile(Some("1")), ["1", "1"]);
    let out = common::succeed(
        Command::new("taskset")
            .args(["-c", "1", bin, "bind", job, "--local-rank", "0", "-q", "--"])
            .args(["grep", "Cpus_allowed_list", "/proc/self/status"]),
    );
    let line = String::from_utf8_lossy(&out.stdout);
    assert_eq!(line.split_whitespace().nth(1), Some("1"), "{line}");
}

/// `exec` runs an mpibind plan of this machine for real: every rank's CPUs and mpibind's OpenMP
/// variables, read back from `/proc` and the rank's environment, are the plan's.
#[test]
fn exec_runs_the_mpibind_plan() {
    let (_dir, job) = job_file("ranks_per_node: 2\ngpus: none\ncpu: {policy: mpibind}\n");
    let job = job.as_str();
    let plan: Value = serde_json::from_str(
        &numaplan(&[
            "compile",
            job,
            "--topology",
            "discover",
            "--format",
            "json",
            "-q",
        ])
        .ok(),
    )
    .unwrap();
    let script = "echo $OMP_NUM_THREADS $OMP_PLACES $OMP_PROC_BIND; \
                  grep Cpus_allowed_list /proc/self/status";
    let out = numaplan(&[
        "exec",
        job,
        "--topology",
        "discover",
        "-q",
        "--",
        "sh",
        "-c",
        script,
    ])
    .ok();
    for rank in plan["ranks"].as_array().unwrap() {
        let (r, cpus) = (&rank["local_rank"], rank["cpus"].as_str().unwrap());
        let threads = rank["env"]["OMP_NUM_THREADS"].as_str().unwrap();
        assert!(
            out.contains(&format!("[{r}] {threads} threads spread\n")),
            "{out}"
        );
        assert!(
            out.contains(&format!("[{r}] Cpus_allowed_list:\t{cpus}\n")),
            "{out}"
        );
    }
}

/// `nodes` nodes, `per_package` to a package, `cores` cores of `smt` CPUs each, L3 groups of
/// `l3` cores within a node.
fn random_machine(nodes: u32, per_package: u32, cores: u32, smt: u32, l3: u32) -> Topology {
    let total = nodes * cores;
    let mut parts = TopologyParts {
        name: "random".into(),
        ..Default::default()
    };
    for n in 0..nodes {
        parts.nodes.push(NumaNode {
            id: NodeId(n),
            package: Some(PackageId(n / per_package)),
            kind: NodeKind::Cpu,
            memory_mib: None,
        });
        for c in 0..cores {
            let key = n * cores + c;
            parts.cores.push(Core {
                cpus: (0..smt).map(|t| key + t * total).collect(),
                package: PackageId(n / per_package),
                node: NodeId(n),
                l3: L3Id(n * cores + c / l3),
            });
        }
    }
    Topology::build(parts).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// With equal nodes and `gpu_optim: false`, nodes x k ranks give every node k ranks, each
    /// inside its node, and no CPU twice while there are no more ranks than cores.
    #[test]
    fn equal_nodes_get_equal_ranks(
        nodes in 1u32..6,
        per_package in 1u32..3,
        cores in 1u32..9,
        smt in prop::sample::select(vec![1u32, 2, 4]),
        l3 in 1u32..5,
        k in 1u32..5,
    ) {
        let topo = random_machine(nodes, per_package, cores, smt, l3);
        let spec = format!(
            "ranks_per_node: {}\ngpus: none\ncpu: {{policy: mpibind, gpu_optim: false}}\n",
            nodes * k
        );
        let p = plan(&topo, &spec);
        for n in 0..nodes {
            let node = topo.node_cpus(NodeId(n));
            let inside = p.ranks.iter().filter(|r| r.cpus.is_subset(&node)).count();
            prop_assert_eq!(inside as u32, k, "node {}", n);
        }
        let in_a_node = |r: &numaplan::plan::RankBinding| {
            (0..nodes).any(|n| r.cpus.is_subset(&topo.node_cpus(NodeId(n))))
        };
        prop_assert!(p.ranks.iter().all(in_a_node));
        if k <= cores {
            let mut seen = CpuSet::new();
            for r in &p.ranks {
                let all: Vec<String> = p.ranks.iter().map(|r| r.cpus.to_string()).collect();
                prop_assert!(!seen.intersects(&r.cpus), "CPU given twice: {:?}", all);
                seen = seen.union(&r.cpus);
            }
        }
    }

    /// Greedy, with fewer ranks than nodes: every node's CPUs go to exactly one rank, whole.
    #[test]
    fn greedy_gives_whole_nodes(
        nodes in 2u32..7,
        per_package in 1u32..3,
        cores in 1u32..5,
        smt in 1u32..3,
        ranks in 1u32..6,
    ) {
        prop_assume!(ranks < nodes);
        let topo = random_machine(nodes, per_package, cores, smt, 2);
        let spec = format!("ranks_per_node: {ranks}\ngpus: none\ncpu: {{policy: mpibind}}\n");
        let p = plan(&topo, &spec);
        prop_assert_eq!(p.ranks.len() as u32, ranks);
        for n in 0..nodes {
            let node = topo.node_cpus(NodeId(n));
            let holders = p.ranks.iter().filter(|r| r.cpus.intersects(&node)).count();
            prop_assert_eq!(holders, 1, "node {}", n);
            prop_assert!(p.ranks.iter().any(|r| node.is_subset(&r.cpus)));
        }
    }
}

/// mpibind's `random-gpu-under-l3` machine with GPU 1's bridge (`0000:18`) moved from under its
/// L3 cache to beside GPU 0's, under the NUMA node's group: the same machine to the model every
/// other policy reads, another to mpibind, which takes GPUs in hwloc's order of the tree.
fn gpu_beside_the_l3() -> String {
    let text =
        std::fs::read_to_string(repo().join("tests/data/mpibind/random-gpu-under-l3.xml")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let object = |lines: &[&str], id: &str| {
        let at = lines
            .iter()
            .position(|l| l.contains(&format!("gp_index=\"{id}\"")))
            .unwrap();
        let indent = &lines[at][..lines[at].len() - lines[at].trim_start().len()];
        let end = (at..lines.len())
            .find(|&k| lines[k] == format!("{indent}</object>"))
            .unwrap();
        (at, end)
    };
    let (at, end) = object(&lines, "13");
    let bridge: Vec<&str> = lines[at..=end].to_vec();
    let mut rest: Vec<&str> = [&lines[..at], &lines[end + 1..]].concat();
    let (_, after) = object(&rest, "19");
    rest.splice(after + 1..after + 1, bridge);
    rest.join("\n") + "\n"
}

/// The fingerprint covers what a plan may depend on: two machines that differ only in where a
/// GPU's bridge hangs (under an L3 cache, or beside it) get two fingerprints for mpibind, which
/// plans them differently, and one for `policy: auto`, which plans them alike. A plan whose
/// fingerprint was made without the tree (numaplan before the change) is refused by `explain`.
#[test]
fn a_fingerprint_tells_apart_machines_that_mpibind_plans_differently() {
    let dir = tempfile::tempdir().unwrap();
    let under = dir.path().join("under.xml");
    let beside = dir.path().join("beside.xml");
    std::fs::copy(
        repo().join("tests/data/mpibind/random-gpu-under-l3.xml"),
        &under,
    )
    .unwrap();
    std::fs::write(&beside, gpu_beside_the_l3()).unwrap();
    std::fs::write(dir.path().join("mpibind.yaml"), "cpu:\n  policy: mpibind\n").unwrap();
    std::fs::write(
        dir.path().join("auto.yaml"),
        "gpus: all\ncpu:\n  policy: auto\n",
    )
    .unwrap();
    let compile = |spec: &str, machine: &str, out: &str| {
        let run = common::numaplan_in(
            dir.path(),
            &["compile", spec, "--topology", machine, "-o", out],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        std::fs::read_to_string(dir.path().join(out)).unwrap()
    };
    let fingerprint = |plan: &str| {
        plan.lines()
            .find_map(|l| l.trim().strip_prefix("fingerprint: "))
            .unwrap()
            .to_string()
    };
    let first_gpus = |plan: &str| {
        plan.lines()
            .find(|l| l.trim_start().starts_with("gpus: ["))
            .unwrap()
            .trim()
            .to_string()
    };
    let mpibind_under = compile("mpibind.yaml", "under.xml", "mu.yaml");
    let mpibind_beside = compile("mpibind.yaml", "beside.xml", "mb.yaml");
    assert_eq!(first_gpus(&mpibind_under), "gpus: [1, 0, 2, 3]");
    assert_eq!(first_gpus(&mpibind_beside), "gpus: [0, 1, 2, 3]");
    assert_ne!(fingerprint(&mpibind_under), fingerprint(&mpibind_beside));
    let auto_under = compile("auto.yaml", "under.xml", "au.yaml");
    let auto_beside = compile("auto.yaml", "beside.xml", "ab.yaml");
    assert_eq!(fingerprint(&auto_under), fingerprint(&auto_beside));
    let ranks = |plan: &str| plan.split("\nranks:").nth(1).unwrap().to_string();
    assert_eq!(ranks(&auto_under), ranks(&auto_beside));
    // The mpibind plan as numaplan wrote it before: its fingerprint of the model alone.
    let old = mpibind_under.replace(&fingerprint(&mpibind_under), &fingerprint(&auto_under));
    std::fs::write(dir.path().join("old.yaml"), old).unwrap();
    let run = common::numaplan_in(dir.path(), &["explain", "old.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.starts_with(&format!(
            "error[E0418]: `old.yaml` was made for topology fingerprint {}, and `under.xml` has {}",
            fingerprint(&auto_under),
            fingerprint(&mpibind_under)
        )),
        "{}",
        run.stderr
    );
    let run = common::numaplan_in(dir.path(), &["explain", "mu.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// An hwloc machine read without its tree never plans `policy: mpibind` from the model's own
/// levels instead: the resolver refuses (E0403, a bug were a caller to do it).
#[test]
fn mpibind_refuses_a_machine_read_without_its_tree() {
    use numaplan::resolve::ResolveErrorKind;
    use numaplan::topology::{Reading, load_file_for};
    let path = repo().join("tests/data/mpibind/coral-lassen.xml");
    let model = load_file_for(&path, Reading::Model).unwrap();
    let spec = load_str("spec.yaml", "cpu:\n  policy: mpibind\n")
        .unwrap()
        .spec;
    let error = resolve(&spec, &model).unwrap_err();
    assert!(
        matches!(error.kind, ResolveErrorKind::TreeNotRead { .. }),
        "{error}"
    );
    // The same machine read for mpibind plans.
    plan(&load_file(&path).unwrap(), "cpu:\n  policy: mpibind\n");
}

/// `cpu.smt: 0` is mpibind's automatic choice (docs/mpibind.md), as mpibind users write it: the
/// plan of leaving the key out, with no warning that the greedy path ignores it. Under another
/// policy 0 threads per core stays an error.
#[test]
fn smt_zero_is_mpibinds_automatic_choice() {
    let lassen = load_file(&repo().join("tests/data/mpibind/coral-lassen.xml")).unwrap();
    for (tasks, greedy) in [(8, false), (1, true)] {
        let base = format!("ranks_per_node: {tasks}\ncpu:\n  policy: mpibind\n");
        let automatic = plan(&lassen, &base);
        let zero = plan(&lassen, &format!("{base}  smt: 0\n"));
        assert_eq!(zero, automatic, "{tasks} task(s)");
        assert!(
            zero.warnings
                .iter()
                .all(|w| w.code != numaplan::diag::codes::W0204_OPTION_IGNORED),
            "greedy {greedy}: {:?}",
            zero.warnings
        );
    }
    let other = load_str("spec.yaml", "cpu:\n  policy: auto\n  smt: 0\n");
    assert!(other.is_err());
}

/// A restriction that merges levels moves the GPUs of the objects that go, and the order of the
/// merges decides the device order: hwloc merges from the bottom up. On random-gpu-under-l3
/// restricted to CPU 5, GPU 2 hangs from the L3 cache and GPU 3 from the NUMA node's group;
/// libmpibind (HEAD d529180 on hwloc 2.9, run by hand on this XML) gives tasks 0-11 GPU 2 and
/// tasks 12-23 GPU 3. numaplan merged from the top and gave them the other way round.
#[test]
fn merges_after_a_restriction_keep_hwlocs_device_order() {
    let topo = load_file(&repo().join("tests/data/mpibind/random-gpu-under-l3.xml")).unwrap();
    let plan = plan(
        &topo,
        "gpus: all\nranks_per_node: 24\ncpu: {policy: mpibind, greedy: true, gpu_optim: true, threads: 1, allowed: \"5\"}\n",
    );
    let gpus: Vec<u32> = plan.ranks.iter().map(|r| r.gpus[0].index.0).collect();
    let expected: Vec<u32> = [[2; 12], [3; 12]].concat();
    assert_eq!(gpus, expected, "{}", tasks(&plan));
    assert!(plan.ranks.iter().all(|r| r.cpus.to_string() == "5"));
}
