//! `numaplan topo --matrix`: GPU and NIC affinity as `nvidia-smi topo -m` prints it, from the
//! PCI ancestry and NUMA nodes of the topology (a fixture, an hwloc export or this machine):
//! the view users paste into issues, for any vendor's GPUs.
//!
//! Between two devices (NVML's `nvmlDeviceGetTopologyCommonAncestor` levels):
//! - `PIX`: at most one PCIe switch between them: the same parent bridge, or parents that are
//!   downstream ports of one switch (PCI bridges on the same bus);
//! - `PXB`: several PCIe bridges, below the host bridge;
//! - `PHB`: through a PCIe host bridge (their only common ancestor);
//! - `NODE`: across host bridges within one NUMA node;
//! - `SYS`: across NUMA nodes (the CPU interconnect), or of unknown locality.
//!
//! NVLink is not in numaplan's topologies: GPU pairs show their PCIe path, where nvidia-smi
//! shows `NV#`.

use crate::ids::NodeId;
use crate::pci_addr::PciAddr;

use super::Topology;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Own,
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
}

impl Link {
    pub fn label(self) -> &'static str {
        match self {
            Link::Own => " X ",
            Link::Pix => "PIX",
            Link::Pxb => "PXB",
            Link::Phb => "PHB",
            Link::Node => "NODE",
            Link::Sys => "SYS",
        }
    }
}

/// A GPU or NIC as the matrix sees it.
struct Device<'t> {
    label: String,
    path: &'t [String],
    node: Option<NodeId>,
}

/// How `a` reaches `b` (`a` and `b` distinct devices).
fn link(a: &Device, b: &Device) -> Link {
    let common = a
        .path
        .iter()
        .zip(b.path)
        .take_while(|(x, y)| x == y)
        .count();
    if common == 0 {
        return match (a.node, b.node) {
            (Some(x), Some(y)) if x == y => Link::Node,
            _ => Link::Sys,
        };
    }
    let shared = &a.path[..common];
    if shared.iter().all(|bridge| bridge.starts_with("host")) {
        return Link::Phb;
    }
    let (pa, pb) = (a.path.last(), b.path.last());
    let same_switch = pa == pb
        || (a.path.len() == common + 1
            && b.path.len() == common + 1
            && same_bus(
                pa.expect("longer than common"),
                pb.expect("longer than common"),
            ));
    if same_switch { Link::Pix } else { Link::Pxb }
}

/// Two bridges named by PCI address on one bus: downstream ports of one PCIe switch.
fn same_bus(a: &str, b: &str) -> bool {
    match (a.parse::<PciAddr>(), b.parse::<PciAddr>()) {
        (Ok(x), Ok(y)) => (x.domain, x.bus) == (y.domain, y.bus),
        _ => false,
    }
}

/// The matrix, its affinity columns and legends, tab-separated as nvidia-smi prints them.
pub fn render(t: &Topology) -> String {
    let mut devices: Vec<Device> = t
        .gpus()
        .iter()
        .map(|g| Device {
            label: format!("GPU{}", g.index.0),
            path: &g.pci_path,
            node: g.numa_node,
        })
        .collect();
    let gpus = devices.len();
    devices.extend(t.nics().iter().enumerate().map(|(i, n)| Device {
        label: format!("NIC{i}"),
        path: &n.pci_path,
        node: n.numa_node,
    }));
    let mut out = String::from("\t");
    for d in &devices {
        out.push_str(&format!("{}\t", d.label));
    }
    out.push_str("CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
    for (i, a) in devices.iter().enumerate() {
        out.push_str(&format!("{}\t", a.label));
        for (j, b) in devices.iter().enumerate() {
            let l = if i == j { Link::Own } else { link(a, b) };
            out.push_str(&format!("{}\t", l.label()));
        }
        if i < gpus {
            out.push_str(&affinity(t, &t.gpus()[i]));
        }
        out.push('\n');
    }
    out.push_str(LEGEND);
    if !t.nics().is_empty() {
        out.push_str("\nNIC Legend:\n\n");
        for (i, n) in t.nics().iter().enumerate() {
            out.push_str(&format!("  NIC{i}: {}\n", n.name));
        }
    }
    out
}

/// A GPU's CPU Affinity, NUMA Affinity and GPU NUMA ID columns.
fn affinity(t: &Topology, gpu: &super::model::Gpu) -> String {
    let memory = t.gpu_memory_nodes(gpu);
    let memory = if memory.is_empty() {
        "N/A".to_string()
    } else {
        crate::ids::node_list(&memory)
    };
    match gpu.numa_node {
        Some(n) => format!("{}\t{n}\t\t{memory}", t.node_cpus(n)),
        None => format!("N/A\tN/A\t\t{memory}"),
    }
}

const LEGEND: &str = "
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  (NVLink is not in numaplan's topology: GPU pairs show their PCIe path, where nvidia-smi shows NV#)
";

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(path: &[&str], node: u32) -> (Vec<String>, Option<NodeId>) {
        (
            path.iter().map(|s| s.to_string()).collect(),
            Some(NodeId(node)),
        )
    }

    fn between(a: &(Vec<String>, Option<NodeId>), b: &(Vec<String>, Option<NodeId>)) -> Link {
        let da = Device {
            label: String::new(),
            path: &a.0,
            node: a.1,
        };
        let db = Device {
            label: String::new(),
            path: &b.0,
            node: b.1,
        };
        link(&da, &db)
    }

    #[test]
    fn levels() {
        // A switch: upstream port 32:00.0, downstream ports 33:00.0 and 33:10.0.
        let host = "host:0000:2b";
        let gpu0 = dev(&[host, "0000:2b:00.0", "0000:32:00.0", "0000:33:00.0"], 0);
        let gpu1 = dev(&[host, "0000:2b:00.0", "0000:32:00.0", "0000:33:10.0"], 0);
        let deeper = dev(
            &[
                host,
                "0000:2b:00.0",
                "0000:32:00.0",
                "0000:33:08.0",
                "0000:35:00.0",
            ],
            0,
        );
        let other_port = dev(&[host, "0000:2c:00.0"], 0);
        let other_host = dev(&["host:0000:4e", "0000:4e:00.0"], 0);
        let other_node = dev(&["host:0000:ae", "0000:ae:00.0"], 1);
        assert_eq!(between(&gpu0, &gpu1), Link::Pix);
        assert_eq!(between(&gpu0, &deeper), Link::Pxb);
        assert_eq!(between(&gpu0, &other_port), Link::Phb);
        assert_eq!(between(&gpu0, &other_host), Link::Node);
        assert_eq!(between(&gpu0, &other_node), Link::Sys);
        // A fixture's switch labels: the same label is one switch.
        assert_eq!(between(&dev(&["sw0"], 0), &dev(&["sw0"], 0)), Link::Pix);
        assert_eq!(
            between(&dev(&["sw0", "a"], 0), &dev(&["sw0", "b"], 0)),
            Link::Pxb
        );
        // No path and no node: unknown, as far as it gets.
        assert_eq!(between(&(vec![], None), &dev(&["sw0"], 0)), Link::Sys);
    }
}
