//! A machine model written as an hwloc 2.x XML export, the way hwloc lays one out: packages,
//! one group per NUMA node holding the node (and the memory-only nodes tied to it) beside its
//! L3 caches, cores and PUs (no group where the package has one node); CPU-less nodes of no
//! known technology above them; GPUs behind a host bridge under their node's group (under the
//! machine when their locality is unknown); the distance matrix. Tests feed the text to the
//! real `lstopo --input`, so that what numaplan imports is hwloc's own export of the machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use numaplan::cpuset::CpuSet;
use numaplan::ids::NodeId;
use numaplan::topology::model::{Core, NodeKind, Topology, Vendor};

/// An hwloc bitmap: 32-bit words, most significant first (`0x00000100,0x00000001`).
pub fn bitmap(set: &CpuSet) -> String {
    let Some(last) = set.iter().last() else {
        return "0x0".into();
    };
    let words: Vec<String> = (0..=last / 32)
        .rev()
        .map(|w| {
            let bits = (0..32)
                .filter(|b| set.contains(w * 32 + b))
                .fold(0u32, |acc, b| acc | 1 << b);
            format!("0x{bits:08x}")
        })
        .collect();
    words.join(",")
}

struct Writer<'t> {
    t: &'t Topology,
    out: String,
    gp: u32,
}

impl Writer<'_> {
    fn sets(&self, cpus: &CpuSet, nodes: &CpuSet) -> String {
        format!(
            r#"cpuset="{c}" complete_cpuset="{c}" nodeset="{n}" complete_nodeset="{n}""#,
            c = bitmap(cpus),
            n = bitmap(nodes)
        )
    }

    fn next_gp(&mut self) -> u32 {
        self.gp += 1;
        self.gp
    }

    /// Writes `<object type=... sets attrs>` (and `/>` when `leaf`).
    fn open(&mut self, kind: &str, sets: &str, attrs: &str, leaf: bool) {
        let gp = self.next_gp();
        let _ = write!(
            self.out,
            r#"<object type="{kind}" {sets} gp_index="{gp}"{attrs}{}"#,
            if leaf { "/>\n" } else { ">\n" }
        );
    }

    fn close(&mut self) {
        self.out.push_str("</object>\n");
    }

    /// The nodes tied to a CPU node: itself, then the memory-only nodes of a known technology
    /// whose nearest CPU node it is (hwloc attaches them beside it, and tells them apart by
    /// their subtype).
    fn node_family(&self, node: NodeId) -> Vec<NodeId> {
        let mut family = vec![node];
        family.extend(
            self.memory_only_near(node)
                .filter(|n| self.t.node(*n).is_some_and(|n| n.kind != NodeKind::Memory)),
        );
        // hwloc keeps an object's memory children in node id order.
        family.sort();
        family
    }

    /// Memory-only nodes whose nearest CPU node is `node`.
    fn memory_only_near(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.t
            .nodes()
            .iter()
            .filter(|n| n.kind.is_memory_only())
            .filter(move |n| self.t.cpu_node_of_memory(n.id) == Some(node))
            .map(|n| n.id)
    }

    fn numa_node(&mut self, id: NodeId, cpus: &CpuSet) {
        let n = self.t.node(id).expect("a node of the machine");
        let nodes: CpuSet = std::iter::once(id.0).collect();
        let sets = self.sets(cpus, &nodes);
        let mut attrs = format!(r#" os_index="{}""#, id.0);
        let subtype = match &n.kind {
            NodeKind::Cpu | NodeKind::Memory => None,
            NodeKind::Hbm => Some("HBM"),
            NodeKind::GpuMemory { .. } => Some("GPUMemory"),
            NodeKind::Cxl => Some("CXL-DRAM"),
            NodeKind::Nvm => Some("NVM"),
            NodeKind::Spm => Some("SPM"),
        };
        if let Some(s) = subtype {
            let _ = write!(attrs, r#" subtype="{s}""#);
        }
        if let Some(mib) = n.memory_mib {
            let _ = write!(attrs, r#" local_memory="{}""#, mib << 20);
        }
        let gpu = match &n.kind {
            NodeKind::GpuMemory { gpu: Some(pci) } => Some(pci.to_string()),
            _ => None,
        };
        // os_index first, as hwloc writes it.
        let gp = self.next_gp();
        let _ = write!(
            self.out,
            r#"<object type="NUMANode"{attrs} {sets} gp_index="{gp}""#
        );
        match gpu {
            Some(pci) => {
                let _ = write!(
                    self.out,
                    ">\n<info name=\"PCIBusID\" value=\"{pci}\"/>\n</object>\n"
                );
            }
            None => self.out.push_str("/>\n"),
        }
    }

    fn cores(&mut self, cores: &[&Core], nodes: &CpuSet) {
        let mut by_l3: BTreeMap<u32, Vec<&Core>> = BTreeMap::new();
        for c in cores {
            by_l3.entry(c.l3.0).or_default().push(c);
        }
        let mut groups: Vec<Vec<&Core>> = by_l3.into_values().collect();
        groups.sort_by_key(|g| g.iter().map(|c| c.key()).min());
        for mut group in groups {
            group.sort_by_key(|c| c.key());
            let cpus: CpuSet = group.iter().map(|c| &c.cpus).collect();
            let sets = self.sets(&cpus, nodes);
            self.open(
                "L3Cache",
                &sets,
                r#" cache_size="33554432" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0""#,
                false,
            );
            for core in group {
                let sets = self.sets(&core.cpus, nodes);
                self.open(
                    "Core",
                    &sets,
                    &format!(r#" os_index="{}""#, core.key()),
                    false,
                );
                for cpu in core.cpus.iter() {
                    let one: CpuSet = std::iter::once(cpu).collect();
                    let sets = self.sets(&one, nodes);
                    self.open("PU", &sets, &format!(r#" os_index="{cpu}""#), true);
                }
                self.close();
            }
            self.close();
        }
    }

    /// The GPUs whose locality is `node` (`None`: unknown), each behind its own host bridge.
    fn gpus(&mut self, node: Option<NodeId>) {
        let gpus: Vec<_> = self
            .t
            .gpus()
            .iter()
            .filter(|g| g.numa_node == node)
            .collect();
        for g in gpus {
            let (vendor, class) = match g.vendor {
                Vendor::Nvidia => ("10de", "0302"),
                Vendor::Amd => ("1002", "1200"),
                Vendor::Intel => ("8086", "1200"),
            };
            let pci = g.pci;
            let gp = self.next_gp();
            let _ = writeln!(
                self.out,
                r#"<object type="Bridge" gp_index="{gp}" bridge_type="0-1" depth="0" bridge_pci="{:04x}:[{:02x}-{:02x}]">"#,
                pci.domain, pci.bus, pci.bus
            );
            let gp = self.next_gp();
            let _ = writeln!(
                self.out,
                r#"<object type="PCIDev" gp_index="{gp}" pci_busid="{pci}" pci_type="{class} [{vendor}:20b0] [{vendor}:134f] a1 00"/>"#,
            );
            self.close();
        }
    }

    fn distances(&mut self) {
        let ids = self.t.nodes_with_distances();
        if ids.is_empty() {
            return;
        }
        let indexes: String = ids.iter().map(|i| format!("{i} ")).collect();
        let _ = writeln!(
            self.out,
            r#"<distances2 type="NUMANode" nbobjs="{}" kind="5" name="NUMALatency" indexing="os">"#,
            ids.len()
        );
        let _ = writeln!(
            self.out,
            r#"<indexes length="{}">{indexes}</indexes>"#,
            indexes.len()
        );
        let values: Vec<u32> = ids
            .iter()
            .flat_map(|a| ids.iter().map(move |b| (*a, *b)))
            .map(|(a, b)| self.t.distance(a, b).unwrap_or(0))
            .collect();
        for chunk in values.chunks(10) {
            let line: String = chunk.iter().map(|v| format!("{v} ")).collect();
            let _ = writeln!(
                self.out,
                r#"<u64values length="{}">{line}</u64values>"#,
                line.len()
            );
        }
        self.out.push_str("</distances2>\n");
    }
}

/// The hwloc 2.x XML export of `t`.
pub fn hwloc_xml(t: &Topology) -> String {
    let mut w = Writer {
        t,
        out: String::new(),
        gp: 0,
    };
    let all_nodes: CpuSet = t.nodes().iter().map(|n| n.id.0).collect();
    let all = t.all_cpus();
    w.out.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n",
    );
    let _ = writeln!(
        w.out,
        r#"<object type="Machine" os_index="0" {} allowed_cpuset="{}" allowed_nodeset="{}" gp_index="1">"#,
        w.sets(&all, &all_nodes),
        bitmap(t.allowed()),
        bitmap(&t.allowed_memory().iter().map(|n| n.0).collect()),
    );
    w.gp = 1;
    let mut packages = t.packages();
    packages.sort_by_key(|p| {
        t.cores()
            .iter()
            .filter(|c| c.package == *p)
            .map(|c| c.key())
            .min()
    });
    for p in packages {
        let cores: Vec<&Core> = t.cores().iter().filter(|c| c.package == p).collect();
        let cpus: CpuSet = cores.iter().map(|c| &c.cpus).collect();
        let mut cpu_nodes: Vec<NodeId> = t
            .nodes()
            .iter()
            .filter(|n| !n.kind.is_memory_only() && t.node_package(n.id) == Some(p))
            .map(|n| n.id)
            .collect();
        cpu_nodes.sort_by_key(|n| t.node_cpus(*n).first());
        let nodes: CpuSet = cpu_nodes
            .iter()
            .flat_map(|n| w.node_family(*n))
            .map(|n| n.0)
            .collect();
        // CPU-less nodes of no known technology hang above the package's own nodes, as hwloc
        // attaches a node whose locality is wider than any of them.
        let mut wide: Vec<NodeId> = cpu_nodes
            .iter()
            .flat_map(|n| w.memory_only_near(*n).collect::<Vec<_>>())
            .filter(|n| t.node(*n).is_some_and(|n| n.kind == NodeKind::Memory))
            .collect();
        wide.sort();
        let nodes: CpuSet = nodes.union(&wide.iter().map(|n| n.0).collect());
        let sets = w.sets(&cpus, &nodes);
        w.open("Package", &sets, &format!(r#" os_index="{}""#, p.0), false);
        if let [node] = cpu_nodes[..] {
            // One node in the package: hwloc attaches it to the package itself (a group of the
            // package's own CPUs would merge into it), memory children in id order.
            let mut members = w.node_family(node);
            members.extend(&wide);
            members.sort();
            for member in members {
                w.numa_node(member, &cpus);
            }
            w.cores(&cores, &nodes);
            w.gpus(Some(node));
            w.close();
            continue;
        }
        for node in wide {
            w.numa_node(node, &cpus);
        }
        for node in cpu_nodes {
            let family = w.node_family(node);
            let node_set: CpuSet = family.iter().map(|n| n.0).collect();
            let node_cpus = t.node_cpus(node);
            let sets = w.sets(&node_cpus, &node_set);
            w.open("Group", &sets, r#" kind="1001" subkind="0""#, false);
            for member in &family {
                w.numa_node(*member, &node_cpus);
            }
            let node_cores: Vec<&Core> = cores.iter().copied().filter(|c| c.node == node).collect();
            w.cores(&node_cores, &node_set);
            w.gpus(Some(node));
            w.close();
        }
        w.close();
    }
    w.gpus(None);
    w.close();
    w.distances();
    w.out.push_str("</topology>\n");
    w.out
}
