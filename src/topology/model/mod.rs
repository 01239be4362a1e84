//! The machine model every later stage reads: NUMA nodes (CPU and memory-only), cores grouped by
//! package, node and L3 group, the kinds of core on a hybrid machine, the distance matrix, the
//! allowed CPU set, GPUs and NICs.
//!
//! A `Topology` is only built through [`Topology::build`], which sorts everything into one
//! canonical order and checks the invariants listed there, so two sources describing the same
//! machine in a different order give equal values.

mod build;
mod error;
mod levels;

use std::collections::{BTreeMap, BTreeSet};

pub use super::cpu_kinds::CpuKind;
pub use super::devices::{Gpu, LeftOutGpu, Nic, NicKind, Vendor};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId, PackageId};
use crate::pci_addr::PciAddr;
use std::borrow::Cow;

use crate::topology::tree::{CpuTree, HwlocTree};
pub(in crate::topology) use error::model_error;
pub use error::{ModelError, Subject};

/// A whole machine (one node of a cluster).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    name: String,
    provenance: String,
    /// What the source found worth telling (NVML disagreeing with hwloc, no NVML), carried into
    /// every plan's warnings.
    notes: Vec<String>,
    /// The container runtime discovery ran under ("a podman container"), if any: what the
    /// allowed sets below then come from. Not part of the fingerprint.
    container: Option<String>,
    nodes: Vec<NumaNode>,
    cores: Vec<Core>,
    /// Empty unless the machine has cores of more than one kind.
    cpu_kinds: Vec<CpuKind>,
    distances: BTreeMap<(NodeId, NodeId), u32>,
    allowed: CpuSet,
    /// The NUMA nodes whose memory the process may use (the cpuset's mems); every node if all.
    allowed_memory: Vec<NodeId>,
    gpus: Vec<Gpu>,
    /// GPUs on the PCI bus this process cannot use (a container's), by PCI address.
    left_out_gpus: Vec<LeftOutGpu>,
    nics: Vec<Nic>,
    /// hwloc's object tree, from an hwloc source that was asked for it.
    tree: HwlocTree,
    /// Derived: the CPUs of each node (empty for memory-only nodes).
    node_cpus: BTreeMap<NodeId, CpuSet>,
    /// Derived: each CPU's core, as an index into `cores`.
    core_of_cpu: BTreeMap<u32, usize>,
}

/// A NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaNode {
    pub id: NodeId,
    /// The package it belongs to; `None` where the source puts it directly under the machine.
    pub package: Option<PackageId>,
    pub kind: NodeKind,
    pub memory_mib: Option<u64>,
}

/// What a NUMA node is. Every kind but `Cpu` is memory-only: it owns no CPUs, even though hwloc
/// reports its parent's cpuset for it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    /// Ordinary DRAM with CPUs attached.
    Cpu,
    /// CPU-less high-bandwidth memory (Xeon Max flat mode, KNL MCDRAM).
    Hbm,
    /// A GPU's memory exposed as a NUMA node (POWER9 + V100, Grace Hopper/Blackwell); names the
    /// GPU's PCI address where known.
    GpuMemory { gpu: Option<PciAddr> },
    /// CXL-attached memory.
    Cxl,
    /// Non-volatile memory.
    Nvm,
    /// Specific-purpose memory.
    Spm,
    /// A CPU-less node of unknown technology.
    Memory,
}

impl NodeKind {
    pub fn is_memory_only(&self) -> bool {
        *self != NodeKind::Cpu
    }

    /// The name used in fixtures and output.
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Cpu => "cpu",
            NodeKind::Hbm => "hbm",
            NodeKind::GpuMemory { .. } => "gpu-memory",
            NodeKind::Cxl => "cxl",
            NodeKind::Nvm => "nvm",
            NodeKind::Spm => "spm",
            NodeKind::Memory => "memory",
        }
    }
}

/// A physical core: the set of its SMT siblings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    pub cpus: CpuSet,
    pub package: PackageId,
    pub node: NodeId,
    pub l3: L3Id,
}

impl Core {
    /// A core's key: its lowest sibling.
    pub fn key(&self) -> u32 {
        self.cpus
            .first()
            .expect("invariant: Topology::build rejects empty cores")
    }
}

/// Everything a source knows, in any order; [`Topology::build`] checks and sorts it.
#[derive(Clone, Debug, Default)]
pub struct TopologyParts {
    pub name: String,
    pub provenance: String,
    pub notes: Vec<String>,
    pub container: Option<String>,
    pub nodes: Vec<NumaNode>,
    pub cores: Vec<Core>,
    /// Only for hybrid machines; empty = one kind of core.
    pub cpu_kinds: Vec<CpuKind>,
    /// `(from, to, distance)`; a full matrix over some or all nodes.
    pub distances: Vec<(NodeId, NodeId, u32)>,
    /// `None` = every CPU.
    pub allowed: Option<CpuSet>,
    /// `None` = every node's memory.
    pub allowed_memory: Option<Vec<NodeId>>,
    pub gpus: Vec<Gpu>,
    pub left_out_gpus: Vec<LeftOutGpu>,
    pub nics: Vec<Nic>,
    /// hwloc's object tree, where the source is hwloc (`policy: mpibind` reads it).
    pub tree: HwlocTree,
}

impl Topology {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where the data came from (free text).
    pub fn provenance(&self) -> &str {
        &self.provenance
    }

    /// Facts of the source's worth telling in every plan (see `notes` above).
    /// Adds a fact the source found (notes are not part of the fingerprint).
    pub fn add_note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// GPUs on the PCI bus that this process cannot use, by PCI address.
    pub fn left_out_gpus(&self) -> &[LeftOutGpu] {
        &self.left_out_gpus
    }

    pub fn container(&self) -> Option<&str> {
        self.container.as_deref()
    }

    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The machine's object tree (`policy: mpibind`): hwloc's where the source is hwloc,
    /// borrowed; else one made of the model's own levels. `None` where an hwloc source was
    /// loaded without it (`Reading::Model`).
    pub fn cpu_tree(&self) -> Option<Cow<'_, CpuTree>> {
        match &self.tree {
            HwlocTree::Read(tree) => Some(Cow::Borrowed(tree)),
            HwlocTree::NotHwloc => Some(Cow::Owned(levels::tree_of_model(
                &self.nodes,
                &self.cores,
                &self.gpus,
            ))),
            HwlocTree::NotRead => None,
        }
    }

    /// hwloc's object tree, as the source gave it.
    pub fn hwloc_tree(&self) -> &HwlocTree {
        &self.tree
    }

    /// Sets hwloc's object tree (an XML import's, sent back by its child).
    pub fn set_hwloc_tree(&mut self, tree: HwlocTree) {
        self.tree = tree;
    }

    pub fn nodes(&self) -> &[NumaNode] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> Option<&NumaNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Cores in topology order.
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }

    /// The indices (into `cores()`, ascending: topology order) of the cores `cpus` touches,
    /// found through the CPUs rather than by testing every core.
    pub fn cores_touching(&self, cpus: &CpuSet) -> Vec<usize> {
        let mut found: Vec<usize> = cpus
            .iter()
            .filter_map(|cpu| self.core_of_cpu.get(&cpu).copied())
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The kinds of core, most power-efficient first; empty on a machine with one kind.
    pub fn cpu_kinds(&self) -> &[CpuKind] {
        &self.cpu_kinds
    }

    pub fn gpus(&self) -> &[Gpu] {
        &self.gpus
    }

    pub fn nics(&self) -> &[Nic] {
        &self.nics
    }

    /// The CPUs the plan may use.
    pub fn allowed(&self) -> &CpuSet {
        &self.allowed
    }

    /// The NUMA nodes whose memory plans may bind to, in id order.
    pub fn allowed_memory(&self) -> &[NodeId] {
        &self.allowed_memory
    }

    /// Every CPU of the machine.
    pub fn all_cpus(&self) -> CpuSet {
        self.node_cpus.values().collect()
    }

    /// All CPUs of a node (empty for a memory-only or unknown node).
    pub fn node_cpus(&self, id: NodeId) -> CpuSet {
        self.node_cpus.get(&id).cloned().unwrap_or_default()
    }

    /// Packages in ascending order.
    pub fn packages(&self) -> Vec<PackageId> {
        let set: BTreeSet<PackageId> = self
            .cores
            .iter()
            .map(|c| c.package)
            .chain(self.nodes.iter().filter_map(|n| n.package))
            .collect();
        set.into_iter().collect()
    }

    /// The package of a node: its own, or that of its cores.
    pub fn node_package(&self, id: NodeId) -> Option<PackageId> {
        self.node(id)
            .and_then(|n| n.package)
            .or_else(|| self.cores.iter().find(|c| c.node == id).map(|c| c.package))
    }

    /// The packages a node is in: its own, else those of its cores, several when one NUMA node
    /// spans packages (NPS0, node interleaving); none for a memory-only node outside any.
    pub fn node_packages(&self, id: NodeId) -> Vec<PackageId> {
        if let Some(p) = self.node(id).and_then(|n| n.package) {
            return vec![p];
        }
        let set: BTreeSet<PackageId> = self
            .cores
            .iter()
            .filter(|c| c.node == id)
            .map(|c| c.package)
            .collect();
        set.into_iter().collect()
    }

    /// The nodes grouped by `node_packages`, as the summary and the picture draw them: groups
    /// in package order, nodes outside any package last.
    pub fn nodes_by_packages(&self) -> Vec<(Vec<PackageId>, Vec<&NumaNode>)> {
        let mut groups: Vec<(Vec<PackageId>, Vec<&NumaNode>)> = Vec::new();
        for n in &self.nodes {
            let key = self.node_packages(n.id);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, nodes)) => nodes.push(n),
                None => groups.push((key, vec![n])),
            }
        }
        groups.sort_by(|(a, _), (b, _)| (a.is_empty(), a).cmp(&(b.is_empty(), b)));
        groups
    }

    /// The L3 caches (their ids), in topology order; a fixture lists them as `l3_groups:`.
    pub fn l3_caches(&self) -> Vec<L3Id> {
        let set: BTreeSet<L3Id> = self.cores.iter().map(|c| c.l3).collect();
        set.into_iter().collect()
    }

    /// The most SMT siblings any core has.
    pub fn smt_width(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).max().unwrap_or(0)
    }

    /// NUMA distance, if the source gave one.
    pub fn distance(&self, from: NodeId, to: NodeId) -> Option<u32> {
        self.distances.get(&(from, to)).copied()
    }

    /// Nodes that have a distance row, in id order.
    pub fn nodes_with_distances(&self) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = self.distances.keys().map(|(from, _)| *from).collect();
        ids.dedup();
        ids
    }

    pub fn has_distances(&self) -> bool {
        !self.distances.is_empty()
    }

    /// The node with CPUs whose memory `node` is: itself for a node with CPUs; for a
    /// memory-only node (HBM, GPU memory), the nearest node with CPUs (by distance, then one in
    /// its package, then the lowest id).
    pub fn cpu_node_of_memory(&self, node: NodeId) -> Option<NodeId> {
        let n = self.node(node)?;
        if !n.kind.is_memory_only() {
            return Some(node);
        }
        self.nodes
            .iter()
            .filter(|c| !c.kind.is_memory_only())
            .min_by_key(|c| {
                (
                    self.distance(node, c.id).unwrap_or(u32::MAX),
                    c.package != n.package,
                    c.id,
                )
            })
            .map(|c| c.id)
    }

    /// Memory-only nodes holding a GPU's memory.
    pub fn gpu_memory_nodes(&self, gpu: &Gpu) -> Vec<NodeId> {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::GpuMemory { gpu: Some(gpu.pci) })
            .map(|n| n.id)
            .collect()
    }
}
