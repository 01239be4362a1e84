//! `numaplan explain`: what a plan is and why, for a human: a table per rank, the warnings, the
//! quality figures and the picture of the machine.

use super::picture::{self, Colour};
use super::quality;
use super::{cores_of, id_list, l3_of};
use crate::ids::node_list;
use crate::plan::{Plan, RankBinding};
use crate::resolve::nics::{self, Closeness};
use crate::spec::ProcBind;
use crate::topology::Topology;

pub fn render_text(plan: &Plan, topo: &Topology, notes: &[String], colour: Colour) -> String {
    let mut out = format!(
        "{}: {} rank{} per node on {}, {} node{}, policy {}\n",
        plan.name.as_deref().unwrap_or("plan"),
        plan.ranks_per_node,
        if plan.ranks_per_node == 1 { "" } else { "s" },
        plan.topology,
        plan.nodes,
        if plan.nodes == 1 { "" } else { "s" },
        plan.policy.name()
    );
    for n in notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push('\n');
    let header = [
        "rank", "GPU", "home", "CPUs", "cores", "L3", "NIC", "memory", "why",
    ];
    let rows: Vec<[String; 9]> = plan.ranks.iter().map(|r| row(plan, topo, r)).collect();
    out.push_str(&table(&header, &rows));
    if !plan.warnings.is_empty() {
        out.push_str("\nwarnings:\n");
        for w in &plan.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out.push_str(&inside_table(plan));
    let picture = picture::build(plan, topo);
    out.push_str(&format!(
        "\nquality: {}\n\n{}\n",
        quality::measure(plan, topo).line(),
        picture::legend(&picture)
    ));
    out.push_str(&picture::render_text(&picture, colour));
    out
}

/// What runs inside each rank, when the plan says (`cpu.helpers`, `openmp:`): its compute and
/// helper CPUs and its OpenMP threads.
fn inside_table(plan: &Plan) -> String {
    if plan
        .ranks
        .iter()
        .all(|r| r.helpers.is_empty() && r.openmp.is_none())
    {
        return String::new();
    }
    let rows: Vec<[String; 4]> = plan
        .ranks
        .iter()
        .map(|r| {
            let openmp = match &r.openmp {
                None => "-".to_string(),
                Some(o) if o.bind == ProcBind::None => format!("{} threads, not bound", o.threads),
                Some(o) if o.places.is_empty() => {
                    format!(
                        "{} threads, {} on the runtime's places",
                        o.threads,
                        o.bind.name()
                    )
                }
                Some(o) => format!(
                    "{} threads, {} over {} places",
                    o.threads,
                    o.bind.name(),
                    o.places.len()
                ),
            };
            let helpers = if r.helpers.is_empty() {
                "-".to_string()
            } else {
                r.helpers.to_string()
            };
            [
                r.local_rank.to_string(),
                r.compute().to_string(),
                helpers,
                openmp,
            ]
        })
        .collect();
    let header = ["rank", "compute CPUs", "helper CPUs", "OpenMP"];
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

fn row(plan: &Plan, topo: &Topology, r: &RankBinding) -> [String; 9] {
    let lead = r
        .gpus
        .first()
        .and_then(|p| topo.gpus().iter().find(|g| g.index == p.index));
    let gpus = if r.gpus.is_empty() {
        "-".to_string()
    } else {
        r.gpus
            .iter()
            .map(|g| format!("{} ({})", g.index, short_pci(&g.pci.to_string())))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cores = cores_of(topo, &r.cpus);
    let nic = match r.nics.first() {
        None => "-".to_string(),
        Some(name) => match topo.nics().iter().find(|n| &n.name == name) {
            Some(n) => {
                let anchor = nics::Anchor {
                    gpu: lead,
                    node: r.numa_node,
                    package: r.numa_node.and_then(|h| topo.node_package(h)),
                };
                format!("{name} ({})", closeness(nics::closeness(n, &anchor)))
            }
            None => format!("{name} (not in topology)"),
        },
    };
    [
        r.local_rank.to_string(),
        gpus,
        r.numa_node.map_or("-".into(), |n| n.to_string()),
        r.cpus.to_string(),
        r.cores.to_string(),
        id_list(l3_of(topo, &cores).into_iter().map(|l| l.0)),
        nic,
        super::diff::memory(&r.memory),
        why(plan, topo, r, lead),
    ]
}

/// Why the rank's home node is the one it is.
fn why(
    plan: &Plan,
    topo: &Topology,
    r: &RankBinding,
    lead: Option<&crate::topology::model::Gpu>,
) -> String {
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
