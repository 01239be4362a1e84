//! A numaplan fixture's object tree, for `policy: mpibind`: the model's own levels (machine,
//! package, NUMA node, L3 group, core, CPU), merged as hwloc merges the levels that add no
//! structure.

use std::collections::BTreeMap;

use super::{Core, Gpu, NumaNode};
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;
use crate::topology::tree::{CpuTree, Kind, TreeObject};

/// The tree of a numaplan fixture, made of its own levels: machine, package, NUMA node,
/// L3 group, core, CPU (a memory-only node on its package, else the machine; a GPU on its
/// node, else its package, else the machine), then merged as hwloc merges (an SMT-1
/// fixture has no core level).
pub(super) fn tree_of_model(nodes: &[NumaNode], cores: &[Core], gpus: &[Gpu]) -> CpuTree {
    let mut packages: BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<&Core>>>> = BTreeMap::new();
    for c in cores {
        packages
            .entry(c.package.0)
            .or_default()
            .entry(c.node.0)
            .or_default()
            .entry(c.l3.0)
            .or_default()
            .push(c);
    }
    let gpus_at = |node: Option<NodeId>, package: Option<u32>| -> Vec<PciAddr> {
        let mut at: Vec<PciAddr> = gpus
            .iter()
            .filter(|g| match node {
                Some(n) => g.numa_node == Some(n),
                None => match package {
                    Some(p) => g.numa_node.is_none() && g.package.map(|q| q.0) == Some(p),
                    None => g.numa_node.is_none() && g.package.is_none(),
                },
            })
            .map(|g| g.pci)
            .collect();
        at.sort();
        at
    };
    let memory_at = |package: Option<u32>| -> Vec<NodeId> {
        nodes
            .iter()
            .filter(|n| n.kind.is_memory_only() && n.package.map(|p| p.0) == package)
            .map(|n| n.id)
            .collect()
    };
    let core_object = |c: &Core| TreeObject {
        kind: Kind::Core,
        depth: 4,
        cpus: c.cpus.clone(),
        nodes: Vec::new(),
        gpus: Vec::new(),
        children: c.cpus.iter().map(|cpu| TreeObject::pu(cpu, 5)).collect(),
    };
    let package_objects = packages.iter().map(|(&package, in_package)| {
        let node_objects = in_package.iter().map(|(&node, l3s)| {
            let l3_objects = l3s.values().map(|cores| {
                TreeObject::over(Kind::DataCache(3), 3, cores.iter().map(|c| core_object(c)))
            });
            let mut group = TreeObject::over(Kind::Group, 2, l3_objects);
            group.nodes = vec![NodeId(node)];
            group.gpus = gpus_at(Some(NodeId(node)), None);
            group
        });
        let mut p = TreeObject::over(Kind::Package, 1, node_objects);
        p.nodes = memory_at(Some(package));
        p.gpus = gpus_at(None, Some(package));
        p
    });
    let mut root = TreeObject::over(Kind::Machine, 0, package_objects);
    let known: Vec<u32> = packages.keys().copied().collect();
    root.nodes = nodes
        .iter()
        .filter(|n| n.kind.is_memory_only())
        .filter(|n| n.package.is_none_or(|p| !known.contains(&p.0)))
        .map(|n| n.id)
        .collect();
    root.gpus = gpus_at(None, None);
    let mut tree = CpuTree { root };
    tree.merge_levels();
    tree
}
