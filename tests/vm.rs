//! Real multi-NUMA Linux kernels under QEMU (tests/vm/qemu-numa.sh, software emulation). In each
//! guest, `numaplan topo` must discover what QEMU was told: nodes, CPU lists, SMT siblings,
//! packages, distances, memory-only nodes, a NIC's node, a taskset restriction and a cgroup
//! cpuset (CPUs and memory nodes); and a
//! captured fixture must compile to the plan discovery gives. In a 4-node guest `numaplan exec`
//! with `policy: auto, memory: bind` starts one rank per node whose CPUs are its node's and whose
//! touched pages all land on that node; with two GPUs on remote nodes, `numaplan bind` binds each
//! rank to its GPU's node. Needs root (apt, the guest's kernel package):
//! `scripts/test.sh` sets NUMAPLAN_QEMU=1 when it runs as root, as CI does.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// Boots a guest shaped by `env` (qemu-numa.sh's variables) that runs `script` with numaplan
/// and `extra` in /opt; returns the guest's lines and the whole log, or `None` when
/// NUMAPLAN_QEMU is not set. Guests boot one at a time (under software emulation, parallel
/// guests on a small machine starve each other until the guest kernel reports soft lockups),
/// each from its own directory, with the kernel unpacked once.
fn boot(script: &str, env: &[(&str, &str)], extra: &[&Path]) -> Option<(Vec<String>, String)> {
    if std::env::var_os("NUMAPLAN_QEMU").is_none() {
        eprintln!("skipped: set NUMAPLAN_QEMU=1 (as root) to boot the multi-NUMA guests");
        return None;
    }
    static PREPARED: Mutex<bool> = Mutex::new(false);
    let harness = common::repo().join("tests/vm/qemu-numa.sh");
    let shared = std::env::var("QEMU_NUMA_DIR").unwrap_or_else(|_| "/tmp/numaplan-qemu".into());
    // Held until the guest has powered off; a failed boot must not poison it for the others.
    let mut prepared = PREPARED.lock().unwrap_or_else(|e| e.into_inner());
    {
        if !*prepared {
            common::succeed(
                Command::new("bash")
                    .arg(&harness)
                    .arg("prepare")
                    .env("QEMU_NUMA_DIR", &shared),
            );
            *prepared = true;
        }
    }
    let kernel = std::fs::read_dir(Path::new(&shared).join("kernel/boot"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("vmlinuz-")
        })
        .max()
        .expect("prepare unpacked a kernel");
    let mut files = vec![env!("CARGO_BIN_EXE_numaplan").to_string()];
    files.extend(extra.iter().map(|p| p.display().to_string()));
    let run = || {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("bash")
            .arg(&harness)
            .args(["run", "--"])
            .arg(common::repo().join(script))
            .envs(env.iter().copied())
            .env("QEMU_NUMA_DIR", dir.path())
            .env("QEMU_NUMA_KERNEL", &kernel)
            .env("QEMU_NUMA_EXTRA", files.join(" "))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (mut ok, mut log) = run();
    // Under software emulation a guest now and then hangs before its init runs: in the
    // firmware ("Booting from ROM...", then nothing until the timeout), or in the kernel's boot
    // with every vCPU in a soft lockup (16 vCPUs emulated on a 2-CPU host). That is no result
    // of the test's, so it boots once more. A guest whose init ran (it prints
    // QEMU_NUMA_UPTIME first) and failed is not retried.
    let init_ran = |log: &str| log.contains("QEMU_NUMA_UPTIME=");
    if !ok && !init_ran(&log) {
        eprintln!("the guest hung before its init ran; booting it again:\n{log}");
        (ok, log) = run();
    }
    assert!(ok, "guest failed:\n{log}");
    let guest = log
        .lines()
        .filter_map(|l| l.strip_prefix("  guest| "))
        .map(String::from)
        .collect();
    Some((guest, log))
}

/// The JSON a guest script printed between `TAG_BEGIN` and `TAG_END`.
fn section<S: AsRef<str>>(guest: &[S], tag: &str) -> Value {
    let lines: Vec<&str> = guest.iter().map(AsRef::as_ref).collect();
    let begin = lines
        .iter()
        .position(|l| *l == format!("{tag}_BEGIN"))
        .unwrap_or_else(|| panic!("{tag} not printed:\n{}", lines.join("\n")));
    let end = lines
        .iter()
        .position(|l| *l == format!("{tag}_END"))
        .unwrap();
    serde_json::from_str(&lines[begin + 1..end].join("\n")).unwrap()
}

/// A node's cores as sorted CPU lists, from its L3 groups' `threads` (the k-th list holds every
/// core's k-th hardware thread).
fn cores(node: &Value) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for group in node["l3_groups"].as_array().unwrap() {
        let lists: Vec<Vec<u32>> = group["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| cpus(t.as_str().unwrap()))
            .collect();
        for i in 0..lists[0].len() {
            let mut core: Vec<u32> = lists.iter().map(|l| l[i]).collect();
            core.sort();
            out.push(core);
        }
    }
    out.sort();
    out
}

/// A Linux cpulist (`0-3,8`) as CPUs.
fn cpus(list: &str) -> Vec<u32> {
    list.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => a.parse().unwrap()..=b.parse().unwrap(),
            None => p.parse().unwrap()..=p.parse().unwrap(),
        })
        .collect()
}

/// The distance matrix rows of a topology, by node id.
fn distances(topo: &Value) -> Vec<Vec<u64>> {
    let map = topo["distances"].as_object().unwrap();
    (0..map.len())
        .map(|i| {
            map[&i.to_string()]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect()
        })
        .collect()
}

const SMT_DISTANCES: &str = "10 12 32 32;12 10 32 32;32 32 10 12;32 32 12 10";

/// 2 packages x 2 NUMA nodes x 2 cores x SMT2, asymmetric distances, a NIC on node 2; then the
/// same machine seen through `taskset -c 0-5`.
#[test]
fn discovery_on_two_packages_with_smt() {
    let Some((guest, log)) = boot(
        "tests/vm/topo-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "16"),
            ("QEMU_NUMA_SOCKETS", "2"),
            ("QEMU_NUMA_THREADS", "2"),
            // TCG's `max` CPU model hides SMT from the guest kernel; Skylake-Client shows it.
            ("QEMU_NUMA_CPU_MODEL", "Skylake-Client"),
            ("QEMU_NUMA_MEM_MB", "128"),
            ("QEMU_NUMA_DISTANCES", SMT_DISTANCES),
            ("QEMU_NUMA_NIC_NODE", "2"),
            ("QEMU_GUEST_ALLOWED", "0-5"),
            ("QEMU_GUEST_CGROUP_CPUS", "4-11"),
            ("QEMU_GUEST_CGROUP_MEMS", "1-2"),
        ],
        &[],
    ) else {
        return;
    };
    let topo = section(&guest, "TOPO_JSON");
    let nodes = topo["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{topo}");
    // In a cgroup cpuset: the same machine, the cpuset's CPUs and memory nodes allowed.
    let cgroup = section(&guest, "CGROUP_JSON");
    assert_eq!(cgroup["nodes"], topo["nodes"], "{cgroup}");
    assert_eq!(cgroup["allowed"], "4-11", "{cgroup}");
    assert_eq!(cgroup["allowed_memory_nodes"], "1-2", "{cgroup}");
    for (i, n) in nodes.iter().enumerate() {
        let first = 4 * i as u32;
        assert_eq!(n["id"], i as u64, "{n}");
        assert_eq!(n["package"], (i / 2) as u64, "{n}");
        assert_eq!(n["cpus"], format!("{}-{}", first, first + 3), "{n}");
        // QEMU numbers threads innermost: CPUs 2k and 2k+1 are one core's siblings.
        assert_eq!(
            cores(n),
            [[first, first + 1], [first + 2, first + 3]],
            "SMT siblings of node {i}: {n}"
        );
        assert!(n["memory_mib"].as_u64().unwrap() > 64, "{n}");
    }
    let want: Vec<Vec<u64>> = SMT_DISTANCES
        .split(';')
        .map(|r| r.split(' ').map(|d| d.parse().unwrap()).collect())
        .collect();
    assert_eq!(distances(&topo), want);
    let nics = topo["nics"].as_array().unwrap();
    assert_eq!(nics.len(), 1, "{topo}");
    assert_eq!(
        nics[0]["numa_node"], 2,
        "the NIC behind the node-2 expander bridge: {topo}"
    );
    assert!(topo.get("allowed").is_none(), "nothing restricted: {topo}");

    // Under taskset: the same machine, 6 of its CPUs allowed, and the plan says what that cut.
    let restricted = section(&guest, "RESTRICTED_JSON");
    assert_eq!(restricted["allowed"], "0-5", "{restricted}");
    assert_eq!(restricted["nodes"], topo["nodes"]);
    let plan = section(&guest, "RESTRICTED_PLAN");
    let warnings = common::plan_warnings(&plan);
    for (node, of) in [(1, 2), (2, 0), (3, 0)] {
        let want = format!("node {node} has {of} of 4 CPUs allowed");
        assert!(
            warnings.iter().any(|w| w.starts_with(&want)),
            "{want}: {warnings:?}"
        );
    }
    for r in plan["ranks"].as_array().unwrap() {
        assert!(
            cpus(r["cpus"].as_str().unwrap()).iter().all(|&c| c <= 5),
            "{r}"
        );
    }
    // A fixture captured with `topo --format yaml -o` compiles to the plan discovery gives,
    // restriction included.
    assert!(
        guest.iter().any(|l| l == "FIXTURE_PLAN_SAME"),
        "the captured fixture's plan differs:\n{log}"
    );
}

/// 4 nodes, node 3 memory-only (no CPUs), a NIC on node 1.
#[test]
fn discovery_with_a_memory_only_node() {
    let Some((guest, _)) = boot(
        "tests/vm/topo-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "6"),
            ("QEMU_NUMA_SOCKETS", "1"),
            ("QEMU_NUMA_NODE_CPUS", "0-1 2-3 4-5 -"),
            ("QEMU_NUMA_MEM_MB", "128"),
            (
                "QEMU_NUMA_DISTANCES",
                "10 16 16 28;16 10 16 28;16 16 10 28;28 28 28 10",
            ),
            ("QEMU_NUMA_NIC_NODE", "1"),
            ("QEMU_GUEST_ALLOWED", "0-5"),
        ],
        &[],
    ) else {
        return;
    };
    let topo = section(&guest, "TOPO_JSON");
    let nodes = topo["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{topo}");
    for (i, n) in nodes.iter().take(3).enumerate() {
        assert_eq!(n["cpus"], format!("{}-{}", 2 * i, 2 * i + 1), "{n}");
        assert!(n.get("kind").is_none(), "a CPU node: {n}");
    }
    let memory = &nodes[3];
    assert_eq!(memory["id"], 3);
    assert_eq!(memory["kind"], "memory", "{memory}");
    assert!(memory.get("cpus").is_none(), "{memory}");
    assert!(memory["memory_mib"].as_u64().unwrap() > 64, "{memory}");
    assert_eq!(distances(&topo)[3], [28, 28, 28, 10]);
    assert_eq!(distances(&topo)[0], [10, 16, 16, 28]);
    assert_eq!(topo["nics"][0]["numa_node"], 1, "{topo}");
    assert!(guest.iter().any(|l| l == "FIXTURE_PLAN_SAME"));
}

/// Two GPUs (display devices of a GPU vendor) behind expander bridges on nodes 3 and 1: GPU 0,
/// the lower PCI address, is on node 3. Without a driver they are no GPUs (nothing says they
/// compute); with the KFD topology ROCm's driver writes, discovery places each on its node, and `numaplan bind`
/// binds rank 0 to node 3 and rank 1 to node 1, CPUs and memory, read back from /proc, each
/// seeing its own GPU; the node check counts both GPUs with /proc/bus/pci/devices and, masked,
/// without it; `gpus: visible` takes the GPU ROCR_VISIBLE_DEVICES names.
#[test]
fn bind_follows_gpus_to_their_nodes_in_a_guest() {
    let Some((guest, log)) = boot(
        "tests/vm/gpu-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "8"),
            ("QEMU_NUMA_MEM_MB", "256"),
            ("QEMU_NUMA_GPU_NODES", "3 1"),
        ],
        &[],
    ) else {
        return;
    };
    // Display devices that nothing says compute are no GPUs; the notes name them.
    let bare = section(&guest, "NOKFD_JSON");
    assert!(bare.get("gpus").is_none(), "{bare}");
    let notes: Vec<&str> = bare["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("is not counted as a GPU"))
        .collect();
    assert_eq!(notes.len(), 2, "{bare}");
    assert!(
        notes[0].starts_with("PCI device 0000:51:00.0 [1002:"),
        "{notes:?}"
    );
    // With KFD compute nodes naming them (as ROCm's driver writes them), both are GPUs.
    let topo = section(&guest, "TOPO_JSON");
    let gpus: Vec<(String, u64)> = topo["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            assert_eq!(g["vendor"], "amd", "{g}");
            (
                g["pci"].as_str().unwrap().to_string(),
                g["numa_node"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        gpus,
        [
            ("0000:51:00.0".to_string(), 3),
            ("0000:61:00.0".to_string(), 1)
        ],
        "{topo}"
    );
    let bound = |tag: &str| -> Vec<&str> {
        guest
            .iter()
            .filter(|l| l.starts_with(&format!("{tag} ")))
            .map(String::as_str)
            .collect()
    };
    // `gpu: {visible: own}`: each rank sees its own GPU, by index, as ROCm numbers them.
    for tag in ["BOUND", "MASKED"] {
        assert_eq!(
            bound(tag),
            [
                format!("{tag} 0 6-7 bind:3 ROCR_VISIBLE_DEVICES=0"),
                format!("{tag} 1 2-3 bind:1 ROCR_VISIBLE_DEVICES=1")
            ],
            "{log}"
        );
    }
    // `gpus: visible` under ROCR_VISIBLE_DEVICES=1: one rank, on GPU 1's node.
    assert_eq!(
        bound("VISIBLE"),
        ["VISIBLE 0 2-3 bind:1 ROCR_VISIBLE_DEVICES=1"],
        "{log}"
    );
    // `--local-rank gpu` under ROCR_VISIBLE_DEVICES=1: rank 1, on GPU 1's node; with no GPU
    // visible, an error that says so.
    assert_eq!(
        bound("BYGPU"),
        ["BYGPU 1 2-3 bind:1 ROCR_VISIBLE_DEVICES=1"],
        "{log}"
    );
    assert_eq!(
        bound("NOGPU"),
        [
            "NOGPU error[E0422]: no GPU is visible to this process: none of CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK is set"
        ],
        "{log}"
    );
}

#[test]
fn exec_binds_ranks_on_a_four_node_guest() {
    let work = tempfile::tempdir().unwrap();
    let touch = work.path().join("rank-touch");
    common::cc(&["-static", "-O1"], "tests/vm/rank-touch.c", &touch);
    let omp = work.path().join("omp-probe");
    common::cc(
        &["-static", "-O1", "-fopenmp"],
        "tests/openmp/omp-probe.c",
        &omp,
    );
    let Some((guest, log)) = boot(
        "tests/vm/exec-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "8"),
            ("QEMU_NUMA_MEM_MB", "256"),
            ("QEMU_NUMA_DISTANCE", "21"),
        ],
        &[
            &touch,
            &omp,
            Path::new("/usr/bin/mpiexec.hydra"),
            Path::new("/usr/bin/hydra_pmi_proxy"),
        ],
    ) else {
        return;
    };
    let guest: Vec<&str> = guest.iter().map(String::as_str).collect();

    // Discovery: what QEMU was told (4 nodes of 2 CPUs, distance 21 between nodes).
    let topo = section(&guest, "TOPO_JSON");
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

    // `numaplan bind` under MPICH: each rank on its own node, all its pages there.
    let begin = guest
        .iter()
        .position(|l| *l == "MPI_BEGIN")
        .expect("MPI ran");
    let end = guest
        .iter()
        .position(|l| *l == "MPI_END")
        .expect("MPI ended");
    let mpi = &guest[begin + 1..end];
    let mut nodes = Vec::new();
    for rank in 0..4 {
        let line = mpi
            .iter()
            .find(|l| l.starts_with(&format!("rank {rank}: cpus ")))
            .unwrap_or_else(|| panic!("no line from MPI rank {rank}:\n{log}"));
        assert!(line.ends_with(": ok"), "{line}");
        let verbose = format!(
            "rank {rank}: CPUs {}-{} memory bind:{rank} via MPI_LOCALRANKID",
            2 * rank,
            2 * rank + 1
        );
        assert!(mpi.contains(&verbose.as_str()), "no `{verbose}`:\n{log}");
        nodes.push(
            line.split("= node ")
                .nth(1)
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(nodes, ["0", "1", "2", "3"], "rank k on node k");

    openmp_in_the_guest(&guest, &log);

    // In a cgroup whose cpuset.mems allows nodes 0-1, the kernel narrows an interleave over
    // 0-3 without an error. A required policy is refused before anything starts (E0411)...
    let required = between(&guest, "MEMS_REQUIRED");
    let text = required.join("\n");
    assert!(
        text.contains("error[E0411]")
            && text.contains("rank 0's memory policy is interleave:0-3, and nodes 2-3 are outside the memory nodes this process may use (0-1"),
        "{log}"
    );
    assert!(required.contains(&"status 1"), "{log}");
    assert!(
        !required.iter().any(|l| l.contains("rank 0: cpus ")),
        "{log}"
    );
    // ...and one that is not required starts, but `exec --verify` reads the narrowed policy
    // back and refuses the rank (E0438).
    let readback = between(&guest, "READBACK");
    let text = readback.join("\n");
    assert!(
        text.contains("error[E0438]: rank 0's binding reads back otherwise than exec applied it")
            && text.contains("interleave:0-3")
            && text.contains("interleave:0-1"),
        "{log}"
    );
    assert!(readback.contains(&"status 3"), "{log}");
    assert!(
        !readback.iter().any(|l| l.contains("rank 0: cpus ")),
        "the rank's program did not run: {log}"
    );
}

/// OpenMP in the 4-node guest (tests/vm/exec-guest.sh): every rank's two threads on the two
/// cores of its node (CPUs 2k and 2k+1); one rank over the four nodes with `close` and `spread`.
fn openmp_in_the_guest(guest: &[&str], log: &str) {
    let ranks = between(guest, "OMP_RANKS");
    for rank in 0..4u32 {
        let mut cpus = omp_threads(&ranks, rank);
        cpus.sort();
        assert_eq!(cpus, [2 * rank, 2 * rank + 1], "rank {rank}:\n{log}");
    }
    // One rank over the four nodes: `close` fills the first two nodes' cores, `spread` puts a
    // thread on each node, which here is each L3 group.
    let node = |cpu: &u32| cpu / 2;
    let mut close: Vec<u32> = omp_threads(&between(guest, "OMP_ONE_close"), 0)
        .iter()
        .map(node)
        .collect();
    close.sort();
    assert_eq!(close, [0, 0, 1, 1], "close:\n{log}");
    let mut spread: Vec<u32> = omp_threads(&between(guest, "OMP_ONE_spread"), 0)
        .iter()
        .map(node)
        .collect();
    spread.sort();
    assert_eq!(spread, [0, 1, 2, 3], "spread:\n{log}");
}

/// This machine's Python and numaplan's package staged for a guest (tests/vm/python-root.sh):
/// the tree for QEMU_NUMA_TREE and the interpreter's path in it.
fn stage_python() -> (tempfile::TempDir, String) {
    let stage = tempfile::tempdir().unwrap();
    let staged = common::succeed(
        Command::new("bash")
            .arg(common::repo().join("tests/vm/python-root.sh"))
            .arg(stage.path()),
    );
    let python = String::from_utf8(staged.stdout).unwrap().trim().to_string();
    (stage, python)
}

/// The guest's lines between `TAG_BEGIN` and `TAG_END`.
fn between<'a>(guest: &[&'a str], tag: &str) -> Vec<&'a str> {
    let begin = guest
        .iter()
        .position(|l| *l == format!("{tag}_BEGIN"))
        .unwrap_or_else(|| panic!("no {tag}"));
    let end = guest
        .iter()
        .position(|l| *l == format!("{tag}_END"))
        .unwrap_or_else(|| panic!("no {tag} end"));
    guest[begin + 1..end].to_vec()
}

/// The CPU each OpenMP thread of `rank` is bound to (omp-probe's `[R] task TID cpus C on N`
/// lines), each a single CPU here (one CPU per core).
fn omp_threads(lines: &[&str], rank: u32) -> Vec<u32> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(&format!("[{rank}] task ")))
        .map(|l| {
            let (cpus, on) = l
                .split_once(" cpus ")
                .unwrap()
                .1
                .split_once(" on ")
                .unwrap();
            assert_eq!(cpus, on, "a thread ran off its place: {l}");
            cpus.parse().unwrap()
        })
        .collect()
}

/// numaplan's Python package in the 4-node guest (tests/vm/python-guest.sh): 4 processes that
/// each call `numaplan.bind()`, and `numaplan.spawn` of 4 ranks. Each rank runs on its node's
/// CPUs with memory bound there; every page it touches after the call is on that node, and with
/// `migrate=True` so are the pages it touched before.
#[test]
fn python_binds_ranks_on_a_four_node_guest() {
    if std::env::var_os("NUMAPLAN_QEMU").is_none() {
        eprintln!("skipped: set NUMAPLAN_QEMU=1 (as root) to boot the multi-NUMA guests");
        return;
    }
    let (stage, python) = stage_python();
    let Some((guest, log)) = boot(
        "tests/vm/python-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "8"),
            // The initramfs (an interpreter and its modules) fills much of one node; ranks bound
            // to it must still find memory there.
            ("QEMU_NUMA_MEM_MB", "512"),
            ("QEMU_NUMA_TREE", stage.path().to_str().unwrap()),
            ("QEMU_GUEST_PYTHON", &python),
        ],
        &[&common::repo().join("tests/vm/py-rank.py")],
    ) else {
        return;
    };
    let guest: Vec<&str> = guest.iter().map(String::as_str).collect();
    for (tag, how) in [("PY_BIND", "bind"), ("PY_SPAWN", "spawn")] {
        let mut ranks: Vec<Value> = between(&guest, tag)
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        ranks.sort_by_key(|r| r["local_rank"].as_u64());
        assert_eq!(ranks.len(), 4, "{how}: one line per rank:\n{log}");
        for (k, rank) in ranks.iter().enumerate() {
            let node = k.to_string();
            assert_eq!(rank["how"], how);
            assert_eq!(rank["local_rank"], k as u64, "{log}");
            assert_eq!(rank["planned_nodes"], serde_json::json!([k]), "{rank}");
            assert_eq!(rank["cpus"], format!("{}-{}", 2 * k, 2 * k + 1), "{rank}");
            assert_eq!(rank["cpus"], rank["planned_cpus"], "{rank}");
            assert_eq!(rank["after"]["policy"], format!("bind:{k}"), "{rank}");
            let on_node = |region: &Value| {
                let nodes = region["nodes"].as_object().unwrap();
                nodes.len() == 1 && nodes.contains_key(&node)
            };
            assert!(on_node(&rank["after"]), "pages touched after bind: {rank}");
            if how == "bind" {
                assert!(on_node(&rank["before"]), "pages migrated by bind: {rank}");
            }
        }
    }
}

/// Where ranks' memory really is, and threads that drift, in the 4-node guest
/// (tests/vm/watch-guest.sh): a rank that touched 256 MiB on node 2 before taking rank 3's
/// binding without migration has the planned policy and CPUs, yet `verify` fails on its pages;
/// `verify --watch` says when `numaplan.bind(migrate=True)` moved them; the same program started
/// by `numaplan bind` has all its pages on its node. Four drift ranks under `exec --repin`: each
/// proxy thread that re-pins itself to every CPU is reported and put back on its node's two
/// CPUs (read back from /proc), the thread pinned to one of them is not reported.
#[test]
fn memory_and_drift_on_a_four_node_guest() {
    if std::env::var_os("NUMAPLAN_QEMU").is_none() {
        eprintln!("skipped: set NUMAPLAN_QEMU=1 (as root) to boot the multi-NUMA guests");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let drift = work.path().join("drift");
    common::cc(
        &["-static", "-O1", "-pthread"],
        "tests/watch/drift.c",
        &drift,
    );
    let (stage, python) = stage_python();
    let Some((guest, log)) = boot(
        "tests/vm/watch-guest.sh",
        &[
            ("QEMU_NUMA_NODES", "4"),
            ("QEMU_NUMA_CPUS", "8"),
            ("QEMU_NUMA_MEM_MB", "512"),
            ("QEMU_NUMA_TREE", stage.path().to_str().unwrap()),
            ("QEMU_GUEST_PYTHON", &python),
        ],
        &[&common::repo().join("tests/vm/py-memory.py"), &drift],
    ) else {
        return;
    };
    let guest: Vec<&str> = guest.iter().map(String::as_str).collect();
    let memory_line = |lines: &[&str], rank: u32| -> String {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("  rank {rank}: ")))
            .unwrap_or_else(|| panic!("no memory line for rank {rank}:\n{log}"))
            .trim()
            .to_string()
    };
    // Late binding: policy and CPUs as planned, pages on node 2.
    let late = between(&guest, "LATE");
    assert_eq!(late.last(), Some(&"exit 1"), "{log}");
    let row = late.iter().find(|l| l.starts_with("3 ")).unwrap();
    assert!(row.contains("6-7") && row.contains("bind:3  "), "{row}");
    assert!(
        row.contains("MISMATCH: ") && row.contains("is on node 3, under 90%"),
        "{row}"
    );
    let line = memory_line(&late, 3);
    let share: f64 = line
        .split(", ")
        .nth(1)
        .unwrap()
        .strip_suffix("% on node 3 (planned)")
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    assert!(share < 10.0, "{line}");
    assert!(line.contains(" MiB on node 2"), "{line}");
    // The watch: low at first, then back once migrated, then the exit.
    let watch = between(&guest, "WATCH");
    let events: Vec<Value> = watch
        .iter()
        .skip(1)
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["memory-low", "memory-back", "rank-exited", "summary"],
        "{log}"
    );
    assert!(
        events[1]["local_share"].as_f64().unwrap() > 0.9,
        "{}",
        events[1]
    );
    assert!(
        events[1]["text"]
            .as_str()
            .unwrap()
            .ends_with("on node 3, 90% or more again"),
        "{}",
        events[1]
    );
    // Bound before it touched anything: all on node 1. One rank of four named by `--pids`: it is
    // bound as planned, and the three not named are missing (exit 1 for them alone).
    let bound = between(&guest, "BOUND");
    assert_eq!(bound.last(), Some(&"exit 1"), "{log}");
    let row = bound.iter().find(|l| l.starts_with("1 ")).unwrap();
    assert!(row.ends_with(" ok"), "{row}");
    assert!(
        bound
            .iter()
            .any(|l| l.starts_with("error[E0416]: 3 rank(s) are not bound as planned")),
        "{log}"
    );
    let line = memory_line(&bound, 1);
    assert!(line.contains(" MiB, 100.0% on node 1 (planned)"), "{line}");
    assert!(
        !line.contains("on node 0") && !line.contains("on node 2"),
        "{line}"
    );
    // Drift ranks under exec --repin, read by verify while they run: each on its node.
    let verify = between(&guest, "DRIFT_VERIFY");
    for rank in 0..4u32 {
        let line = memory_line(&verify, rank);
        assert!(
            line.contains(&format!(", 100.0% on node {rank} (planned)")),
            "{line}"
        );
    }
    for (rank, line) in between(&guest, "DRIFT_READBACK").iter().enumerate() {
        let cpus = format!("{}-{}", 2 * rank, 2 * rank + 1);
        assert_eq!(
            *line,
            format!("rank {rank} proxy {cpus} omp {}", 2 * rank),
            "put back on its node's CPUs, the pinned thread untouched:\n{log}"
        );
    }
    let exec = between(&guest, "DRIFT_EXEC");
    assert_eq!(exec.last(), Some(&"exit 0"), "{log}");
    let repinned = exec
        .iter()
        .filter(|l| l.contains("(nccl-proxy): CPUs 0-7, planned ") && l.contains("; put back on"))
        .count();
    assert_eq!(repinned, 4, "{log}");
    assert!(!exec.iter().any(|l| l.contains("omp-worker")), "{log}");
    assert!(
        exec.iter()
            .any(|l| l.ends_with("4 threads left their rank's CPUs (4 put back), 4 ranks exited")),
        "{log}"
    );
}

/// A fixture of a guest of `nodes` NUMA nodes of 2 CPUs each (node i: CPUs 2i and 2i + 1), as
/// QEMU shapes it.
fn guest_fixture(name: &str, nodes: u32) -> String {
    let mut out = format!(
        "numaplan_topology: 1\nname: {name}\nprovenance: a QEMU guest of {nodes} nodes\nnodes:\n"
    );
    for i in 0..nodes {
        let cpus = format!("{}-{}", 2 * i, 2 * i + 1);
        out.push_str(&format!(
            "- id: {i}\n  package: 0\n  cpus: {cpus}\n  l3_groups:\n  - id: {i}\n    threads: [{cpus}]\n"
        ));
    }
    out
}

/// Writes a plan of two groups, `wide` on a guest of `wide` nodes and `narrow` on one of
/// `narrow` nodes (one rank per node, its CPUs and memory there), as `file` in `dir`.
fn two_group_plan(dir: &Path, file: &str, wide: u32, narrow: u32) -> std::path::PathBuf {
    for (name, nodes) in [("wide", wide), ("narrow", narrow)] {
        std::fs::write(dir.join(format!("{name}.yaml")), guest_fixture(name, nodes)).unwrap();
    }
    let job = format!(
        "command: [/bin/sh, -c, 'echo \"RANK $RANK $WORLD_SIZE $NUMAPLAN_GROUP $(grep Cpus_allowed_list /proc/self/status | cut -f2)\"']\n\
         gpus: none\ncpu: {{policy: auto}}\nmemory: {{policy: bind}}\ngroups:\n\
         \x20 - {{name: wide, topology: wide.yaml, ranks_per_node: {wide}}}\n\
         \x20 - {{name: narrow, topology: narrow.yaml, ranks_per_node: {narrow}}}\n"
    );
    std::fs::write(dir.join("job.yaml"), job).unwrap();
    let plan = dir.join(file);
    common::numaplan_in(dir, &["compile", "job.yaml", "-q", "-o", file]).ok();
    plan
}

/// One plan of two groups, run by `numaplan exec` in a 4-node and a 2-node guest: each guest
/// finds its group by its shape (no flag, no variable) and starts that group's ranks, numbered
/// after the groups before it (wide: ranks 0-3; narrow: ranks 4-5), on their planned CPUs. A
/// plan whose groups have neither guest's shape is refused (E0443), naming both groups.
#[test]
fn each_guest_finds_its_group_by_shape() {
    let work = tempfile::tempdir().unwrap();
    let plan = two_group_plan(work.path(), "groups-plan.yaml", 4, 2);
    let other = work.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let neither = two_group_plan(&other, "other-plan.yaml", 3, 1);
    for (nodes, group, first) in [(4u32, "wide", 0u32), (2, "narrow", 4)] {
        let cpus = (2 * nodes).to_string();
        let nodes_text = nodes.to_string();
        let Some((guest, log)) = boot(
            "tests/vm/groups-guest.sh",
            &[
                ("QEMU_NUMA_NODES", &nodes_text),
                ("QEMU_NUMA_CPUS", &cpus),
                ("QEMU_NUMA_MEM_MB", "256"),
            ],
            &[&plan, &neither],
        ) else {
            return;
        };
        let guest: Vec<&str> = guest.iter().map(String::as_str).collect();
        let ran = between(&guest, "GROUP");
        assert!(ran.contains(&"GROUP_STATUS 0"), "{group}:\n{log}");
        let mut seen: Vec<String> = ran
            .iter()
            .filter_map(|l| l.split_once("] RANK ").map(|(_, rest)| rest.to_string()))
            .collect();
        seen.sort();
        let expected: Vec<String> = (0..nodes)
            .map(|n| format!("{} 6 {group} {}-{}", first + n, 2 * n, 2 * n + 1))
            .collect();
        assert_eq!(seen, expected, "{group}:\n{log}");
        assert!(
            ran.iter()
                .any(|l| l.starts_with(&format!("group `{group}`, node 0 of 1:"))),
            "{group}:\n{log}"
        );
        let refused = between(&guest, "NEITHER").join("\n");
        assert!(refused.contains("NEITHER_STATUS 1"), "{refused}");
        assert!(
            refused.contains("error[E0443]: none of the plan's groups has this node's shape"),
            "{refused}"
        );
    }
}
