//! hwloc's CPU-side object tree as a [`CpuTree`], for `policy: mpibind`: every normal object
//! with its CPUs, the NUMA nodes among its memory children, and the GPUs of its I/O subtree in
//! hwloc's order; then the levels that add no structure merged, as mpibind's loader asks hwloc
//! to (`KEEP_STRUCTURE`).

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::depth::Depth;
use hwlocality::object::types::{CacheType, ObjectType};

use super::object::{node_number, numa_children, pu_number, to_cpuset};
use super::pci::address_of;
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;
use crate::topology::tree::{CpuTree, Kind, TreeObject};

/// The tree of `topo`; `gpus` are the PCI functions counted as GPUs (others are left out).
pub fn tree(topo: &hwlocality::Topology, gpus: &[PciAddr]) -> CpuTree {
    let mut tree = CpuTree {
        root: object(topo.root_object(), gpus),
    };
    tree.merge_levels();
    tree
}

fn object(o: &TopologyObject, gpus: &[PciAddr]) -> TreeObject {
    let depth = match o.depth() {
        Depth::Normal(d) => usize::from(d) as u32,
        _ => 0,
    };
    // A PU is half of a machine's objects: its CPU number is all it holds.
    if let Some(cpu) = pu_number(o).filter(|_| o.object_type() == ObjectType::PU) {
        return TreeObject::pu(cpu, depth);
    }
    let mut found = Vec::new();
    for io in o.io_children() {
        io_gpus(io, gpus, &mut found);
    }
    TreeObject {
        kind: kind(o),
        depth,
        cpus: o.cpuset().map(|s| to_cpuset(&s)).unwrap_or_default(),
        nodes: numa_children(o)
            .into_iter()
            .filter_map(node_number)
            .map(NodeId)
            .collect(),
        gpus: found,
        children: o
            .normal_children()
            .filter(|c| c.object_type() != ObjectType::PU || pu_number(c).is_some())
            .map(|c| object(c, gpus))
            .collect(),
    }
}

/// The GPUs of an I/O subtree, depth-first.
fn io_gpus(o: &TopologyObject, gpus: &[PciAddr], found: &mut Vec<PciAddr>) {
    if let Some(addr) = address_of(o).filter(|a| gpus.contains(a)) {
        found.push(addr);
    }
    for c in o.io_children() {
        io_gpus(c, gpus, found);
    }
}

fn kind(o: &TopologyObject) -> Kind {
    let level = |o: &TopologyObject| match o.attributes() {
        Some(ObjectAttributes::Cache(c)) => (c.depth() as u8, c.cache_type()),
        _ => (0, CacheType::Unified),
    };
    match o.object_type() {
        ObjectType::Machine => Kind::Machine,
        ObjectType::Package => Kind::Package,
        ObjectType::Die => Kind::Die,
        ObjectType::Core => Kind::Core,
        ObjectType::PU => Kind::Pu,
        ObjectType::L1ICache | ObjectType::L2ICache | ObjectType::L3ICache => {
            Kind::InstructionCache(level(o).0)
        }
        t if t.is_cpu_data_cache() => match level(o) {
            (l, CacheType::Instruction) => Kind::InstructionCache(l),
            (l, _) => Kind::DataCache(l),
        },
        _ => Kind::Group,
    }
}
