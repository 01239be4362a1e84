//! The readable summary `numaplan topo --format text` prints: per package and node, its CPUs,
//! cores, L3 groups, memory, GPUs and NICs; the kinds of core of a hybrid machine; then the
//! distance matrix.

use std::fmt::Write as _;

use super::model::{NodeKind, NumaNode, Topology};
use crate::cpuset::CpuSet;
use crate::ids::{NodeId, node_list};
use crate::phrase::plural;

pub fn render(t: &Topology) -> String {
    let mut out = String::new();
    render_header(&mut out, t);
    render_cpu_kinds(&mut out, t);
    render_packages(&mut out, t);
    let unplaced: Vec<String> = t
        .gpus()
        .iter()
        .filter(|g| g.numa_node.is_none())
        .map(|g| format!("GPU {} ({})", g.index, g.pci))
        .chain(
            t.nics()
                .iter()
                .filter(|n| n.numa_node.is_none())
                .map(|n| format!("NIC {}", n.name)),
        )
        .collect();
    if !unplaced.is_empty() {
        let _ = writeln!(out, "\nunknown NUMA locality: {}", unplaced.join(", "));
    }
    if t.has_distances() {
        render_distances(&mut out, t);
    }
    out
}

/// The counts line, what this process may use, and the topology's notes.
fn render_header(out: &mut String, t: &Topology) {
    let all = t.all_cpus();
    let _ = writeln!(
        out,
        "{}: {}, {}, {}, {} (SMT {}), {}, {}, {}",
        t.name(),
        plural(t.packages().len(), "package", "packages"),
        plural(t.nodes().len(), "NUMA node", "NUMA nodes"),
        plural(t.cores().len(), "core", "cores"),
        plural(all.len(), "CPU", "CPUs"),
        t.smt_width(),
        plural(t.l3_caches().len(), "L3 group", "L3 groups"),
        plural(t.gpus().len(), "GPU", "GPUs"),
        plural(t.nics().len(), "NIC", "NICs"),
    );
    let cpus = (*t.allowed() != all).then(|| {
        format!(
            "{} ({} of {} CPUs)",
            t.allowed(),
            t.allowed().len(),
            all.len()
        )
    });
    let allowed = t.allowed_memory();
    let memory = (allowed.len() != t.nodes().len()).then(|| {
        format!(
            "{} {} ({} of {} nodes)",
            if allowed.len() == 1 { "node" } else { "nodes" },
            crate::ids::node_list(allowed),
            allowed.len(),
            t.nodes().len()
        )
    });
    match t.container() {
        // Inside a container, its cgroup is what narrows the machine: say what it gives.
        Some(container) => {
            let _ = writeln!(
                out,
                "inside {container}: its cgroup allows {} and the memory of {}",
                cpus.map_or("every CPU".into(), |c| format!("CPUs {c}")),
                memory.unwrap_or_else(|| "every node".into()),
            );
        }
        None => {
            let _ = writeln!(out, "allowed: {}", cpus.as_deref().unwrap_or("all CPUs"));
            if let Some(memory) = memory {
                let _ = writeln!(out, "allowed memory: {memory}");
            }
        }
    }
    for g in t.left_out_gpus() {
        let _ = writeln!(
            out,
            "left out: {} GPU {}: {}",
            g.vendor.name(),
            g.pci,
            g.why
        );
    }
    for note in t.notes() {
        let _ = writeln!(out, "note: {note}");
    }
}

/// A hybrid machine's kinds of core, most power-efficient first.
fn render_cpu_kinds(out: &mut String, t: &Topology) {
    if t.cpu_kinds().is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "CPU kinds ({}, most power-efficient first):",
        t.cpu_kinds().len()
    );
    for kind in t.cpu_kinds() {
        let info: Vec<String> = kind.info.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let info = if info.is_empty() {
            String::new()
        } else {
            format!(" ({})", info.join(", "))
        };
        let _ = writeln!(out, "  {}: CPUs {}{info}", kind.label(), kind.cpus);
    }
}

/// Per package (a node that spans packages under all of them; then the nodes outside any), its
/// nodes with CPUs, then its memory-only nodes.
fn render_packages(out: &mut String, t: &Topology) {
    for (packages, nodes) in t.nodes_by_packages() {
        let _ = match packages.as_slice() {
            [] => writeln!(out, "\noutside any package"),
            [p] => writeln!(out, "\npackage {p}"),
            many => writeln!(
                out,
                "\npackages {} (one NUMA node spans them)",
                crate::ids::package_names(many)
            ),
        };
        for node in nodes.iter().filter(|n| !n.kind.is_memory_only()) {
            render_cpu_node(out, t, node);
        }
        render_memory_nodes(out, t, &nodes);
    }
}

/// Memory-only nodes, one line per run of nodes that read the same (GH200 has 8 per GPU).
fn render_memory_nodes(out: &mut String, t: &Topology, nodes: &[&NumaNode]) {
    let mut lines: Vec<(Vec<NodeId>, String)> = Vec::new();
    for node in nodes.iter().filter(|n| n.kind.is_memory_only()) {
        let owner = match node.kind {
            NodeKind::GpuMemory { gpu: Some(pci) } => {
                match t.gpus().iter().find(|g| g.pci == pci) {
                    Some(g) => format!(" of GPU {} ({pci})", g.index),
                    None => format!(" of GPU {pci}"),
                }
            }
            _ => String::new(),
        };
        let memory = node
            .memory_mib
            .map(|m| format!(", {}", crate::phrase::mib(m)))
            .unwrap_or_default();
        let text = format!("{}{owner}, no CPUs{memory}", node.kind.name());
        match lines.last_mut() {
            Some((ids, last)) if *last == text => ids.push(node.id),
            _ => lines.push((vec![node.id], text)),
        }
    }
    for (ids, text) in lines {
        let label = if ids.len() == 1 { "node" } else { "nodes" };
        let _ = writeln!(out, "  {label} {}: {text}", node_list(&ids));
    }
}

fn render_cpu_node(out: &mut String, t: &Topology, node: &NumaNode) {
    let memory = node.memory_mib.map(crate::phrase::mib);
    let cpus = t.node_cpus(node.id);
    let cores = t.cores().iter().filter(|c| c.node == node.id).count();
    let allowed = cpus.intersection(t.allowed());
    let allowed_note = if allowed == cpus {
        String::new()
    } else {
        format!(
            " ({} of {} allowed: {})",
            allowed.len(),
            cpus.len(),
            crate::phrase::list_or_none(&allowed)
        )
    };
    let _ = writeln!(
        out,
        "  node {}: {}, CPUs {cpus}{allowed_note}{}",
        node.id,
        plural(cores, "core", "cores"),
        memory.map(|m| format!(", {m}")).unwrap_or_default()
    );
    let groups: Vec<CpuSet> = t
        .l3_caches()
        .into_iter()
        .map(|l3| {
            t.cores()
                .iter()
                .filter(|c| c.node == node.id && c.l3 == l3)
                .map(|c| &c.cpus)
                .collect::<CpuSet>()
        })
        .filter(|s| !s.is_empty())
        .collect();
    let listed: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    let _ = writeln!(
        out,
        "    L3 groups ({}): {}",
        groups.len(),
        listed.join(" | ")
    );
    for g in t.gpus().iter().filter(|g| g.numa_node == Some(node.id)) {
        let memory_nodes = t.gpu_memory_nodes(g);
        let mem = if memory_nodes.is_empty() {
            String::new()
        } else {
            let label = if memory_nodes.len() == 1 {
                "node"
            } else {
                "nodes"
            };
            format!(", memory {label} {}", node_list(&memory_nodes))
        };
        let _ = writeln!(
            out,
            "    GPU {}: {} {} ({}){mem}",
            g.index,
            g.vendor.name(),
            g.model.as_deref().unwrap_or("GPU"),
            g.pci
        );
    }
    for n in t.nics().iter().filter(|n| n.numa_node == Some(node.id)) {
        let pci = n.pci.map(|p| format!(", {p}")).unwrap_or_default();
        let _ = writeln!(out, "    NIC {}: {}{pci}", n.name, n.kind.name());
    }
}

/// Past this many nodes the matrix is shown over CPU nodes only, with memory-only nodes folded
/// into one row per run of identical distances (a 4-way GH200 has 36 nodes).
const FULL_MATRIX_MAX_NODES: usize = 16;

fn render_distances(out: &mut String, t: &Topology) {
    let with_row = t.nodes_with_distances();
    let full = with_row.len() <= FULL_MATRIX_MAX_NODES;
    let is_cpu = |id: &NodeId| t.node(*id).is_some_and(|n| !n.kind.is_memory_only());
    let columns: Vec<NodeId> = with_row
        .iter()
        .copied()
        .filter(|id| full || is_cpu(id))
        .collect();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let row_of = |a: NodeId| -> Vec<String> {
        columns
            .iter()
            .map(|b| t.distance(a, *b).map_or("-".to_string(), |d| d.to_string()))
            .collect()
    };
    for a in with_row.iter().filter(|id| full || is_cpu(id)) {
        rows.push((a.to_string(), row_of(*a)));
    }
    let mut folded: Vec<(Vec<NodeId>, Vec<String>)> = Vec::new();
    if !full {
        for a in with_row.iter().filter(|id| !is_cpu(id)) {
            let row = row_of(*a);
            match folded.last_mut() {
                Some((ids, r)) if *r == row => ids.push(*a),
                _ => folded.push((vec![*a], row)),
            }
        }
        rows.extend(folded.into_iter().map(|(ids, row)| (node_list(&ids), row)));
    }
    let label_width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(1);
    let width = columns
        .iter()
        .map(|c| c.to_string().len())
        .chain(rows.iter().flat_map(|(_, r)| r.iter().map(|v| v.len())))
        .max()
        .unwrap_or(1);
    if full {
        let _ = writeln!(out, "\ndistances:");
    } else {
        let _ = writeln!(
            out,
            "\ndistances (to CPU nodes; memory-only nodes folded by identical rows):"
        );
    }
    let mut header = format!("  {:>label_width$}", "");
    for id in &columns {
        let _ = write!(header, " {:>width$}", id.to_string());
    }
    let _ = writeln!(out, "{header}");
    for (label, row) in rows {
        let mut line = format!("  {label:>label_width$}");
        for v in row {
            let _ = write!(line, " {v:>width$}");
        }
        let _ = writeln!(out, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use crate::topology::fixture;

    /// A node whose CPUs are all outside the allowed set says `none`, not an empty list; counts
    /// agree with their noun.
    #[test]
    fn empty_lists_say_none_and_counts_agree() {
        let t = fixture::load(
            "t.yaml",
            "numaplan_topology: 1\nname: t\nallowed: '0'\nallowed_memory_nodes: '0'\nnodes:\n- id: 0\n  l3_groups:\n  - id: 0\n    threads: ['0']\n- id: 1\n  l3_groups:\n  - id: 1\n    threads: [2-3]\n",
        )
        .unwrap();
        let text = super::render(&t);
        assert!(text.contains("  node 0: 1 core, CPUs 0\n"), "{text}");
        assert!(
            text.contains("  node 1: 2 cores, CPUs 2-3 (0 of 2 allowed: none)\n"),
            "{text}"
        );
        assert!(
            text.contains("allowed memory: node 0 (1 of 2 nodes)\n"),
            "{text}"
        );
    }
}
