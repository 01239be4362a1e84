//! `numaplan topo --matrix` against `nvidia-smi topo -m` of the same machines
//! (tests/data/nvidia-smi): every cell nvidia-smi shows for a GPU and a NIC the fixture has,
//! and every GPU's CPU and NUMA affinity, are the same. NVLink (`NV#`) is not in numaplan's
//! topologies, so GPU pairs are not compared.

mod common;

use std::collections::BTreeMap;

use common::{numaplan, repo};

/// A matrix as (row, column) -> cell, with each row's affinity columns; devices named as the
/// NIC legend names them (`NIC3` -> `mlx5_3`).
struct Matrix {
    cells: BTreeMap<(String, String), String>,
    /// CPU Affinity, and NUMA Affinity where the nvidia-smi shows it (older ones do not).
    affinity: BTreeMap<String, (String, Option<String>)>,
}

/// Splits what a paste glued together (`NODENODE`, `NIC8NIC9`) into its words.
fn words(token: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = token;
    'next: while !rest.is_empty() {
        for fixed in ["PIX", "PXB", "PHB", "NODE", "SYS", "X"] {
            if let Some(r) = rest.strip_prefix(fixed) {
                out.push(fixed.to_string());
                rest = r;
                continue 'next;
            }
        }
        for prefix in ["GPU", "NIC", "mlx5_", "NV"] {
            if let Some(r) = rest.strip_prefix(prefix) {
                let digits = r.chars().take_while(char::is_ascii_digit).count();
                out.push(format!("{prefix}{}", &r[..digits]));
                rest = &r[digits..];
                continue 'next;
            }
        }
        out.push(rest.to_string());
        break;
    }
    out
}

fn parse(text: &str, legend: &BTreeMap<String, String>) -> Matrix {
    let name = |label: &str| {
        legend
            .get(label)
            .cloned()
            .unwrap_or_else(|| label.to_string())
    };
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // The line before an excerpt's `[... excerpt ends here ...]` marker is cut short.
    let lines: Vec<&str> = all
        .iter()
        .enumerate()
        .filter(|(i, l)| !l.starts_with('[') && all.get(i + 1).is_none_or(|n| !n.starts_with('[')))
        .map(|(_, l)| *l)
        .collect();
    let header = *lines
        .iter()
        .find(|l| l.contains("CPU Affinity"))
        .expect("a header line");
    let columns: Vec<String> = header
        .split("CPU Affinity")
        .next()
        .unwrap()
        .split_whitespace()
        .flat_map(words)
        .collect();
    let mut m = Matrix {
        cells: BTreeMap::new(),
        affinity: BTreeMap::new(),
    };
    for line in &lines {
        let tokens: Vec<String> = line.split_whitespace().flat_map(words).collect();
        let Some(row) = tokens.first().filter(|t| t.starts_with("GPU")) else {
            continue;
        };
        // A row cut short by the excerpt has no affinity column after its cells.
        if tokens.len() < columns.len() + 2 {
            continue;
        }
        for (col, cell) in columns.iter().zip(&tokens[1..]) {
            m.cells.insert((name(row), name(col)), cell.clone());
        }
        let cpus = tokens[columns.len() + 1].clone();
        let node = header
            .contains("NUMA Affinity")
            .then(|| tokens.get(columns.len() + 2).cloned())
            .flatten();
        m.affinity.insert(name(row), (cpus, node));
    }
    m
}

/// numaplan's matrix of a fixture, with its NIC legend applied.
fn ours(fixture: &str) -> Matrix {
    let text = numaplan(&[
        "topo",
        "--matrix",
        "--topology",
        &format!("examples/topologies/{fixture}.yaml"),
    ])
    .ok();
    let legend: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .filter(|(k, _)| k.starts_with("NIC"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(text.contains("\nLegend:\n"), "{text}");
    parse(&text, &legend)
}

fn theirs(machine: &str) -> Matrix {
    let text = std::fs::read_to_string(repo().join(format!("tests/data/nvidia-smi/{machine}.txt")))
        .unwrap();
    let legend = (0..32)
        .map(|k| (format!("NIC{k}"), format!("mlx5_{k}")))
        .collect();
    parse(&text, &legend)
}

/// Compares; returns the cells that differ as `(row, column, theirs, ours)`.
fn compare(machine: &str) -> (usize, Vec<(String, String, String, String)>) {
    let (ours, theirs) = (ours(machine), theirs(machine));
    assert!(!theirs.affinity.is_empty(), "{machine}: no complete row");
    for (gpu, (cpus, node)) in &theirs.affinity {
        let (our_cpus, our_node) = &ours.affinity[gpu];
        assert_eq!(our_cpus, cpus, "{machine}: {gpu}'s CPU affinity");
        if node.is_some() {
            assert_eq!(our_node, node, "{machine}: {gpu}'s NUMA affinity");
        }
    }
    let mut compared = 0;
    let mut differ = Vec::new();
    for ((row, col), cell) in &theirs.cells {
        if cell.starts_with("NV") || col.starts_with("GPU") {
            continue; // NVLink, or a GPU pair: not in numaplan's topologies
        }
        let Some(mine) = ours.cells.get(&(row.clone(), col.clone())) else {
            continue; // a NIC the fixture does not have
        };
        compared += 1;
        if mine != cell {
            differ.push((row.clone(), col.clone(), cell.clone(), mine.clone()));
        }
    }
    (compared, differ)
}

#[test]
fn dgx_a100_and_h100_match_nvidia_smi() {
    for (machine, cells) in [("nvidia-dgx-a100", 40), ("nvidia-dgx-h100", 64)] {
        let (compared, differ) = compare(machine);
        assert_eq!(differ, [], "{machine}");
        assert_eq!(compared, cells, "{machine}: cells compared");
    }
}

/// The DGX-2H fixture records the switch each GPU pair shares with a NIC (PIX), not the switch
/// above it that two such pairs share: where nvidia-smi reads PXB for the other pair's NIC, the
/// fixture knows only the node. Those cells, and no others, differ.
#[test]
fn dgx2h_matches_nvidia_smi_but_for_the_upper_switch() {
    let (compared, differ) = compare("nvidia-dgx2h");
    assert_eq!(compared, 40);
    let expected: Vec<(String, String, String, String)> = [
        ("GPU0", "mlx5_1"),
        ("GPU1", "mlx5_1"),
        ("GPU2", "mlx5_0"),
        ("GPU3", "mlx5_0"),
    ]
    .iter()
    .map(|(g, n)| (g.to_string(), n.to_string(), "PXB".into(), "NODE".into()))
    .collect();
    assert_eq!(differ, expected);
}

#[test]
fn the_matrix_reads_an_hwloc_export_and_needs_no_format() {
    // Port-level PCI paths from hwloc: GPU pairs under one switch are PIX, across the
    // package's switches PXB or NODE.
    let text = numaplan(&[
        "topo",
        "-m",
        "--topology",
        "tests/data/xml/nvidia-dgx2h--nvidiaDGX2.xml",
    ])
    .ok();
    let m = parse(&text, &BTreeMap::new());
    assert_eq!(m.cells[&("GPU0".into(), "GPU1".into())], "PIX");
    assert_eq!(m.cells[&("GPU0".into(), "GPU8".into())], "SYS");
    let run = numaplan(&["topo", "--matrix", "--format", "json"]);
    assert_eq!(run.code, 2, "--matrix is a text view: {}", run.stderr);
}
