//! The referee: machines nobody on the project wrote, read by numaplan and by hwloc itself.
//!
//! For every hwloc XML export, `numaplan topo` must agree with what hwloc's own library says
//! (`tests/hwloc-corpus/referee.c`): the CPUs, the cores and each one's SMT siblings, the
//! packages, the NUMA nodes and each one's CPUs, the CPU kinds. The exports are:
//!
//! - the hwloc exports of `tests/data/xml` (1.x and 2.x: the referee built against the system's
//!   hwloc reads them here; 3.0: what an hwloc 3 build of the referee printed, recorded in
//!   `tests/data/xml/hwloc3-referee.txt` with the command that made it);
//! - with `NUMAPLAN_HWLOC_CORPUS=DIR`, every `*.xml` under DIR: `scripts/test.sh` builds hwloc's
//!   own test-suite machines there (`tests/hwloc-corpus/build.sh`: about 110 machines from
//!   Debian's hwloc source) and sets it. `NUMAPLAN_HWLOC_REFEREE` names another referee binary
//!   (one built against hwloc 3, for a checkout of hwloc's 3.0 test files).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::repo;
use numaplan::topology::load_file;

/// What the referee prints, one fact a line, in a canonical order.
type Facts = BTreeMap<String, String>;

/// numaplan's reading of `xml` as the referee's facts, or its diagnostic's first line.
fn numaplan_facts(dir: &Path, xml: &Path) -> Result<Facts, String> {
    let out = dir.join("imported.yaml");
    let _ = std::fs::remove_file(&out);
    let run = common::numaplan_in(
        dir,
        &[
            "topo",
            "--topology",
            xml.to_str().unwrap(),
            "--format",
            "yaml",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    if run.code != 0 {
        return Err(run.stderr.lines().next().unwrap_or_default().to_string());
    }
    let t = load_file(&out).unwrap();
    let mut facts = Facts::new();
    let cpus = t.all_cpus();
    facts.insert("pus".into(), cpus.len().to_string());
    facts.insert("cores".into(), t.cores().len().to_string());
    facts.insert("packages".into(), t.packages().len().to_string());
    facts.insert("numanodes".into(), t.nodes().len().to_string());
    facts.insert("cpukinds".into(), t.cpu_kinds().len().to_string());
    let nodeless = t
        .notes()
        .iter()
        .find_map(|n| n.strip_prefix("CPUs ")?.split_once(" have no NUMA node"))
        .map_or(String::new(), |(list, _)| list.to_string());
    facts.insert("nodeless".into(), nodeless);
    for n in t.nodes() {
        let node_cpus = t.node_cpus(n.id);
        if !node_cpus.is_empty() {
            facts.insert(format!("node {}", n.id), node_cpus.to_string());
        }
    }
    let mut cores: Vec<String> = t.cores().iter().map(|c| c.cpus.to_string()).collect();
    cores.sort();
    facts.insert("core".into(), cores.join(" | "));
    Ok(facts)
}

/// The referee's lines as facts (cores gathered into one sorted fact).
fn parse_referee(text: &str) -> Facts {
    let mut facts = Facts::new();
    let mut cores = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "core" => cores.push(value.to_string()),
            "node" => {
                let (id, cpus) = value.split_once(' ').unwrap();
                facts.insert(format!("node {id}"), cpus.to_string());
            }
            _ => {
                facts.insert(key.to_string(), value.to_string());
            }
        }
    }
    cores.sort();
    facts.insert("core".into(), cores.join(" | "));
    facts
}

/// The referee binary: `NUMAPLAN_HWLOC_REFEREE`, else `referee.c` built against the system's
/// hwloc (libhwloc-dev) in `dir`.
fn referee(dir: &Path) -> PathBuf {
    if let Some(bin) = std::env::var_os("NUMAPLAN_HWLOC_REFEREE") {
        return bin.into();
    }
    let flags = common::succeed(
        std::process::Command::new("pkg-config").args(["--cflags", "--libs", "hwloc"]),
    );
    let flags = String::from_utf8(flags.stdout).unwrap();
    let bin = dir.join("referee");
    // The libraries after the source, or the linker drops them.
    common::succeed(
        std::process::Command::new("cc")
            .args(["-O1", "-o"])
            .arg(&bin)
            .arg(repo().join("tests/hwloc-corpus/referee.c"))
            .args(flags.split_whitespace()),
    );
    bin
}

/// What the referee says of `xml`, or `None` where its hwloc cannot read the file (a 3.0
/// export for an hwloc 2 build, an NCCL topology file).
fn referee_facts(bin: &Path, xml: &Path) -> Option<Facts> {
    let out = std::process::Command::new(bin).arg(xml).output().unwrap();
    out.status
        .success()
        .then(|| parse_referee(&String::from_utf8_lossy(&out.stdout)))
}

/// The differences between numaplan's facts and the referee's, one line each.
fn differences(ours: &Facts, hwloc: &Facts) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = ours.keys().chain(hwloc.keys()).collect();
    keys.into_iter()
        .filter(|k| ours.get(*k) != hwloc.get(*k))
        .map(|k| {
            format!(
                "{k}: numaplan {:?}, hwloc {:?}",
                ours.get(k).map(String::as_str).unwrap_or("-"),
                hwloc.get(k).map(String::as_str).unwrap_or("-")
            )
        })
        .collect()
}

fn xml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            xml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "xml") {
            out.push(p);
        }
    }
}

/// Every file the referee reads agrees with numaplan; returns how many it read.
fn agree_on(files: &[PathBuf]) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let bin = referee(dir.path());
    let mut read = 0;
    let mut failures = Vec::new();
    for xml in files {
        let Some(hwloc) = referee_facts(&bin, xml) else {
            continue;
        };
        read += 1;
        match numaplan_facts(dir.path(), xml) {
            Ok(ours) => {
                let d = differences(&ours, &hwloc);
                if !d.is_empty() {
                    failures.push(format!("{}:\n  {}", xml.display(), d.join("\n  ")));
                }
            }
            Err(e) => failures.push(format!("{}: hwloc reads it, numaplan: {e}", xml.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    read
}

/// The 1.x and 2.x hwloc exports of tests/data/xml, against hwloc 2.
#[test]
fn the_published_exports_read_as_hwloc_reads_them() {
    let mut files = Vec::new();
    xml_files(&repo().join("tests/data/xml"), &mut files);
    files.sort();
    let read = agree_on(&files);
    assert!(read >= 19, "the referee read only {read} files");
}

/// The hwloc 3.0 exports of tests/data/xml, against what hwloc 3 said of them.
#[test]
fn the_hwloc3_exports_read_as_hwloc3_reads_them() {
    let table = std::fs::read_to_string(repo().join("tests/data/xml/hwloc3-referee.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut sections = 0;
    for section in table.split("\n== ").skip(1) {
        let (file, facts) = section.split_once('\n').unwrap();
        let xml = repo().join("tests/data/xml").join(file.trim());
        let ours = numaplan_facts(dir.path(), &xml).unwrap_or_else(|e| panic!("{file}: {e}"));
        let d = differences(&ours, &parse_referee(facts));
        assert!(d.is_empty(), "{file}:\n  {}", d.join("\n  "));
        sections += 1;
    }
    let exports = std::fs::read_dir(repo().join("tests/data/xml"))
        .unwrap()
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.ok()?.path()).ok()?;
            text.contains("<topology version=\"3.0\">").then_some(())
        })
        .count();
    assert_eq!(
        sections, exports,
        "every 3.0 export has its referee section"
    );
}

/// hwloc's own test-suite machines (`NUMAPLAN_HWLOC_CORPUS`, built by
/// tests/hwloc-corpus/build.sh): about 110 machines in 1.x and 2.x exports, sysfs snapshots
/// and CPUID dumps, each read as hwloc reads it.
#[test]
fn hwloc_s_own_machines_read_as_hwloc_reads_them() {
    let Some(corpus) = std::env::var_os("NUMAPLAN_HWLOC_CORPUS") else {
        eprintln!(
            "NUMAPLAN_HWLOC_CORPUS is not set: hwloc's own machines were not compared \
             (scripts/test.sh builds them with tests/hwloc-corpus/build.sh)"
        );
        return;
    };
    let corpus = std::fs::canonicalize(&corpus).unwrap();
    let mut files = Vec::new();
    xml_files(&corpus, &mut files);
    files.sort();
    assert!(
        files.len() >= 60,
        "{} holds only {} exports",
        corpus.display(),
        files.len()
    );
    let read = agree_on(&files);
    assert!(
        read * 10 >= files.len() * 9,
        "the referee read only {read} of {} files",
        files.len()
    );
}

/// The referee parses its own lines back.
#[test]
fn referee_lines_become_facts() {
    let facts = parse_referee("pus 3\ncore 1-2\ncore 0\nnode 0 0-2\nnodeless \n");
    assert_eq!(facts["pus"], "3");
    assert_eq!(facts["core"], "0 | 1-2");
    assert_eq!(facts["node 0"], "0-2");
    assert_eq!(facts["nodeless"], "");
}
