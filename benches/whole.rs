//! Whole-process benchmarks: numaplan against the tool a user would otherwise run, timed as
//! the user would see them (a process started, waited for), alternating A B A B in one run so
//! that both meet the same machine noise. Prints a Markdown table per section: the median time
//! of each side, the median of the pairwise ratios A/B, their spread (25th-75th percentile) and
//! each side's median peak RSS. `scripts/bench.sh` runs it; BENCHMARKS.md is made from its
//! output. No timing is asserted anywhere.
//!
//! Synthetic machines of 256 to 4096 CPUs (2 packages, SMT 2, 4 or 8 NUMA nodes with distances,
//! L3 groups of 8 cores, one GPU per 32 CPUs behind a PCIe switch) are written both as hwloc
//! 2.x XML and as numaplan fixtures into a scratch directory.
//!
//! Usage: cargo bench --bench whole -- [--runs N] [--sizes 256,1024]
//! [--only compile|topo|mpibind|groups|exec|readback|bind|verify]
//! [--dir DIR] (keeps the machines and plans there, for profiling one command)

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The numaplan measured: this build's, or another's (`NUMAPLAN_BENCH_BIN=PATH`), so that
/// builds before and after a change are measured by one harness, each against the same
/// alternative in one run.
fn numaplan() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("NUMAPLAN_BENCH_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_numaplan").to_string())
    })
}

/// One process run: wall time (ms) and peak RSS (KiB).
#[derive(Clone, Copy)]
struct Sample {
    ms: f64,
    rss_kib: i64,
}

/// Runs `argv` to completion, output discarded; panics if it fails (a benchmark of a failing
/// command measures nothing). Started from a fresh, small copy of this program (`--spawn`):
/// a child's peak RSS includes the memory of the process that forked it, which would otherwise
/// be this harness with its machines in memory.
fn run(argv: &[String]) -> Sample {
    run_in(argv, &[])
}

/// `run` with variables added to the environment (a launcher's `LOCAL_RANK`).
fn run_in(argv: &[String], env: &[(&str, &str)]) -> Sample {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg("--spawn")
        .args(argv)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    match (fields.next().map(str::parse), fields.next().map(str::parse)) {
        (Some(Ok(ms)), Some(Ok(rss_kib))) if out.status.success() => Sample { ms, rss_kib },
        _ => panic!("{argv:?} failed: {text}"),
    }
}

/// `--spawn ARGV...`: runs ARGV, waits with `wait4`, prints its wall time (ms) and peak RSS
/// (KiB); exits 1 if it failed.
#[allow(clippy::zombie_processes)]
fn spawn_and_measure(argv: &[String]) -> ! {
    let start = Instant::now();
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {argv:?}: {e}"));
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: waiting for our own child, with valid pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    let ok = waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    println!("{ms} {}", usage.ru_maxrss);
    std::process::exit(if ok { 0 } else { 1 })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

/// A and B alternated `runs` times after a warm-up; one table row.
fn pair(what: &str, a: &[String], b: &[String], runs: usize) -> String {
    pair_in(what, a, b, runs, &[])
}

/// `pair` with variables added to both sides' environment.
fn pair_in(what: &str, a: &[String], b: &[String], runs: usize, env: &[(&str, &str)]) -> String {
    let run = |argv: &[String]| run_in(argv, env);
    for _ in 0..3 {
        run(a);
        run(b);
    }
    let (mut sa, mut sb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        // Alternate which goes first, so neither always follows the other.
        let (x, y) = if i % 2 == 0 {
            (run(a), run(b))
        } else {
            let y = run(b);
            (run(a), y)
        };
        ratios.push(x.ms / y.ms);
        sa.push(x);
        sb.push(y);
    }
    ratios.sort_by(f64::total_cmp);
    let ms = |s: &[Sample]| median(&s.iter().map(|s| s.ms).collect::<Vec<_>>());
    let rss = |s: &[Sample]| median(&s.iter().map(|s| s.rss_kib as f64).collect::<Vec<_>>());
    format!(
        "| {what} | {:.2} ms | {:.2} ms | **{:.2}x** | {:.2}-{:.2} | {:.1} / {:.1} MiB |\n",
        ms(&sa),
        ms(&sb),
        percentile(&ratios, 0.5),
        percentile(&ratios, 0.25),
        percentile(&ratios, 0.75),
        rss(&sa) / 1024.0,
        rss(&sb) / 1024.0,
    )
}

/// A alone (no alternative exists): median time and RSS.
fn alone(what: &str, a: &[String], runs: usize) -> (String, f64) {
    for _ in 0..3 {
        run(a);
    }
    let samples: Vec<Sample> = (0..runs).map(|_| run(a)).collect();
    let ms = median(&samples.iter().map(|s| s.ms).collect::<Vec<_>>());
    let rss = median(&samples.iter().map(|s| s.rss_kib as f64).collect::<Vec<_>>());
    (
        format!("| {what} | {ms:.2} ms | | | | {:.1} MiB |\n", rss / 1024.0),
        ms,
    )
}

const HEADER: &str = "| what | numaplan | alternative | ratio (median) | ratio p25-p75 | peak RSS |\n|---|---|---|---|---|---|\n";

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn sh(script: &str) -> Vec<String> {
    argv(&["bash", "-c", script])
}

/// A synthetic machine of `cpus` logical CPUs.
struct Machine {
    cpus: u32,
    nodes: u32,
    gpus: u32,
}

impl Machine {
    fn new(cpus: u32) -> Machine {
        Machine {
            cpus,
            nodes: if cpus >= 1024 { 8 } else { 4 },
            gpus: cpus / 32,
        }
    }

    fn cores(&self) -> u32 {
        self.cpus / 2
    }

    fn cores_per_node(&self) -> u32 {
        self.cores() / self.nodes
    }

    /// Node `n`'s cores: a contiguous block; each core's sibling is `core + cores`.
    fn node_cores(&self, n: u32) -> std::ops::Range<u32> {
        n * self.cores_per_node()..(n + 1) * self.cores_per_node()
    }

    fn package(&self, n: u32) -> u32 {
        n * 2 / self.nodes
    }

    fn distance(&self, a: u32, b: u32) -> u32 {
        match (a == b, self.package(a) == self.package(b)) {
            (true, _) => 10,
            (false, true) => 12,
            (false, false) => 32,
        }
    }

    /// GPU `g`'s node and PCI bus.
    fn gpu(&self, g: u32) -> (u32, u32) {
        (g * self.nodes / self.gpus, 0x10 + g)
    }

    fn fixture(&self) -> String {
        let mut nodes = Vec::new();
        let mut l3 = 0;
        for n in 0..self.nodes {
            let groups: Vec<serde_json::Value> = self
                .node_cores(n)
                .step_by(8)
                .map(|c| {
                    l3 += 1;
                    serde_json::json!({
                        "id": l3 - 1,
                        "threads": [format!("{}-{}", c, c + 7), format!("{}-{}", c + self.cores(), c + 7 + self.cores())],
                    })
                })
                .collect();
            let r = self.node_cores(n);
            nodes.push(serde_json::json!({
                "id": n,
                "package": self.package(n),
                "cpus": format!("{}-{},{}-{}", r.start, r.end - 1, r.start + self.cores(), r.end - 1 + self.cores()),
                "l3_groups": groups,
            }));
        }
        let distances: serde_json::Map<String, serde_json::Value> = (0..self.nodes)
            .map(|a| {
                let row: Vec<u32> = (0..self.nodes).map(|b| self.distance(a, b)).collect();
                (a.to_string(), serde_json::json!(row))
            })
            .collect();
        let gpus: Vec<serde_json::Value> = (0..self.gpus)
            .map(|g| {
                let (node, bus) = self.gpu(g);
                serde_json::json!({
                    "index": g, "vendor": "nvidia", "model": "synthetic",
                    "pci": format!("0000:{bus:02x}:00.0"), "numa_node": node,
                    "pci_path": [format!("switch-{g}")],
                })
            })
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({
            "numaplan_topology": 1,
            "name": format!("synthetic-{}", self.cpus),
            "nodes": nodes,
            "distances": distances,
            "gpus": gpus,
        }))
        .unwrap()
    }

    /// The same machine as an hwloc 2.x XML export: Package > Group (one per node) >
    /// NUMANode, L3 > Core > PU, and the node's GPUs behind a host bridge.
    fn xml(&self) -> String {
        let mut gp = 1;
        let mut next = || {
            gp += 1;
            gp
        };
        let all: Vec<u32> = (0..self.cpus).collect();
        let node_set = |n: u32| -> Vec<u32> {
            self.node_cores(n)
                .flat_map(|c| [c, c + self.cores()])
                .collect()
        };
        let sets = |cpus: &[u32], nodes: &[u32]| {
            let c = bitmap(cpus);
            let n = bitmap(nodes);
            format!(r#"cpuset="{c}" complete_cpuset="{c}" nodeset="{n}" complete_nodeset="{n}""#)
        };
        let all_nodes: Vec<u32> = (0..self.nodes).collect();
        let mut x = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n",
        );
        let c = bitmap(&all);
        let n = bitmap(&all_nodes);
        let _ = writeln!(
            x,
            r#"<object type="Machine" os_index="0" {} allowed_cpuset="{c}" allowed_nodeset="{n}" gp_index="1">"#,
            sets(&all, &all_nodes)
        );
        for p in 0..2 {
            let pnodes: Vec<u32> = (0..self.nodes).filter(|&n| self.package(n) == p).collect();
            let pcpus: Vec<u32> = pnodes.iter().flat_map(|&n| node_set(n)).collect();
            let _ = writeln!(
                x,
                r#"<object type="Package" os_index="{p}" {} gp_index="{}">"#,
                sets(&pcpus, &pnodes),
                next()
            );
            for &nd in &pnodes {
                let ncpus = node_set(nd);
                let _ = writeln!(
                    x,
                    r#"<object type="Group" {} gp_index="{}">"#,
                    sets(&ncpus, &[nd]),
                    next()
                );
                let _ = writeln!(
                    x,
                    r#"<object type="NUMANode" os_index="{nd}" {} gp_index="{}" local_memory="68719476736"/>"#,
                    sets(&ncpus, &[nd]),
                    next()
                );
                for first in self.node_cores(nd).step_by(8) {
                    let group: Vec<u32> = (first..first + 8)
                        .flat_map(|c| [c, c + self.cores()])
                        .collect();
                    let _ = writeln!(
                        x,
                        r#"<object type="L3Cache" {} gp_index="{}" cache_size="33554432" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">"#,
                        sets(&group, &[nd]),
                        next()
                    );
                    for core in first..first + 8 {
                        let pus = [core, core + self.cores()];
                        let _ = writeln!(
                            x,
                            r#"<object type="Core" os_index="{core}" {} gp_index="{}">"#,
                            sets(&pus, &[nd]),
                            next()
                        );
                        for pu in pus {
                            let _ = writeln!(
                                x,
                                r#"<object type="PU" os_index="{pu}" {} gp_index="{}"/>"#,
                                sets(&[pu], &[nd]),
                                next()
                            );
                        }
                        x.push_str("</object>\n");
                    }
                    x.push_str("</object>\n");
                }
                for g in (0..self.gpus).filter(|&g| self.gpu(g).0 == nd) {
                    let bus = self.gpu(g).1;
                    let _ = writeln!(
                        x,
                        r#"<object type="Bridge" gp_index="{}" bridge_type="0-1" depth="0" bridge_pci="0000:[{bus:02x}-{bus:02x}]">"#,
                        next()
                    );
                    let _ = writeln!(
                        x,
                        r#"<object type="PCIDev" gp_index="{}" pci_busid="0000:{bus:02x}:00.0" pci_type="0302 [10de:20b0] [10de:134f] a1 00" pci_link_speed="31.5">"#,
                        next()
                    );
                    let _ = writeln!(
                        x,
                        r#"<object type="OSDev" gp_index="{}" name="nvml{g}" osdev_type="1"><info name="Backend" value="NVML"/><info name="GPUModel" value="synthetic"/></object>"#,
                        next()
                    );
                    x.push_str("</object>\n</object>\n");
                }
                x.push_str("</object>\n");
            }
            x.push_str("</object>\n");
        }
        x.push_str("</object>\n");
        let _ = writeln!(
            x,
            r#"<distances2 type="NUMANode" nbobjs="{}" kind="5" name="NUMALatency" indexing="os">"#,
            self.nodes
        );
        let ids: Vec<String> = (0..self.nodes).map(|n| n.to_string()).collect();
        let _ = writeln!(
            x,
            r#"<indexes length="{}">{} </indexes>"#,
            ids.join(" ").len() + 1,
            ids.join(" ")
        );
        let values: Vec<String> = (0..self.nodes)
            .flat_map(|a| (0..self.nodes).map(move |b| (a, b)))
            .map(|(a, b)| self.distance(a, b).to_string())
            .collect();
        let _ = writeln!(
            x,
            r#"<u64values length="{}">{} </u64values>"#,
            values.join(" ").len() + 1,
            values.join(" ")
        );
        x.push_str("</distances2>\n</topology>\n");
        x
    }
}

/// An hwloc bitmap: 32-bit words, most significant first (`0xffffffff,0x00000003`).
fn bitmap(bits: &[u32]) -> String {
    let words = bits.iter().max().map_or(1, |m| m / 32 + 1) as usize;
    let mut w = vec![0u32; words];
    for &b in bits {
        w[(b / 32) as usize] |= 1 << (b % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("0x{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

struct Options {
    /// Where the synthetic machines are written (`--dir`, kept); default a scratch directory.
    dir: Option<std::path::PathBuf>,
    runs: usize,
    sizes: Vec<u32>,
    only: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        dir: None,
        runs: 21,
        sizes: vec![256, 512, 1024, 2048, 4096],
        only: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--runs" => o.runs = args[i + 1].parse().expect("--runs N"),
            "--sizes" => {
                o.sizes = args[i + 1]
                    .split(',')
                    .map(|s| s.parse().expect("--sizes 256,512"))
                    .collect()
            }
            "--only" => o.only = Some(args[i + 1].clone()),
            "--dir" => o.dir = Some(args[i + 1].clone().into()),
            // `cargo bench` passes `--bench`.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

fn wants(o: &Options, section: &str) -> bool {
    o.only.as_deref().is_none_or(|s| s == section)
}

/// `compile` from hwloc XML against `hwloc-distrib` over the same XML, `topo` against
/// `lstopo-no-graphics`, and `compile` from a fixture alone (its growth with size).
fn machines(o: &Options, dir: &Path, out: &mut String) {
    let mut xml_rows = String::new();
    let mut topo_rows = String::new();
    let mut fixture_rows = String::new();
    let mut fixture_ms = Vec::new();
    for &size in &o.sizes {
        let m = Machine::new(size);
        let xml = dir.join(format!("synthetic-{size}.xml"));
        let fixture = dir.join(format!("synthetic-{size}.json"));
        std::fs::write(&xml, m.xml()).unwrap();
        std::fs::write(&fixture, m.fixture()).unwrap();
        let job = dir.join(format!("job-{size}.yaml"));
        std::fs::write(&job, "gpus: all\ncpu: {policy: auto}\n").unwrap();
        let (x, f, j) = (path(&xml), path(&fixture), path(&job));
        same_plan(&j, &x, &f);
        let label = format!("{size} CPUs, {} GPUs, {} nodes", m.gpus, m.nodes);
        if wants(o, "compile") {
            xml_rows += &pair(
                &format!(
                    "{label}: `compile --topology X.xml` vs `hwloc-distrib --input X.xml {}`",
                    m.gpus
                ),
                &argv(&[numaplan(), "-q", "compile", &j, "--topology", &x]),
                &argv(&["hwloc-distrib", "--input", &x, &m.gpus.to_string()]),
                o.runs,
            );
            let (row, ms) = alone(
                &format!("{label}: `compile --topology X.json` (a fixture)"),
                &argv(&[numaplan(), "-q", "compile", &j, "--topology", &f]),
                o.runs,
            );
            fixture_rows += &row;
            fixture_ms.push((size, ms));
        }
        if wants(o, "topo") {
            topo_rows += &pair(
                &format!("{label}: `topo --topology X.xml` vs `lstopo-no-graphics -i X.xml`"),
                &argv(&[numaplan(), "topo", "--topology", &x]),
                &argv(&["lstopo-no-graphics", "-i", &x]),
                o.runs,
            );
        }
    }
    if !xml_rows.is_empty() {
        out.push_str("\n### compile from hwloc XML vs hwloc-distrib\n\n");
        out.push_str(HEADER);
        out.push_str(&xml_rows);
        out.push_str("\n### compile from a fixture\n\n");
        out.push_str(HEADER);
        out.push_str(&fixture_rows);
        for w in fixture_ms.windows(2) {
            let _ = writeln!(
                out,
                "\n{} -> {} CPUs: {:.2}x the time (CPUs x GPUs: {:.0}x)",
                w[0].0,
                w[1].0,
                w[1].1 / w[0].1,
                (w[1].0 as f64 / w[0].0 as f64).powi(2)
            );
        }
    }
    if !topo_rows.is_empty() {
        out.push_str("\n### topo vs lstopo\n\n");
        out.push_str(HEADER);
        out.push_str(&topo_rows);
    }
}

/// `policy: mpibind` against `policy: auto`, the same ranks on the same XML: mpibind's published
/// machine coral-lassen (160 CPUs, 4 GPUs) and the synthetic machines.
fn mpibind(o: &Options, dir: &Path, out: &mut String) {
    if !wants(o, "mpibind") {
        return;
    }
    let lassen = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mpibind/coral-lassen.xml");
    let mut machines = vec![("coral-lassen: 160 CPUs, 4 GPUs".to_string(), lassen, 4)];
    for &size in &o.sizes {
        let m = Machine::new(size);
        let xml = dir.join(format!("synthetic-{size}.xml"));
        std::fs::write(&xml, m.xml()).unwrap();
        let label = format!("{size} CPUs, {} GPUs, {} nodes", m.gpus, m.nodes);
        machines.push((label, xml, m.gpus));
    }
    out.push_str("\n### compile under policy mpibind vs policy auto\n\n");
    out.push_str(HEADER);
    for (label, xml, ranks) in machines {
        let job = |policy: &str| {
            let file = dir.join(format!("job-{policy}.yaml"));
            std::fs::write(
                &file,
                format!("ranks_per_node: {ranks}\ncpu: {{policy: {policy}}}\n"),
            )
            .unwrap();
            path(&file)
        };
        let (m, a, x) = (job("mpibind"), job("auto"), path(&xml));
        out.push_str(&pair(
            &format!("{label}: `compile --topology X.xml`, mpibind vs auto ({ranks} ranks)"),
            &argv(&[numaplan(), "-q", "compile", &m, "--topology", &x]),
            &argv(&[numaplan(), "-q", "compile", &a, "--topology", &x]),
            o.runs,
        ));
    }
}

/// A job of three groups (two DGX H100 trainers, a 4-GPU DGX A100 rollout node, a CPU-only
/// Genoa head) compiled as one plan, against its three groups compiled as jobs of their own.
fn groups(o: &Options, dir: &Path, out: &mut String) {
    if !wants(o, "groups") {
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/topologies");
    let machine = |name: &str| path(&fixtures.join(format!("{name}.yaml")));
    let (h100, a100, genoa) = (
        machine("nvidia-dgx-h100"),
        machine("nvidia-dgx-a100"),
        machine("amd-epyc-genoa-9654-2s"),
    );
    let write = |name: &str, text: String| {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        path(&file)
    };
    let grouped = write(
        "groups.yaml",
        format!(
            "groups:\n  - {{name: trainers, nodes: 2, topology: {h100}}}\n  - {{name: rollout, \
             gpus: 4, topology: {a100}}}\n  - {{name: head, gpus: none, ranks_per_node: 1, \
             topology: {genoa}}}\n"
        ),
    );
    let trainers = write("trainers.yaml", "nodes: 2\n".into());
    let rollout = write("rollout.yaml", "gpus: 4\n".into());
    let head = write("head.yaml", "gpus: none\nranks_per_node: 1\n".into());
    let bin = numaplan();
    let three = format!(
        "{bin} -q compile {trainers} --topology {h100} >/dev/null && \
         {bin} -q compile {rollout} --topology {a100} >/dev/null && \
         {bin} -q compile {head} --topology {genoa} >/dev/null"
    );
    out.push_str("\n### a job of three groups vs its groups as three jobs\n\n");
    out.push_str(HEADER);
    out.push_str(&pair(
        "3 groups (2 x DGX H100, DGX A100, Genoa head): one `compile` vs three",
        &argv(&[numaplan(), "-q", "compile", &grouped]),
        &sh(&three),
        o.runs,
    ));
    bind_in_a_group(o, dir, out);
}

/// What a rank's start pays for its plan having groups: `bind --dry-run` of a rank of the
/// second group of a plan of two (this machine's, so that the bind succeeds), against the same
/// rank of that group compiled as a plan of its own.
fn bind_in_a_group(o: &Options, dir: &Path, out: &mut String) {
    let compile = |name: &str, spec: &str| {
        let job = dir.join(format!("{name}.yaml"));
        std::fs::write(&job, spec).unwrap();
        let plan = dir.join(format!("{name}.plan.yaml"));
        let done = Command::new(numaplan())
            .args(["-q", "compile", &path(&job), "-o", &path(&plan)])
            .status()
            .unwrap();
        assert!(done.success(), "{spec}");
        path(&plan)
    };
    let one = "gpus: none\nranks_per_node: 1\ncpu: {policy: node}\n";
    let grouped = compile(
        "bind-groups",
        "gpus: none\ngroups:\n  - {name: pairs, ranks_per_node: 2, cpu: {policy: exclusive}}\n  \
         - {name: whole, ranks_per_node: 1, cpu: {policy: node}}\n",
    );
    let single = compile("bind-one", one);
    let bind = |plan: &str, group: &[&str]| {
        let words = [
            &[numaplan(), "-q", "bind", plan][..],
            group,
            &["--local-rank", "0"],
        ];
        argv(&[&words.concat()[..], &["--dry-run", "--", "true"]].concat())
    };
    out.push_str(&pair(
        "`bind --dry-run` of a group's rank: plan of 2 groups (`--group whole`) vs that group's own plan",
        &bind(&grouped, &["--group", "whole"]),
        &bind(&single, &[]),
        o.runs,
    ));
}

/// The XML and the fixture describe one machine: the job compiles to the same ranks on both.
fn same_plan(job: &str, xml: &str, fixture: &str) {
    let ranks = |topology: &str| {
        let out = Command::new(numaplan())
            .args([
                "-q",
                "compile",
                job,
                "--format",
                "json",
                "--topology",
                topology,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ranks = plan["ranks"].clone();
        assert!(ranks.as_array().is_some_and(|r| !r.is_empty()));
        ranks
    };
    assert_eq!(ranks(xml), ranks(fixture), "{xml} and {fixture} differ");
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// `exec` of 8 and 64 ranks of `true` on this machine against a bare bash loop and a numactl
/// loop; `bind` of one rank against numactl.
fn launches(o: &Options, dir: &Path, out: &mut String) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let last = cpus - 1;
    if wants(o, "exec") {
        out.push_str("\n### exec vs a bash loop\n\n");
        out.push_str(HEADER);
        for ranks in [8, 64] {
            let plan = dir.join(format!("exec-{ranks}.yaml"));
            std::fs::write(
                dir.join(format!("exec-{ranks}.job.yaml")),
                format!("command: [\"true\"]\ngpus: none\nranks_per_node: {ranks}\ncpu: {{policy: node}}\nmemory: {{policy: bind}}\n"),
            )
            .unwrap();
            let compiled = Command::new(numaplan())
                .args(["-q", "compile"])
                .arg(dir.join(format!("exec-{ranks}.job.yaml")))
                .arg("-o")
                .arg(&plan)
                .status()
                .unwrap();
            assert!(compiled.success());
            let p = path(&plan);
            // The ranks written out: `$(seq 0 N)` would fork and exec one more process (about
            // 0.9 ms, an eighth of the 8-rank loop), which a user's loop need not.
            let words: Vec<String> = (0..ranks).map(|r| r.to_string()).collect();
            let words = words.join(" ");
            let bare = format!("for r in {words}; do LOCAL_RANK=$r /bin/true & done; wait");
            let numactl = format!(
                "for r in {words}; do LOCAL_RANK=$r numactl --physcpubind=0-{last} --membind=0 /bin/true & done; wait"
            );
            for (mode, extra) in [("prefixed", None), ("--no-prefix", Some("--no-prefix"))] {
                let mut a = argv(&[numaplan(), "-q", "exec", &p]);
                a.extend(extra.map(String::from));
                out.push_str(&pair(
                    &format!("{ranks} ranks of `true`, {mode}, vs a bare bash loop"),
                    &a,
                    &sh(&bare),
                    o.runs,
                ));
                out.push_str(&pair(
                    &format!("{ranks} ranks of `true`, {mode}, vs a numactl loop"),
                    &a,
                    &sh(&numactl),
                    o.runs,
                ));
            }
        }
    }
    if wants(o, "bind") && cpus >= 2 {
        out.push_str("\n### bind vs numactl\n\n");
        out.push_str(HEADER);
        let job = dir.join("bind.job.yaml");
        std::fs::write(
            &job,
            "gpus: none\nranks_per_node: 2\nmemory: {policy: bind}\n",
        )
        .unwrap();
        let plan = dir.join("bind.yaml");
        let ok = Command::new(numaplan())
            .args(["-q", "compile"])
            .arg(&job)
            .arg("-o")
            .arg(&plan)
            .status()
            .unwrap();
        assert!(ok.success());
        out.push_str(&pair(
            "one rank: `bind --local-rank 1 plan.yaml -- true` vs `numactl --physcpubind=1 --membind=0 true`",
            &argv(&[numaplan(), "-q", "bind", "--local-rank", "1", &path(&plan), "--", "true"]),
            &argv(&["numactl", "--physcpubind=1", "--membind=0", "true"]),
            o.runs,
        ));
        // The trampoline bind replaces under torchrun (pytorch#115305): a shell script that
        // execs numactl on the launcher's LOCAL_RANK. Both see LOCAL_RANK=1.
        let trampoline = dir.join("trampoline.sh");
        std::fs::write(
            &trampoline,
            "#!/bin/sh\nexec numactl --physcpubind=$LOCAL_RANK --membind=0 \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(
            &trampoline,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        out.push_str(&pair_in(
            "under torchrun: `LOCAL_RANK=1 bind plan.yaml -- true` vs `LOCAL_RANK=1 trampoline.sh true` (`exec numactl --physcpubind=$LOCAL_RANK --membind=0 \"$@\"`)",
            &argv(&[numaplan(), "-q", "bind", &path(&plan), "--", "true"]),
            &argv(&[&path(&trampoline), "true"]),
            o.runs,
            &[("LOCAL_RANK", "1")],
        ));
        // `bind` reads the whole plan to apply one rank of it: its start grows with the plan.
        for (ranks, format) in [(8, "yaml"), (64, "yaml"), (64, "json")] {
            let job = dir.join(format!("bind{ranks}.job.yaml"));
            std::fs::write(
                &job,
                format!("gpus: none\nranks_per_node: {ranks}\ncpu: {{policy: node}}\nenv: {{NCCL_DEBUG: INFO, NCCL_IB_HCA: mlx5_0, UCX_NET_DEVICES: 'mlx5_0:1'}}\n"),
            )
            .unwrap();
            let big = dir.join(format!("bind{ranks}.{format}"));
            let ok = Command::new(numaplan())
                .args(["-q", "compile", "--format", format])
                .arg(&job)
                .arg("-o")
                .arg(&big)
                .status()
                .unwrap();
            assert!(ok.success());
            out.push_str(&pair_in(
                &format!(
                    "the same, a plan of {ranks} ranks as {format} (three `env:` variables each)"
                ),
                &argv(&[numaplan(), "-q", "bind", &path(&big), "--", "true"]),
                &argv(&[&path(&trampoline), "true"]),
                o.runs,
                &[("LOCAL_RANK", "1")],
            ));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).is_some_and(|a| a == "--spawn") {
        spawn_and_measure(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == "--hold") {
        hold(&args[2], &args[3]);
    }
    let o = options();
    let scratch = std::env::temp_dir().join(format!("numaplan-bench-{}", std::process::id()));
    let dir = o.dir.clone().unwrap_or_else(|| scratch.clone());
    std::fs::create_dir_all(&dir).unwrap();
    let mut out = format!(
        "runs: {} alternating pairs per row after 3 warm-up pairs; times are medians; ratio = numaplan / alternative per pair\n",
        o.runs
    );
    machines(&o, &dir, &mut out);
    mpibind(&o, &dir, &mut out);
    groups(&o, &dir, &mut out);
    launches(&o, &dir, &mut out);
    read_back(&o, &mut out);
    verifies(&o, &dir, &mut out);
    if o.dir.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    print!("{out}");
}

/// What `exec --verify`'s read-back costs each rank's child before `execve`: the binding read
/// back (`sched_getaffinity`, `get_mempolicy`) and compared with the one applied, timed here in
/// this process on all of its CPUs with memory bound to node 0, as a child makes the calls.
fn read_back(o: &Options, out: &mut String) {
    if !wants(o, "readback") {
        return;
    }
    use numaplan::sys::affinity::{Binding, Memory, MemoryMode};
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let all = numaplan::cpuset::CpuSet::range(0, cpus - 1);
    let binding = Binding::new(
        &all,
        Memory {
            mode: Some(MemoryMode::Bind),
            nodes: &[numaplan::ids::NodeId(0)],
        },
    )
    .unwrap();
    let calls = 20_000;
    let mut per_call = Vec::new();
    for _ in 0..o.runs {
        let start = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(binding.read_back());
        }
        per_call.push(start.elapsed().as_secs_f64() * 1e6 / f64::from(calls));
    }
    per_call.sort_by(f64::total_cmp);
    out.push_str(&format!(
        "\n### exec's read-back in the child\n\n`exec --verify` reads each rank's binding back in its child before `execve`: {:.2} us a rank (median of {} runs of {calls} read-backs; the CPUs and memory policy read and compared).\n",
        per_call[per_call.len() / 2],
        o.runs
    ));
}

/// `--hold MIB MAPS`: a stand-in for a running rank. Maps MIB MiB of anonymous memory and
/// touches every page, then MAPS one-page mappings (each touched, with alternating protections
/// so that the kernel cannot merge them: a PyTorch rank has thousands, one per library
/// segment); prints `ready` and holds them until its stdin closes.
fn hold(mib: &str, maps: &str) -> ! {
    let mib: usize = mib.parse().expect("--hold MIB MAPS");
    let maps: usize = maps.parse().expect("--hold MIB MAPS");
    let page = 4096;
    let map = |len: usize, prot: libc::c_int| {
        // SAFETY: a fresh anonymous private mapping; nothing else refers to the range.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap of {len} bytes");
        // SAFETY: `p` is `len` writable bytes just mapped.
        unsafe {
            for off in (0..len).step_by(page) {
                *(p as *mut u8).add(off) = 1;
            }
            libc::mprotect(p, len, prot);
        }
    };
    if mib > 0 {
        map(mib << 20, libc::PROT_READ | libc::PROT_WRITE);
    }
    for i in 0..maps {
        let prot = if i % 2 == 0 {
            libc::PROT_READ
        } else {
            libc::PROT_READ | libc::PROT_WRITE
        };
        map(page, prot);
    }
    println!("ready");
    let _ = std::io::Read::read(&mut std::io::stdin(), &mut [0u8; 1]);
    std::process::exit(0)
}

/// A held rank (`hold`), running until dropped.
struct Held(std::process::Child);

impl Held {
    fn start(mib: usize, maps: usize) -> Held {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--hold", &mib.to_string(), &maps.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        Held(child)
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// `verify` of one large rank against `numastat -p` (what a user reads numa_maps with), by
/// resident size; and the CPU that `verify --watch` costs on 64 ranks.
fn verifies(o: &Options, dir: &Path, out: &mut String) {
    if !wants(o, "verify") {
        return;
    }
    let compile = |name: &str, job: &str| {
        let (job_path, plan) = (
            dir.join(format!("{name}.job.yaml")),
            dir.join(format!("{name}.yaml")),
        );
        std::fs::write(&job_path, job).unwrap();
        let ok = Command::new(numaplan())
            .args(["-q", "compile"])
            .arg(&job_path)
            .arg("-o")
            .arg(&plan)
            .status()
            .unwrap();
        assert!(ok.success());
        path(&plan)
    };
    out.push_str("\n### verify: one rank's numa_maps vs numastat -p\n\n");
    out.push_str(HEADER);
    let one = compile(
        "verify1",
        "gpus: none\nranks_per_node: 1\ncpu: {policy: node}\n",
    );
    for gib in [1usize, 2, 4, 8] {
        let rank = Held::start(gib << 10, 0);
        out.push_str(&pair(
            &format!(
                "a rank with {gib} GiB resident: `verify plan.yaml --pids PID` vs `numastat -p PID`"
            ),
            &argv(&[numaplan(), "verify", &one, "--pids", &rank.pid()]),
            &argv(&["numastat", "-p", &rank.pid()]),
            o.runs,
        ));
    }
    let rank = Held::start(64, 20_000);
    out.push_str(&pair(
        "a rank with 20,000 mappings: `verify plan.yaml --pids PID` vs `numastat -p PID`",
        &argv(&[numaplan(), "verify", &one, "--pids", &rank.pid()]),
        &argv(&["numastat", "-p", &rank.pid()]),
        o.runs,
    ));
    drop(rank);

    out.push_str("\n### verify --watch: CPU per second of watching\n\n");
    out.push_str("| what | wall | CPU (user + sys) | share of one CPU |\n|---|---|---|---|\n");
    let many = compile(
        "verify64",
        "gpus: none\nranks_per_node: 64\ncpu: {policy: node}\n",
    );
    let ranks: Vec<Held> = (0..64).map(|_| Held::start(16, 3000)).collect();
    let mut args = argv(&[
        numaplan(),
        "verify",
        &many,
        "--watch",
        "--interval",
        "0.2",
        "--count",
        "150",
        "--pids",
    ]);
    args.extend(ranks.iter().map(Held::pid));
    let mut samples: Vec<(f64, f64)> = (0..3.min(o.runs.max(1)))
        .map(|_| {
            let start = Instant::now();
            let child = Command::new(&args[0])
                .args(&args[1..])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut status = 0;
            // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waiting for our own child, with valid pointers; wait4 reaps it.
            unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
            std::mem::forget(child);
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            (
                start.elapsed().as_secs_f64(),
                secs(usage.ru_utime) + secs(usage.ru_stime),
            )
        })
        .collect();
    samples.sort_by(|a, b| (a.1 / a.0).total_cmp(&(b.1 / b.0)));
    let (wall, cpu) = samples[samples.len() / 2];
    writeln!(
        out,
        "| 64 ranks (16 MiB, 3,000 mappings each), `verify --watch --interval 0.2 --count 150` (median of {}) | {wall:.2} s | {cpu:.3} s | **{:.1}%** |",
        samples.len(),
        cpu / wall * 100.0
    )
    .unwrap();
}
