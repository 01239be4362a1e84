//! A bounded mutation fuzzer over everything numaplan reads: job specs, topology fixtures,
//! plans and hwloc XML. Each corpus file (the examples, the compile cases, the fixtures, plans
//! compiled from two examples, a few XML exports, and tests/fuzz/seeds: every input that once
//! crashed or stalled numaplan) is mutated with a fixed-seed generator, so a failure
//! reproduces; the failing input is saved under target/fuzz-failures/.
//!
//! In process (thousands of cases a second): the spec loader, then the resolver and every
//! emitter on what loads; the fixture loader, with a dump-and-reload round trip; the plan
//! reader, with a render-and-reload round trip; the XML pre-check; and the rendering of every
//! diagnostic. A case fails on a panic, on a broken round trip, or when it takes over a second
//! (the quadratic parses were found this way). Through the binary (hwloc runs in a child that
//! may crash): fewer XML cases, which must end in 0 or 1, never a signal or a panic.
//!
//! `NUMAPLAN_FUZZ_CASES` (mutations per corpus file, default 150) and `NUMAPLAN_FUZZ_SEED` set
//! the run; CI runs the default, a few seconds.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::repo;
use numaplan::diag::render::{MessageFormat, render};
use numaplan::emit::{EmitKind, Origin};
use numaplan::error::Error;
use numaplan::plan_file::{self, Provenance};
use numaplan::topology::{Topology, fixture};

/// A small, fast generator (xorshift64*): the same seed gives the same cases everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Fragments that broke parsers before or stress them: YAML structure, JSON escapes, control
/// characters, XML attributes hwloc trips on.
const TOKENS: &[&str] = &[
    "\0",
    "\x7f",
    "\t",
    "\r",
    "\u{2028}",
    "\u{feff}",
    "\n---\n",
    "\n...\n",
    "[",
    "]",
    "{",
    "}",
    "[[[[[[[[",
    "&a ",
    "*a",
    "<<: *a",
    "!!binary ",
    "!!map ",
    "- ",
    ": ",
    "? ",
    "#",
    "~",
    "''",
    "\"",
    "\\ud83d",
    "\\u0000",
    "null",
    "true",
    "-",
    ",",
    "\n  ",
    "\n- ",
    "💥",
    "é",
    "<object type=\"PU\" os_index=\"4294967295\"/>",
    "<object type=\"Bridge\" bridge_type=\"0-0\">",
    "</object>",
    "complete_cpuset=\"\"",
    "cpuset=\"0xffffffff,,,,0x1\"",
    "os_index=\"-1\"",
    "<info name=\"GPUModel\" value=\"x\"/>",
    "nodeset=\"0x0\"",
    "<!--",
    "<![CDATA[",
];

/// Numbers at the edges of numaplan's types and limits.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "7",
    "63",
    "64",
    "65535",
    "65536",
    "65537",
    "1024",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775808",
    "18446744073709551616",
    "1e309",
    "0x10",
    "00",
    "1.5",
    ".inf",
    "-0",
];

/// One to three random edits of `text`.
fn mutate(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut out = text.to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            1 => {
                let end = (at + rng.below(64)).min(out.len());
                out.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(256)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy);
            }
            3 | 4 => {
                let token = rng.pick(TOKENS).as_bytes().to_vec();
                out.splice(at..at, token);
            }
            5 => {
                // Replace a run of digits with a number at an edge.
                if let Some(start) = (at..out.len()).find(|&i| out[i].is_ascii_digit()) {
                    let end = (start..out.len())
                        .find(|&i| !out[i].is_ascii_digit())
                        .unwrap_or(out.len());
                    let number = rng.pick(NUMBERS).as_bytes().to_vec();
                    out.splice(start..end, number);
                }
            }
            6 => out.truncate(at),
            _ => {
                // Swap two lines.
                let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
                if lines.len() > 2 {
                    let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                    let mut lines: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
                    lines.swap(a, b);
                    out = lines.join(&b'\n');
                }
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Spec,
    Fixture,
    Plan,
    Xml,
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// The corpus: (name, kind, text).
fn corpus() -> Vec<(String, Kind, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |path: &Path, kind: Kind| {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.push((name, kind, std::fs::read(path).unwrap()));
    };
    for p in files("examples", "yaml")
        .into_iter()
        .chain(files("tests/cases/compile", "yaml"))
    {
        add(&p, Kind::Spec);
    }
    for p in files("examples/topologies", "yaml") {
        add(&p, Kind::Fixture);
    }
    for name in [
        "epyc-corona-p2.xml",
        "eas-tioga.xml",
        "knl-quad-flat-hwloc1.xml",
    ] {
        add(&repo().join("tests/data/xml").join(name), Kind::Xml);
    }
    for p in std::fs::read_dir(repo().join("tests/fuzz/seeds")).unwrap() {
        let p = p.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let kind = match name.split('-').next() {
            Some("spec") => Kind::Spec,
            Some("fixture") => Kind::Fixture,
            Some("plan") => Kind::Plan,
            Some("xml") => Kind::Xml,
            _ => panic!("seed {name}: name it spec-, fixture-, plan- or xml-"),
        };
        add(&p, kind);
    }
    // Plans, YAML and JSON, compiled from two examples.
    for (spec, topo) in [
        (
            "examples/dgx-a100-llama.yaml",
            "examples/topologies/nvidia-dgx-a100.yaml",
        ),
        ("examples/lumi-g.yaml", "examples/topologies/lumi-g.yaml"),
    ] {
        let (plan, topology) = compile(&std::fs::read_to_string(repo().join(spec)).unwrap(), topo);
        let fingerprint = fixture::fingerprint(&topology);
        let name = Path::new(spec)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let p = provenance(&fingerprint);
        out.push((
            format!("{name}.plan.yaml"),
            Kind::Plan,
            plan_file::render_yaml(&plan, &p).into_bytes(),
        ));
        out.push((
            format!("{name}.plan.json"),
            Kind::Plan,
            plan_file::render_json(&plan, &p).into_bytes(),
        ));
    }
    out
}

/// The command of the plans and scripts the fuzzer writes.
const REGENERATE: &[String] = &[];

fn header(fingerprint: &str) -> numaplan::provenance::Header<'_> {
    numaplan::provenance::Header {
        regenerate: REGENERATE,
        spec_file: "job.yaml",
        topology: "fuzz",
        fingerprint,
    }
}

fn provenance(fingerprint: &str) -> Provenance<'_> {
    Provenance {
        header: header(fingerprint),
        topology_file: None,
        schema_ref: None,
    }
}

fn compile(spec: &str, topology: &str) -> (numaplan::plan::Plan, Topology) {
    let topo = numaplan::topology::load_file(&repo().join(topology)).unwrap();
    let spec = numaplan::spec::load::load_str("job.yaml", spec).unwrap();
    (numaplan::resolve::resolve(&spec.spec, &topo).unwrap(), topo)
}

/// Renders every diagnostic of `e`, as the binary would show it.
fn show(e: Error) {
    for d in e.diagnostics() {
        render(&d, MessageFormat::Human);
        render(&d, MessageFormat::Json);
    }
}

/// The fast YAML reader (`yaml/plain.rs`) reads the text as serde_yaml does wherever it reads
/// it at all, untyped and as the file of its kind.
fn fast_reader_agrees(kind: Kind, text: &str) -> Result<(), String> {
    use numaplan::yaml::fast_reader_agrees as agrees;
    let agreed = match kind {
        Kind::Spec => agrees::<numaplan::spec::raw::JobSpec>(text),
        Kind::Fixture => agrees::<numaplan::topology::fixture_file::FixtureFile>(text),
        Kind::Plan => agrees::<plan_file::PlanFile>(text)
            .or_else(|| agrees::<plan_file::job::GroupedPlanFile>(text)),
        Kind::Xml => None,
    };
    agreed
        .unwrap_or(Ok(()))
        .map_err(|e| format!("the fast YAML reader differs from serde_yaml: {e}"))
}

/// One case through the loaders of its kind. `Err` for a broken round trip.
/// Runs one input; `Ok` holds how many ranks it planned (the work the time limit allows for).
fn run_case(kind: Kind, bytes: Vec<u8>, topo: &Topology) -> Result<usize, String> {
    let text = match numaplan::text::decode(bytes) {
        Ok(t) => t,
        Err(_) => return Ok(0),
    };
    fast_reader_agrees(kind, &text)?;
    match kind {
        Kind::Spec => match numaplan::spec::load::load_str("job.yaml", &text) {
            Err(e) => show(e.into()),
            Ok(spec) => match numaplan::resolve::resolve(&spec.spec, topo) {
                Err(e) => show(Error::Resolve {
                    error: Box::new(e),
                    map: Box::new(spec.map.file.clone()),
                }),
                Ok(plan) => {
                    let p = provenance("0");
                    let yaml = plan_file::render_yaml(&plan, &p);
                    let mut back = plan_file::load("plan.yaml", &yaml)
                        .map_err(|e| format!("a compiled plan does not read back: {e}"))?;
                    // The launchers' options are the spec's, for the emitters; a plan file has none.
                    back.plan.slurm = plan.slurm.clone();
                    back.plan.flux = plan.flux.clone();
                    back.plan.kubernetes = plan.kubernetes.clone();
                    if back.plan != plan {
                        let (a, b) = (format!("{plan:?}"), format!("{:?}", back.plan));
                        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
                        let near = |s: &str| {
                            s.get(at.saturating_sub(60)..(at + 60).min(s.len()))
                                .unwrap_or_default()
                                .to_string()
                        };
                        return Err(format!(
                            "a compiled plan reads back different: {} / {}",
                            near(&a),
                            near(&b)
                        ));
                    }
                    let plan_ids = ["0123456789abcdef".to_string()];
                    let origin = Origin {
                        header: header("0"),
                        plan_file: &yaml,
                        script: Some("run.sh"),
                        plan_ids: &plan_ids,
                    };
                    let ranks = plan.ranks.len();
                    let job = numaplan::plan::job::JobPlan::of_one_group(plan);
                    for kind in [
                        EmitKind::Bash,
                        EmitKind::Sbatch,
                        EmitKind::SbatchExec,
                        EmitKind::Torchrun,
                        EmitKind::Mpirun,
                        EmitKind::K8s,
                        EmitKind::Kubelet,
                    ] {
                        let machines = std::slice::from_ref(topo);
                        if let Err(e) = numaplan::emit::launch(&job, machines, kind, &origin) {
                            show(e.into());
                        }
                    }
                    return Ok(ranks);
                }
            },
        },
        Kind::Fixture => match fixture::load("fixture.yaml", &text) {
            Err(e) => show(e.into()),
            Ok(t) => {
                let dumped = fixture::dump(&t);
                let again = fixture::load("fixture.yaml", &dumped)
                    .map_err(|e| format!("a loaded fixture does not dump and load back: {e}"))?;
                if fixture::dump(&again) != dumped {
                    return Err("a fixture dumps differently after a round trip".into());
                }
            }
        },
        Kind::Plan => {
            if let Err(e) = plan_file::load("plan.yaml", &text) {
                show(e.into());
            }
        }
        Kind::Xml => {
            if let Err(e) = numaplan::topology::xml_precheck::precheck_xml("machine.xml", &text) {
                show(e.into());
            }
        }
    }
    Ok(0)
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Saves a failing case and describes it.
fn failure(name: &str, case: u64, bytes: &[u8], what: &str) -> String {
    let dir = repo().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{case}-{name}"));
    let _ = std::fs::write(&path, bytes);
    format!(
        "{name} case {case}: {what} (input saved as {})",
        path.display()
    )
}

/// The time one input may take: 1 s, plus per rank it planned 250 µs or, on a slower machine,
/// 3x what a rank of a plainly linear job (`per_rank`, measured on this machine) takes. A stall
/// is time beyond linear: a quadratic step at 65,536 ranks is 16x the per-rank time of 4,096.
fn time_limit(ranks: usize, per_rank: Duration) -> Duration {
    Duration::from_secs(1) + Duration::from_micros(250).max(per_rank * 3) * ranks as u32
}

/// What one rank of a job of 4,096 mpibind ranks on `topo` costs here (the plan, its
/// read-back and five scripts): the linear rate `time_limit` allows for.
fn per_rank_here(topo: &Topology) -> Duration {
    let ranks = 4096;
    let spec = format!("ranks_per_node: {ranks}\ncpu:\n  policy: mpibind\n");
    let start = Instant::now();
    let planned = run_case(Kind::Spec, spec.into_bytes(), topo);
    assert_eq!(planned, Ok(ranks));
    start.elapsed() / ranks as u32
}

#[test]
fn mutated_inputs_never_panic_stall_or_break_a_round_trip() {
    let cases = setting("NUMAPLAN_FUZZ_CASES", 150);
    let seed = setting("NUMAPLAN_FUZZ_SEED", 0x6e75_6d61_706c_616e);
    let topo =
        numaplan::topology::load_file(&repo().join("examples/topologies/nvidia-dgx-a100.yaml"))
            .unwrap();
    let per_rank = per_rank_here(&topo);
    // Panics are failures here, reported below; the default hook would print each.
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for (name, kind, text) in corpus() {
        let mut rng = Rng(seed
            ^ name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            }));
        // The unmutated file first: every seed must pass as it is.
        for case in 0..=cases {
            let bytes = if case == 0 {
                text.clone()
            } else {
                mutate(&mut rng, &text)
            };
            let start = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| run_case(kind, bytes.clone(), &topo)));
            let what = match outcome {
                Err(_) => Some("panicked".to_string()),
                Ok(Err(broken)) => Some(broken),
                // A stall is time beyond linear in the plan made (mpibind plans up to 65,536
                // ranks sharing a node's CPUs; a debug build spends some 250 µs a rank on the
                // plan, its read-back and five scripts).
                Ok(Ok(ranks)) if start.elapsed() > time_limit(ranks, per_rank) => {
                    Some(format!("took {:?} for {ranks} ranks", start.elapsed()))
                }
                Ok(Ok(_)) => None,
            };
            if let Some(what) = what {
                failures.push(failure(&name, case, &bytes, &what));
            }
        }
    }
    let _ = std::panic::take_hook();
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// XML goes through the binary: hwloc imports it in a child process, which may crash; numaplan
/// must end with 0 or 1 and a diagnostic, never a signal, a panic or a stall.
#[test]
fn mutated_xml_never_kills_numaplan() {
    let cases = setting("NUMAPLAN_FUZZ_CASES", 150) / 5;
    let seed = setting("NUMAPLAN_FUZZ_SEED", 0x6e75_6d61_706c_616e);
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (name, kind, text) in corpus() {
        if kind != Kind::Xml {
            continue;
        }
        let mut rng = Rng(seed ^ text.len() as u64);
        for case in 0..=cases {
            let bytes = if case == 0 {
                text.clone()
            } else {
                mutate(&mut rng, &text)
            };
            let file = dir.path().join("machine.xml");
            std::fs::write(&file, &bytes).unwrap();
            let start = Instant::now();
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_numaplan"))
                .args([
                    "topo",
                    "--topology",
                    file.to_str().unwrap(),
                    "--format",
                    "yaml",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break Some(s);
                }
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            let stderr = child
                .wait_with_output()
                .map(|o| o.stderr)
                .unwrap_or_default();
            let stderr = String::from_utf8_lossy(&stderr);
            let what = match status.map(|s| s.code()) {
                None => Some("stalled".to_string()),
                Some(None) => Some("killed by a signal".to_string()),
                Some(Some(0)) => None,
                Some(Some(1)) if stderr.starts_with("error[E0") && !stderr.contains("panicked") => {
                    None
                }
                Some(code) => Some(format!("ended with {code:?}: {stderr}")),
            };
            if let Some(what) = what {
                failures.push(failure(&name, case, &bytes, &what));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The fast YAML reader reads every plan and fixture numaplan writes (where it declined one,
/// `bind` would pay libyaml's time at every rank's start), and reads each as serde_yaml does.
#[test]
fn the_fast_reader_reads_what_numaplan_writes() {
    use numaplan::yaml::fast_reader_agrees;
    let examples = std::fs::read_dir(repo().join("examples")).unwrap();
    let mut read = 0;
    for spec in examples.map(|e| e.unwrap().path()) {
        if spec.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let plan = common::numaplan(&["compile", spec.to_str().unwrap()]).ok();
        let agreed = match plan.contains("\ngroups:\n") {
            true => fast_reader_agrees::<plan_file::job::GroupedPlanFile>(&plan),
            false => fast_reader_agrees::<plan_file::PlanFile>(&plan),
        };
        assert_eq!(agreed, Some(Ok(())), "{}", spec.display());
        read += 1;
    }
    // Fixtures as numaplan writes them (`topo --format yaml`); hand-written ones may hold what
    // only serde_yaml reads (a comment after a value, double quotes), which it then reads.
    for fixture in common::fixtures() {
        let path = fixture.to_str().unwrap();
        let text = common::numaplan(&["topo", "--topology", path, "--format", "yaml"]).ok();
        let agreed = fast_reader_agrees::<numaplan::topology::fixture_file::FixtureFile>(&text);
        assert_eq!(agreed, Some(Ok(())), "{path}");
    }
    assert!(read >= 10, "{read} examples");
}
