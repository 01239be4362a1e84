//! What every policy works on: the allowed cores of the machine in topology order, and the
//! ranks with their GPUs.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId, PackageId};
use crate::spec::{CpuSpec, Smt};
use crate::topology::Topology;
use crate::topology::model::{Gpu, Vendor};
use crate::variables;

use super::inside::Inside;

/// A core with at least one allowed CPU; `cpus` holds only its allowed siblings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ACore {
    /// Position in the topology's core order (topology order).
    pub order: usize,
    /// Lowest sibling of the whole core (allowed or not).
    pub key: u32,
    pub cpus: CpuSet,
    pub node: NodeId,
    pub package: PackageId,
    pub l3: L3Id,
}

/// One rank before placement.
#[derive(Clone, Debug)]
pub struct Unit<'t> {
    pub local_rank: u32,
    pub gpus: Vec<&'t Gpu>,
}

impl Unit<'_> {
    /// The GPU whose locality decides the rank's placement (its first).
    pub fn lead(&self) -> Option<&Gpu> {
        self.gpus.first().copied()
    }
}

/// A rank's CPUs and the node(s) they came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub cpus: CpuSet,
    pub cores: u32,
    /// The node the rank is placed on, when it is one.
    pub home: Option<NodeId>,
    /// Default memory nodes (the home node, or every node of a multi-node CPU-only rank).
    pub memory_nodes: Vec<NodeId>,
}

/// A node's ranks, placed: their GPUs, CPUs and what runs inside them.
pub struct Mapped<'t> {
    pub units: Vec<Unit<'t>>,
    pub placements: Vec<Placement>,
    pub insides: Vec<Inside>,
    /// The CPUs left after the restriction.
    pub allowed: CpuSet,
}

/// The variable that numbers a vendor's GPUs for its runtime.
pub fn visibility_variable(vendor: Vendor) -> &'static str {
    match vendor {
        Vendor::Nvidia => variables::CUDA_VISIBLE_DEVICES,
        Vendor::Amd => variables::ROCR_VISIBLE_DEVICES,
        Vendor::Intel => variables::ZE_AFFINITY_MASK,
    }
}

pub struct Ctx<'t> {
    pub topo: &'t Topology,
    pub cpu: &'t CpuSpec,
    pub allowed: CpuSet,
    /// Allowed cores in topology order.
    pub cores: Vec<ACore>,
    /// The first CPU of each whole L3 group, allowed or not.
    l3_first: BTreeMap<L3Id, u32>,
}

impl<'t> Ctx<'t> {
    pub fn new(topo: &'t Topology, cpu: &'t CpuSpec, allowed: CpuSet) -> Self {
        let cores = topo
            .cores()
            .iter()
            .enumerate()
            .filter_map(|(order, c)| {
                let cpus = c.cpus.intersection(&allowed);
                (!cpus.is_empty()).then(|| ACore {
                    order,
                    key: c.key(),
                    cpus,
                    node: c.node,
                    package: c.package,
                    l3: c.l3,
                })
            })
            .collect();
        let mut l3_first: BTreeMap<L3Id, u32> = BTreeMap::new();
        for c in topo.cores() {
            let first = c.cpus.first().expect("invariant: a core has CPUs");
            l3_first
                .entry(c.l3)
                .and_modify(|f| *f = (*f).min(first))
                .or_insert(first);
        }
        Ctx {
            topo,
            cpu,
            allowed,
            cores,
            l3_first,
        }
    }

    /// The first CPU of an L3 group, allowed or not (the first of its `shared_cpu_list`).
    pub fn l3_first_cpu(&self, l3: L3Id) -> u32 {
        self.l3_first.get(&l3).copied().unwrap_or(u32::MAX)
    }

    pub fn node_cores(&self, node: NodeId) -> Vec<&ACore> {
        self.cores.iter().filter(|c| c.node == node).collect()
    }

    pub fn node_allowed(&self, node: NodeId) -> CpuSet {
        self.topo.node_cpus(node).intersection(&self.allowed)
    }

    /// Nodes with allowed CPUs, in id order.
    pub fn cpu_nodes(&self) -> Vec<NodeId> {
        let mut v: Vec<NodeId> = self.cores.iter().map(|c| c.node).collect();
        v.sort();
        v.dedup();
        v
    }

    /// A GPU's package: its own, or that of its node.
    pub fn gpu_package(&self, gpu: &Gpu) -> Option<PackageId> {
        gpu.package
            .or_else(|| gpu.numa_node.and_then(|n| self.topo.node_package(n)))
    }

    /// The CPUs of some cores after the `smt` option: every allowed sibling, the lowest, or the
    /// lowest N.
    pub fn threads(&self, cores: &[&ACore]) -> CpuSet {
        let mut set = CpuSet::new();
        for c in cores {
            match self.cpu.smt {
                Smt::All => set = set.union(&c.cpus),
                Smt::One => set.insert(c.cpus.first().expect("invariant: ACore is non-empty")),
                Smt::Count(n) => set = set.union(&c.cpus.iter().take(n as usize).collect()),
            }
        }
        set
    }

    /// The nearest node with allowed CPUs to `from` (itself if it has some): by NUMA distance,
    /// then a node in `package` first, then the lowest id.
    pub fn nearest_cpu_node(&self, from: NodeId, package: Option<PackageId>) -> Option<NodeId> {
        let candidates = self.cpu_nodes();
        if candidates.contains(&from) {
            return Some(from);
        }
        candidates.into_iter().min_by_key(|n| {
            (
                self.topo.distance(from, *n).unwrap_or(u32::MAX),
                self.topo.node_package(*n) != package,
                *n,
            )
        })
    }
}
