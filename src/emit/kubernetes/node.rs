//! What a group's pod and node are, from its plan and its machine: the plan's CPUs on one node
//! and on each NUMA node, the CPUs it leaves to the system, and its GPUs and NICs with the
//! attributes DRA drivers publish for them (`pciBusID`, `pcieRoot`, `numaNode`). The plan
//! carries each device's PCI address; the machine (the group's topology) its NUMA node and the
//! host bridge it hangs under.

use crate::cpuset::CpuSet;
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;
use crate::plan::Plan;
use crate::spec::MemPolicy;
use crate::topology::Topology;
use crate::topology::devices::Vendor;

/// A device the pod is given: a GPU or a NIC of the plan.
#[derive(Clone, Debug)]
pub struct Device {
    /// Its request's name in the claim (`gpu-3`, `nic-0`).
    pub request: String,
    /// How a reader knows it (`GPU 3`, `mlx5_0`).
    pub label: String,
    pub pci: PciAddr,
    /// Its NUMA node, as sysfs gives it and the drivers publish it, where the machine knows it.
    pub numa_node: Option<NodeId>,
    /// `pci<domain>:<bus>`, the root of its PCI path, where the machine records its host
    /// bridge (an hwloc export or live discovery; a fixture names bridges opaquely).
    pub pcie_root: Option<String>,
}

/// One node of a group, as its pod and kubelet see it.
pub struct NodeFacts {
    /// The CPUs of the plan's ranks on a node (helpers included): the pod's CPUs.
    pub cpus: CpuSet,
    /// Those CPUs by NUMA node, in node order; nodes without any left out.
    pub cpus_by_node: Vec<(NodeId, CpuSet)>,
    /// The CPUs the plan leaves to the system: those the spec reserves (`cpu.reserve_*`) or
    /// leaves out (`cpu.allowed`).
    pub system_cpus: CpuSet,
    /// The NUMA nodes with CPUs, and every NUMA node's count (memory-only ones included).
    pub cpu_nodes: Vec<NodeId>,
    pub numa_nodes: usize,
    /// The threads of a core (1 without SMT).
    pub smt: usize,
    /// Whether every rank's CPUs are whole cores (all of each core's threads).
    pub whole_cores: bool,
    /// The plan's GPUs (each once, in rank order) and their vendor.
    pub gpus: Vec<Device>,
    pub gpu_vendor: Option<Vendor>,
    /// The plan's NICs with a PCI address (each once, in rank order), and the names of those
    /// without one, which no claim can name.
    pub nics: Vec<Device>,
    pub nics_unnamed: Vec<String>,
    /// Each rank's GPU and NIC requests, for the constraints that keep them together.
    pub pairs: Vec<(u32, Vec<String>)>,
    /// Whether a rank has a memory policy (which needs `SYS_NICE`), and whether it requires it.
    pub memory_policy: bool,
    pub memory_required: bool,
}

impl NodeFacts {
    pub fn of(plan: &Plan, machine: &Topology) -> NodeFacts {
        let cpus: CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
        let cpu_nodes: Vec<NodeId> = machine
            .nodes()
            .iter()
            .filter(|n| !n.kind.is_memory_only())
            .map(|n| n.id)
            .collect();
        let cpus_by_node = cpu_nodes
            .iter()
            .map(|&n| (n, machine.node_cpus(n).intersection(&cpus)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        let whole_cores = machine
            .cores()
            .iter()
            .all(|core| !core.cpus.intersects(&cpus) || core.cpus.is_subset(&cpus));
        let (gpus, nics, nics_unnamed, pairs) = devices(plan, machine);
        NodeFacts {
            system_cpus: plan.reserved.union(&plan.excluded),
            cpus_by_node,
            cpu_nodes,
            numa_nodes: machine.nodes().len(),
            smt: machine.smt_width(),
            whole_cores,
            gpu_vendor: machine.gpus().first().map(|g| g.vendor),
            gpus,
            nics,
            nics_unnamed,
            pairs,
            memory_policy: plan
                .ranks
                .iter()
                .any(|r| r.memory.policy != MemPolicy::None),
            memory_required: plan
                .ranks
                .iter()
                .any(|r| r.memory.policy != MemPolicy::None && r.memory.required),
            cpus,
        }
    }

    /// The NUMA nodes the pod's CPUs and devices are on.
    pub fn nodes_used(&self) -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = self.cpus_by_node.iter().map(|(n, _)| *n).collect();
        nodes.extend(
            self.gpus
                .iter()
                .chain(&self.nics)
                .filter_map(|d| d.numa_node),
        );
        nodes.sort();
        nodes.dedup();
        nodes
    }
}

type Devices = (
    Vec<Device>,
    Vec<Device>,
    Vec<String>,
    Vec<(u32, Vec<String>)>,
);

/// The plan's GPUs and NICs, each once, and each rank's requests.
fn devices(plan: &Plan, machine: &Topology) -> Devices {
    let (mut gpus, mut nics, mut unnamed, mut pairs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rank in &plan.ranks {
        let mut requests = Vec::new();
        for g in &rank.gpus {
            let known = machine.gpus().iter().find(|m| m.pci == g.pci);
            let request = format!("gpu-{}", g.index.0);
            if !gpus.iter().any(|d: &Device| d.pci == g.pci) {
                gpus.push(Device {
                    request: request.clone(),
                    label: format!("GPU {}", g.index.0),
                    pci: g.pci,
                    numa_node: known.and_then(|m| m.numa_node),
                    pcie_root: known.and_then(|m| pcie_root(&m.pci_path)),
                });
            }
            requests.push(request);
        }
        for n in &rank.nics {
            let Some(pci) = n.pci else {
                if !unnamed.contains(&n.name) {
                    unnamed.push(n.name.clone());
                }
                continue;
            };
            let request = match nics.iter().find(|d: &&Device| d.pci == pci) {
                Some(d) => d.request.clone(),
                None => {
                    let known = machine.nics().iter().find(|m| m.pci == Some(pci));
                    let request = format!("nic-{}", nics.len());
                    nics.push(Device {
                        request: request.clone(),
                        label: n.name.clone(),
                        pci,
                        numa_node: known.and_then(|m| m.numa_node),
                        pcie_root: known.and_then(|m| pcie_root(&m.pci_path)),
                    });
                    request
                }
            };
            requests.push(request);
        }
        pairs.push((rank.local_rank, requests));
    }
    (gpus, nics, unnamed, pairs)
}

/// `pci0000:15` from a PCI path whose root is a host bridge as hwloc names it
/// (`host:0000:15`, `topology/hwloc/pci.rs`): the sysfs directory of the root bus, which is
/// what DRA drivers publish as `resource.kubernetes.io/pcieRoot`.
fn pcie_root(path: &[String]) -> Option<String> {
    let host = path.first()?.strip_prefix("host:")?;
    let (domain, bus) = host.split_once(':')?;
    let ok = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (ok(domain, 4) && ok(bus, 2)).then(|| format!("pci{domain}:{bus}"))
}

#[cfg(test)]
mod tests {
    use super::pcie_root;

    #[test]
    fn the_pcie_root_is_the_host_bridges_bus() {
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            pcie_root(&path(&["host:0000:15", "0000:15:01.0"])),
            Some("pci0000:15".into())
        );
        assert_eq!(pcie_root(&path(&["pcie-switch-0", "x"])), None);
        assert_eq!(pcie_root(&path(&["host"])), None);
        assert_eq!(pcie_root(&[]), None);
    }
}
