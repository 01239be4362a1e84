//! The picture of a plan on its machine: packages, NUMA nodes, L3 groups and cores, each core
//! marked with the rank that owns it, GPUs and NICs under their node. `build` makes the model;
//! `render_text` draws it with Unicode boxes (colour optional), `svg::render` as an image.

use std::collections::BTreeSet;

use super::{core_owners, id_list};
use crate::ids::NodeId;
use crate::plan::Plan;
use crate::topology::Topology;
use crate::topology::model::NodeKind;

/// What a core is in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Rank(u32),
    /// In the rank's helper pool (`cpu.helpers`).
    Helper(u32),
    /// CPUs of two or more ranks.
    Shared,
    /// Set aside by the spec (`cpu.reserve`, `cpu.reserve_per_l3`).
    Reserved,
    /// Outside the CPUs the job may use (cgroup, affinity).
    NotAllowed,
    Idle,
}

pub struct Picture {
    pub packages: Vec<PackageBox>,
    /// Devices without a NUMA node.
    pub unplaced: Vec<String>,
    /// Characters of the widest rank number.
    pub cell: usize,
    /// Whether any core is a helper core (the legend then says what `h` is).
    pub helpers: bool,
}

pub struct PackageBox {
    pub label: String,
    pub nodes: Vec<NodeBox>,
}

pub struct NodeBox {
    /// `node 3 · ranks 0-1`; consecutive memory-only nodes alike are one box (`nodes 4-11 · ...`).
    pub label: String,
    pub memory_only: bool,
    pub rows: Vec<Row>,
    pub devices: Vec<String>,
}

/// Cores drawn on one line: runs of cores of one L3 group each.
pub struct Row {
    pub first_cpu: u32,
    pub groups: Vec<Vec<Mark>>,
}

const LEGEND: &str = "a cell per core (SMT siblings folded), numbered by its rank; · idle, r reserved, × not allowed, * shared";

/// The legend under the picture; `h` is explained where helper cores are drawn.
pub fn legend(p: &Picture) -> String {
    if p.helpers {
        format!("{LEGEND}, h a rank's helper core")
    } else {
        LEGEND.to_string()
    }
}

pub fn build(plan: &Plan, topo: &Topology) -> Picture {
    let owners = core_owners(plan, topo);
    // What the job may use: the machine's allowed CPUs less what `cpu.allowed` leaves out.
    let allowed = topo.allowed().difference(&plan.excluded);
    let marks: Vec<Mark> = topo
        .cores()
        .iter()
        .zip(&owners)
        .map(|(core, o)| match o.len() {
            0 if !core.cpus.intersects(&allowed) => Mark::NotAllowed,
            0 if core.cpus.intersects(&plan.reserved) => Mark::Reserved,
            0 => Mark::Idle,
            1 => {
                let rank = *o.first().expect("one owner");
                let helper = plan
                    .ranks
                    .get(rank as usize)
                    .is_some_and(|r| r.helpers.intersects(&core.cpus));
                if helper {
                    Mark::Helper(rank)
                } else {
                    Mark::Rank(rank)
                }
            }
            _ => Mark::Shared,
        })
        .collect();
    let max_rank = plan.ranks.len().saturating_sub(1);
    let cell = max_rank.to_string().len();
    let capacity = (64 / (cell + 1)).max(4);

    // A node's package is its own or that of its cores (hwloc 1.x exports put NUMA nodes above
    // packages; one node may span several); nodes without either (memory-only ones there) go
    // in a machine box.
    let packages = topo
        .nodes_by_packages()
        .into_iter()
        .map(|(packages, nodes)| PackageBox {
            label: match packages.as_slice() {
                [] => "machine".into(),
                [p] => format!("package {p}"),
                many => format!("packages {}", crate::ids::package_names(many)),
            },
            nodes: fold_memory_nodes(
                nodes
                    .iter()
                    .map(|n| (n.id, node_box(plan, topo, n.id, &marks, capacity)))
                    .collect(),
            ),
        })
        .collect();
    let mut unplaced = Vec::new();
    for g in topo.gpus().iter().filter(|g| g.numa_node.is_none()) {
        unplaced.push(gpu_line(plan, g));
    }
    for n in topo.nics().iter().filter(|n| n.numa_node.is_none()) {
        unplaced.push(nic_line(plan, n));
    }
    Picture {
        helpers: marks.iter().any(|m| matches!(m, Mark::Helper(_))),
        packages,
        unplaced,
        cell,
    }
}

/// Merges runs of memory-only nodes that read alike (GH200's eight GPU-memory nodes per GPU)
/// into one box.
fn fold_memory_nodes(boxes: Vec<(NodeId, NodeBox)>) -> Vec<NodeBox> {
    let mut runs: Vec<(Vec<u32>, NodeBox)> = Vec::new();
    for (id, b) in boxes {
        match runs.last_mut() {
            Some((ids, last)) if b.memory_only && last.memory_only && last.label == b.label => {
                ids.push(id.0)
            }
            _ => runs.push((vec![id.0], b)),
        }
    }
    runs.into_iter()
        .map(|(ids, mut b)| {
            let word = if ids.len() == 1 { "node" } else { "nodes" };
            b.label = format!("{word} {}{}", id_list(ids), b.label);
            b
        })
        .collect()
}

/// A node's box; its label lacks the leading `node N`, which `fold_memory_nodes` adds.
fn node_box(plan: &Plan, topo: &Topology, id: NodeId, marks: &[Mark], capacity: usize) -> NodeBox {
    let node = topo.node(id).expect("listed node");
    let mut label = String::new();
    match &node.kind {
        NodeKind::Cpu => {}
        NodeKind::GpuMemory { gpu: Some(pci) } => {
            let which = topo
                .gpus()
                .iter()
                .find(|g| g.pci == *pci)
                .map_or(pci.to_string(), |g| format!("GPU {}", g.index));
            label.push_str(&format!(" · memory of {which}"));
        }
        kind => label.push_str(&format!(" · {} memory", kind.name())),
    }
    if let Some(mib) = node.memory_mib {
        label.push_str(&format!(" · {}", crate::phrase::mib(mib)));
    }
    let homed: BTreeSet<u32> = plan
        .ranks
        .iter()
        .filter(|r| r.numa_node == Some(id))
        .map(|r| r.local_rank)
        .collect();
    if !homed.is_empty() {
        let word = if homed.len() == 1 { "rank" } else { "ranks" };
        label.push_str(&format!(" · {word} {}", id_list(homed)));
    }
    let users: BTreeSet<u32> = plan
        .ranks
        .iter()
        .filter(|r| r.memory.nodes.contains(&id))
        .map(|r| r.local_rank)
        .collect();
    if node.kind.is_memory_only() && !users.is_empty() {
        label.push_str(&format!(" · memory of ranks {}", id_list(users)));
    }

    // Runs of cores of one L3 group, split to fit a row, then packed into rows.
    let mut chunks: Vec<(u32, Vec<Mark>)> = Vec::new();
    let mut last_l3 = None;
    for (core, mark) in topo.cores().iter().zip(marks).filter(|(c, _)| c.node == id) {
        match chunks.last_mut() {
            Some((_, run)) if last_l3 == Some(core.l3) && run.len() < capacity => run.push(*mark),
            _ => chunks.push((core.key(), vec![*mark])),
        }
        last_l3 = Some(core.l3);
    }
    let mut rows: Vec<Row> = Vec::new();
    for (first_cpu, run) in chunks {
        match rows.last_mut() {
            Some(row) if row.groups.iter().map(Vec::len).sum::<usize>() + run.len() <= capacity => {
                row.groups.push(run)
            }
            _ => rows.push(Row {
                first_cpu,
                groups: vec![run],
            }),
        }
    }
    let mut devices: Vec<String> = topo
        .gpus()
        .iter()
        .filter(|g| g.numa_node == Some(id))
        .map(|g| gpu_line(plan, g))
        .collect();
    devices.extend(
        topo.nics()
            .iter()
            .filter(|n| n.numa_node == Some(id))
            .map(|n| nic_line(plan, n)),
    );
    NodeBox {
        label,
        memory_only: node.kind.is_memory_only(),
        rows,
        devices,
    }
}

fn gpu_line(plan: &Plan, g: &crate::topology::model::Gpu) -> String {
    let users = plan
        .ranks
        .iter()
        .filter(|r| r.gpus.iter().any(|p| p.index == g.index))
        .map(|r| r.local_rank);
    format!("GPU {} {} {}", g.index, g.pci, used_by(users))
}

fn nic_line(plan: &Plan, n: &crate::topology::model::Nic) -> String {
    let users = plan
        .ranks
        .iter()
        .filter(|r| r.nics.iter().any(|nic| nic.name == n.name))
        .map(|r| r.local_rank);
    format!("NIC {} ({}) {}", n.name, n.kind.name(), used_by(users))
}

fn used_by(users: impl Iterator<Item = u32>) -> String {
    let users: Vec<u32> = users.collect();
    match users.len() {
        0 => "unused".into(),
        1 => format!("→ rank {}", users[0]),
        _ => format!("→ ranks {}", id_list(users)),
    }
}

/// Whether `render_text` colours ranks (ANSI 256 colours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    Always,
    Never,
}

/// A piece of a line: text, and the rank it shows (for colour) or whether it is dim.
struct Span {
    text: String,
    style: Style,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Rank(u32),
    Dim,
}

/// 12 colours far apart in the xterm 256-colour palette; rank r gets `PALETTE[r % 12]`.
const PALETTE: [u8; 12] = [33, 208, 40, 199, 226, 51, 160, 93, 118, 214, 27, 201];

pub fn render_text(p: &Picture, colour: Colour) -> String {
    let node_lines: Vec<Vec<Vec<Span>>> = p
        .packages
        .iter()
        .flat_map(|pk| &pk.nodes)
        .map(|n| node_content(n, p.cell))
        .collect();
    let labels = p
        .packages
        .iter()
        .flat_map(|pk| &pk.nodes)
        .map(|n| n.label.chars().count() + 4);
    let inner = node_lines
        .iter()
        .flatten()
        .map(|l| width(l))
        .chain(labels)
        .chain(
            p.packages
                .iter()
                .map(|pk| pk.label.chars().count().saturating_sub(4)),
        )
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let mut contents = node_lines.into_iter();
    for pk in &p.packages {
        out.push_str(&top(&pk.label, inner + 6));
        for n in &pk.nodes {
            out.push_str(&format!("│ {} │\n", top(&n.label, inner + 2).trim_end()));
            for line in contents.next().expect("one content per node") {
                let pad = inner - width(&line);
                out.push_str("│ │ ");
                out.push_str(&paint(&line, colour));
                out.push_str(&" ".repeat(pad));
                out.push_str(" │ │\n");
            }
            out.push_str(&format!("│ └{}┘ │\n", "─".repeat(inner + 2)));
        }
        out.push_str(&format!("└{}┘\n", "─".repeat(inner + 6)));
    }
    for d in &p.unplaced {
        out.push_str(&format!("no NUMA node: {d}\n"));
    }
    out
}

/// `┌─ label ───┐` of `inner` characters between the corners.
fn top(label: &str, inner: usize) -> String {
    let used = label.chars().count() + 3;
    format!("┌─ {label} {}┐\n", "─".repeat(inner.saturating_sub(used)))
}

fn node_content(n: &NodeBox, cell: usize) -> Vec<Vec<Span>> {
    let mut lines = Vec::new();
    for row in &n.rows {
        let mut line = vec![Span {
            text: format!("{:>4} ", row.first_cpu),
            style: Style::Dim,
        }];
        for (gi, group) in row.groups.iter().enumerate() {
            line.push(plain(if gi == 0 { "[" } else { " [" }));
            for (ci, mark) in group.iter().enumerate() {
                if ci > 0 {
                    line.push(plain(" "));
                }
                let (text, style) = match mark {
                    Mark::Rank(r) => (r.to_string(), Style::Rank(*r)),
                    Mark::Helper(r) => ("h".into(), Style::Rank(*r)),
                    Mark::Shared => ("*".into(), Style::Plain),
                    Mark::Reserved => ("r".into(), Style::Dim),
                    Mark::NotAllowed => ("×".into(), Style::Dim),
                    Mark::Idle => ("·".into(), Style::Dim),
                };
                line.push(Span {
                    text: format!("{text:>cell$}"),
                    style,
                });
            }
            line.push(plain("]"));
        }
        lines.push(line);
    }
    if n.rows.is_empty() {
        lines.push(vec![Span {
            text: "memory only, no CPUs".into(),
            style: Style::Dim,
        }]);
    }
    for d in &n.devices {
        lines.push(vec![plain(d)]);
    }
    lines
}

fn plain(s: &str) -> Span {
    Span {
        text: s.into(),
        style: Style::Plain,
    }
}

fn width(line: &[Span]) -> usize {
    line.iter().map(|s| s.text.chars().count()).sum()
}

fn paint(line: &[Span], colour: Colour) -> String {
    line.iter()
        .map(|s| match (colour, s.style) {
            (Colour::Never, _) | (_, Style::Plain) => s.text.clone(),
            (Colour::Always, Style::Rank(r)) => format!(
                "\x1b[1;38;5;{}m{}\x1b[0m",
                PALETTE[r as usize % PALETTE.len()],
                s.text
            ),
            (Colour::Always, Style::Dim) => format!("\x1b[2m{}\x1b[0m", s.text),
        })
        .collect()
}

/// The colour of rank `r` as `#rrggbb`, for the SVG: the same palette entry as the terminal's.
pub fn rank_rgb(r: u32) -> String {
    let c = PALETTE[r as usize % PALETTE.len()];
    // xterm 256: 16..232 is a 6x6x6 cube.
    let i = c - 16;
    let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
    format!(
        "#{:02x}{:02x}{:02x}",
        level(i / 36),
        level((i / 6) % 6),
        level(i % 6)
    )
}
