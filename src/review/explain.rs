//! `numaplan explain`: what a plan is and why, for a human: a table per rank, the warnings, the
//! quality figures and the picture of the machine.

use schemars::JsonSchema;
use serde::Serialize;

use super::picture::{self, Colour};
use super::quality;
use super::{cores_of, id_list, l3_of};
use crate::ids::node_list;
use crate::plan::{Plan, RankBinding};
use crate::resolve::nics::{self, Closeness};
use crate::spec::ProcBind;
use crate::topology::Topology;

pub fn render_text(plan: &Plan, topo: &Topology, notes: &[String], colour: Colour) -> String {
    // The text is made from the same report `--format json` serializes.
    let report = report(plan, topo, notes);
    let mut out = format!(
        "{}: {} rank{} per node on {}, {} node{}, policy {}\n",
        report.name.as_deref().unwrap_or("plan"),
        report.ranks_per_node,
        if report.ranks_per_node == 1 { "" } else { "s" },
        report.topology,
        report.nodes,
        if report.nodes == 1 { "" } else { "s" },
        report.policy
    );
    for n in &report.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push('\n');
    // The table's ranks are one node's: in a job of several nodes (a group's, or one plan's
    // on each node) they are local ranks, which the heading says.
    let rank = match plan.world_nodes() {
        1 => "rank",
        _ => "local rank",
    };
    let header = [
        rank, "GPU", "home", "CPUs", "cores", "L3", "NIC", "memory", "why",
    ];
    let rows: Vec<[String; 9]> = report.ranks.iter().map(row).collect();
    out.push_str(&table(&header, &rows));
    if !report.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &report.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out.push_str(&inside_table(&report.ranks, rank));
    out.push_str(&super::mpibind::thread_notes(plan));
    let picture = picture::build(plan, topo);
    out.push_str(&format!(
        "\nquality: {}\n\n{}\n",
        report.quality.line(),
        picture::legend(&picture)
    ));
    out.push_str(&picture::render_text(&picture, colour));
    out
}

/// What runs inside each rank, when the plan says (`cpu.helpers`, `openmp:`): its compute and
/// helper CPUs and its OpenMP threads.
fn inside_table(ranks: &[RankReport], rank: &str) -> String {
    if ranks
        .iter()
        .all(|r| r.helper_cpus.is_empty() && r.openmp.is_none())
    {
        return String::new();
    }
    let rows: Vec<[String; 4]> = ranks
        .iter()
        .map(|r| {
            let openmp = match &r.openmp {
                None => "-".to_string(),
                Some(o) if o.bind == ProcBind::None.name() => {
                    format!("{} threads, not bound", o.threads)
                }
                Some(o) if o.places.is_empty() => {
                    format!("{} threads, {} on the runtime's places", o.threads, o.bind)
                }
                Some(o) => format!(
                    "{} threads, {} over {} places",
                    o.threads,
                    o.bind,
                    o.places.len()
                ),
            };
            let helpers = if r.helper_cpus.is_empty() {
                "-".to_string()
            } else {
                r.helper_cpus.clone()
            };
            [
                r.local_rank.to_string(),
                r.compute_cpus.clone(),
                helpers,
                openmp,
            ]
        })
        .collect();
    let header = [rank, "compute CPUs", "helper CPUs", "OpenMP"];
    format!("\ninside the ranks:\n{}", table(&header, &rows))
}

/// A header and rows as aligned columns, two spaces apart, the last column unpadded.
fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = widths[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    std::iter::once(header.map(String::from))
        .chain(rows.iter().cloned())
        .map(|cells| line(&cells))
        .collect()
}

/// One rank as `explain --format json` gives it, and as the text table is made from.
#[derive(Serialize, JsonSchema)]
pub struct RankReport {
    pub local_rank: u32,
    pub gpus: Vec<u32>,
    pub gpu_pci: Vec<String>,
    /// The home NUMA node; `null` for a CPU-only rank spanning nodes.
    pub home: Option<u32>,
    /// Linux cpulist (`48-55,176-183`).
    pub cpus: String,
    pub cores: u32,
    pub l3_groups: Vec<u32>,
    /// The rank's NIC and how close it is to the rank's GPU (`same PCIe switch`, `same host
    /// bridge`, `same NUMA node`, `same package`, `other package`, `not in topology`).
    pub nic: Option<NicReport>,
    /// The memory policy and its nodes: `bind:3`, `interleave:0-3`, `none`.
    pub memory: String,
    /// Why the home node is the one it is.
    pub why: String,
    /// The CPUs for compute threads (`cpus` less the helper pool).
    pub compute_cpus: String,
    /// The helper pool (`cpu.helpers`); empty without one.
    pub helper_cpus: String,
    pub openmp: Option<OpenMpReport>,
}

#[derive(Serialize, JsonSchema)]
pub struct NicReport {
    pub name: String,
    pub closeness: String,
}

#[derive(Serialize, JsonSchema)]
pub struct OpenMpReport {
    pub threads: u32,
    /// OMP_PROC_BIND: `close`, `spread`, `master` or `false`.
    pub bind: String,
    /// The places (cpulists); empty for the runtime's own.
    pub places: Vec<String>,
}

/// `explain --format json` (`"numaplan_explain": 1`): the plan's header, every rank's row,
/// the warnings and the quality figures (schemas/explain.schema.json).
#[derive(Serialize, JsonSchema)]
pub struct Report {
    pub numaplan_explain: u32,
    pub name: Option<String>,
    pub topology: String,
    pub policy: String,
    pub nodes: u32,
    pub ranks_per_node: u32,
    /// About the machine it is drawn on (another fingerprint, `--force`).
    pub notes: Vec<String>,
    pub ranks: Vec<RankReport>,
    pub warnings: Vec<String>,
    pub quality: quality::Quality,
}

pub fn report(plan: &Plan, topo: &Topology, notes: &[String]) -> Report {
    Report {
        numaplan_explain: 1,
        name: plan.name.clone(),
        topology: plan.topology.clone(),
        policy: plan.policy.name().into(),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        notes: notes.to_vec(),
        ranks: plan
            .ranks
            .iter()
            .map(|r| rank_report(plan, topo, r))
            .collect(),
        warnings: plan
            .warnings
            .iter()
            .map(|w| w.listed(&plan.allowed_warnings))
            .collect(),
        quality: quality::measure(plan, topo),
    }
}

fn rank_report(plan: &Plan, topo: &Topology, r: &RankBinding) -> RankReport {
    let lead = r
        .gpus
        .first()
        .and_then(|p| topo.gpus().iter().find(|g| g.index == p.index));
    let cores = cores_of(topo, &r.cpus);
    let nic = r.nics.first().map(|nic| NicReport {
        name: nic.name.clone(),
        closeness: match topo.nics().iter().find(|n| n.name == nic.name) {
            Some(n) => {
                let anchor = nics::Anchor {
                    gpu: lead,
                    node: r.numa_node,
                    package: r.numa_node.and_then(|h| topo.node_package(h)),
                };
                closeness(nics::closeness(n, &anchor)).into()
            }
            None => "not in topology".into(),
        },
    });
    RankReport {
        local_rank: r.local_rank,
        gpus: r.gpus.iter().map(|g| g.index.0).collect(),
        gpu_pci: r.gpus.iter().map(|g| g.pci.to_string()).collect(),
        home: r.numa_node.map(|n| n.0),
        cpus: r.cpus.to_string(),
        cores: r.cores,
        l3_groups: l3_of(topo, &cores).into_iter().map(|l| l.0).collect(),
        nic,
        memory: super::diff::memory(&r.memory),
        why: why(plan, topo, r, lead),
        compute_cpus: r.compute().to_string(),
        helper_cpus: r.helpers.to_string(),
        openmp: r.openmp.as_ref().map(|o| OpenMpReport {
            threads: o.threads,
            bind: o.bind.name().into(),
            places: o.places.iter().map(ToString::to_string).collect(),
        }),
    }
}

/// A rank's row of the text table.
fn row(r: &RankReport) -> [String; 9] {
    let gpus = if r.gpus.is_empty() {
        "-".to_string()
    } else {
        r.gpus
            .iter()
            .zip(&r.gpu_pci)
            .map(|(g, pci)| format!("{g} ({})", short_pci(pci)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let nic = match &r.nic {
        None => "-".to_string(),
        Some(n) => format!("{} ({})", n.name, n.closeness),
    };
    [
        r.local_rank.to_string(),
        gpus,
        r.home.map_or("-".into(), |n| n.to_string()),
        r.cpus.clone(),
        r.cores.to_string(),
        id_list(r.l3_groups.iter().copied()),
        nic,
        r.memory.clone(),
        r.why.clone(),
    ]
}

/// Why the rank's home node is the one it is.
fn why(
    plan: &Plan,
    topo: &Topology,
    r: &RankBinding,
    lead: Option<&crate::topology::model::Gpu>,
) -> String {
    if plan.policy == crate::spec::Policy::Mpibind {
        let nodes: Vec<_> = topo
            .nodes()
            .iter()
            .filter(|n| topo.node_cpus(n.id).intersects(&r.cpus))
            .map(|n| n.id)
            .collect();
        return match r.numa_node {
            Some(n) => format!("mpibind: a task of NUMA domain {n}"),
            None => format!("mpibind: whole NUMA domains {}", node_list(&nodes)),
        };
    }
    let Some(gpu) = lead else {
        return match r.numa_node {
            Some(n) => format!("CPU-only rank: a block of node {n}"),
            None => "CPU-only rank spanning nodes".into(),
        };
    };
    let memory = topo.gpu_memory_nodes(gpu);
    let mem_note = if memory.is_empty() {
        String::new()
    } else {
        format!(
            "; its memory is CPU-less node{} {}",
            if memory.len() == 1 { "" } else { "s" },
            node_list(&memory)
        )
    };
    match (gpu.numa_node, r.numa_node) {
        (Some(g), Some(h)) if g == h => {
            format!("GPU {} is attached to node {g}{mem_note}", gpu.index)
        }
        (Some(g), Some(h)) => format!(
            "GPU {} is attached to node {g}, which had no CPUs left; node {h} is nearest",
            gpu.index
        ),
        (None, Some(h)) => format!(
            "GPU {} has no NUMA locality; policy {} placed it on node {h}",
            gpu.index,
            plan.policy.name()
        ),
        (_, None) => format!("GPU {}: no home node", gpu.index),
    }
}

fn closeness(c: Closeness) -> &'static str {
    match c {
        Closeness::SameSwitch => "same PCIe switch",
        Closeness::SameHostBridge => "same host bridge",
        Closeness::SameNode => "same NUMA node",
        Closeness::SamePackage => "same package",
        Closeness::Any => "other package",
    }
}

/// `0000:07:00.0` as `07:00.0` (the domain is almost always 0).
fn short_pci(s: &str) -> &str {
    s.strip_prefix("0000:").unwrap_or(s)
}

/// A group's heading: `group `trainer`: ranks 0-15 (2 nodes x 8), on nvidia-dgx-h100`.
pub fn heading(plan: &Plan) -> Option<String> {
    let g = plan.group()?;
    let span = plan.place.span(plan.ranks_in_all());
    Some(format!(
        "group `{}`: {span} of {} ({} node(s) x {}), on {}",
        g.name,
        plan.world_size(),
        plan.nodes,
        plan.ranks_per_node,
        plan.topology
    ))
}

/// `explain --format json` of a plan of several groups: each group's report with its name and
/// first global rank.
#[derive(Serialize, JsonSchema)]
pub struct GroupedExplain {
    pub numaplan_explain: u32,
    pub groups: Vec<GroupExplain>,
}

#[derive(Serialize, JsonSchema)]
pub struct GroupExplain {
    pub group: String,
    pub first_rank: u64,
    pub explain: Report,
}

/// What `explain` drew of one group's plan: a report (`--format json`), or text in any other
/// format.
pub enum Drawn {
    Report(Report),
    Text(String),
}

/// How a job's parts are put together.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Each group's part under its heading.
    Headings,
    /// Each group's part under its heading as a comment (`# `): mpibind's own lines.
    CommentedHeadings,
    /// One group's part alone (an SVG picture, which shows one group).
    One,
}

/// A job's explanation: a job of one group's part as it is; a job of several groups' parts,
/// each under its heading (`--format json`: one document, each group's report with its name and
/// first global rank).
pub fn job(parts: Vec<(Plan, Drawn)>, layout: Layout) -> String {
    let grouped = parts.iter().any(|(plan, _)| plan.group().is_some());
    if !grouped || layout == Layout::One {
        return match parts.into_iter().next() {
            Some((_, Drawn::Report(r))) => pretty(&r),
            Some((_, Drawn::Text(t))) => t,
            None => String::new(),
        };
    }
    let mark = match layout {
        Layout::CommentedHeadings => "# ",
        _ => "",
    };
    let mut reports = Vec::new();
    let mut texts = Vec::new();
    for (plan, drawn) in parts {
        match drawn {
            Drawn::Report(explain) => reports.push(GroupExplain {
                group: plan.group().map(|g| g.name.clone()).unwrap_or_default(),
                first_rank: plan.place.first_rank,
                explain,
            }),
            Drawn::Text(text) => {
                let heading = heading(&plan).unwrap_or_default();
                texts.push(format!("{mark}{heading}\n{text}"));
            }
        }
    }
    match reports.is_empty() {
        true => texts.join("\n"),
        false => pretty(&GroupedExplain {
            numaplan_explain: 1,
            groups: reports,
        }),
    }
}

/// A report as `--format json` writes it.
fn pretty(report: &impl Serialize) -> String {
    serde_json::to_string_pretty(report).expect("invariant: reports serialize") + "\n"
}
