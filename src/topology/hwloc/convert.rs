//! hwloc's object tree turned into numaplan's [`TopologyParts`] (the rules are in `mod.rs`'s
//! header): cores and their NUMA nodes, memory-only nodes, distances, PCI devices placed by
//! their locality (`pci.rs`), CPU kinds and the allowed sets.

use std::collections::BTreeMap;

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, ObjectType};

use super::object::{node_number, numa_children, package_id, pu_number, text, to_cpuset};
use super::pci::{Locality, number_gpus, pci_devices};
use super::tree::tree;
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId, PackageId};
use crate::pci_addr::PciAddr;
use crate::topology::model::{Core, CpuKind, NodeKind, NumaNode, TopologyParts};
use crate::topology::tree::{HwlocTree, Reading};

fn memory_kind(node: &TopologyObject) -> Option<NodeKind> {
    let subtype = text(node.subtype())?;
    Some(match subtype.as_str() {
        "GPUMemory" => NodeKind::GpuMemory {
            gpu: text(node.info("PCIBusID")).and_then(|s| s.parse().ok()),
        },
        "HBM" | "MCDRAM" => NodeKind::Hbm,
        "NVM" => NodeKind::Nvm,
        "SPM" => NodeKind::Spm,
        s if s.starts_with("CXL") => NodeKind::Cxl,
        _ => return None,
    })
}

/// The NUMA node with CPUs that a PU belongs to: among the NUMA memory children of the nearest
/// ancestor that has any, the first whose subtype is not a memory-only technology.
fn cpu_node_of(pu: &TopologyObject) -> Option<u32> {
    for anc in pu.ancestors() {
        let mut nodes = numa_children(anc);
        if nodes.is_empty() {
            continue;
        }
        nodes.sort_by_key(|n| (memory_kind(n).is_some(), node_number(n)));
        return nodes.first().and_then(|n| node_number(n));
    }
    None
}

fn is_data_cache(obj: &TopologyObject) -> Option<usize> {
    match obj.attributes() {
        Some(ObjectAttributes::Cache(c)) if c.cache_type() != CacheType::Instruction => {
            Some(c.depth())
        }
        _ => None,
    }
}

/// Converts an hwloc topology: cores, NUMA nodes, distances, then the PCI devices placed by
/// their locality (`kfd`: the PCI addresses of the machine's ROCm compute nodes), then the CPU
/// kinds and what this process may use. What hwloc's view holds that numaplan's model cannot
/// (CPUs without a NUMA node, CPU kinds that split a core) or does not count (a GPU vendor's
/// display chip that does not compute) is left out and said in the topology's notes.
pub fn convert(
    topo: &hwlocality::Topology,
    name: &str,
    provenance: &str,
    kfd: &[PciAddr],
    reading: Reading,
) -> TopologyParts {
    let found = cores(topo);
    let mut notes = found.notes();
    let mut nodes = numa_nodes(topo, &found.cpu_nodes);
    nodes.extend(found.missing_nodes(&nodes));
    let distances = node_distances(topo);
    let cores: Vec<Core> = found.cores.into_values().collect();
    let place = Locality::new(&cores);
    let pci = pci_devices(topo, &place, kfd);
    notes.extend(pci.not_gpus);
    let nics = pci.nics;
    let gpus = number_gpus(pci.gpus);
    let addresses: Vec<PciAddr> = gpus.iter().map(|g| g.pci).collect();
    let all: CpuSet = cores.iter().map(|c| &c.cpus).collect();
    let allowed = to_cpuset(&topo.allowed_cpuset()).intersection(&all);
    let (cpu_kinds, kinds_note) = cpu_kinds(topo, &all, &cores);
    notes.extend(kinds_note);
    let allowed_memory: Vec<NodeId> = topo
        .allowed_nodeset()
        .iter_set()
        .map(|n| NodeId(usize::from(n) as u32))
        .collect();
    TopologyParts {
        name: name.to_string(),
        provenance: provenance.to_string(),
        notes,
        container: None,
        allowed_memory: (!allowed_memory.is_empty() && allowed_memory.len() != nodes.len())
            .then_some(allowed_memory),
        nodes,
        cores,
        cpu_kinds,
        distances,
        allowed: (!allowed.is_empty() && allowed != all).then_some(allowed),
        gpus,
        left_out_gpus: Vec::new(),
        nics,
        // Only `policy: mpibind` reads it: walked only when asked for.
        tree: match reading {
            Reading::ModelAndTree => HwlocTree::Read(tree(topo, &addresses)),
            Reading::Model => HwlocTree::NotRead,
        },
    }
}

/// The CPU side of hwloc's view, as `cores` finds it.
struct FoundCores {
    /// Cores keyed in hwloc's order.
    cores: BTreeMap<u64, Core>,
    /// The NUMA nodes that have CPUs.
    cpu_nodes: BTreeMap<u32, ()>,
    /// Nodes a PU's complete nodeset names that hwloc's tree does not hold (an export without
    /// the nodes whose memory the job may not use), with their CPUs and package.
    unlisted: BTreeMap<u32, (CpuSet, PackageId)>,
    /// CPUs of no NUMA node at all: their complete nodeset is empty.
    nodeless: CpuSet,
    /// PUs without an OS index or a cpuset (an export hwloc's check did not read).
    unnumbered: usize,
}

impl FoundCores {
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.nodeless.is_empty() {
            notes.push(format!(
                "CPUs {} have no NUMA node in hwloc's view (their nodeset is empty); plans \
                 leave them out",
                self.nodeless
            ));
        }
        if self.unnumbered > 0 {
            notes.push(format!(
                "{} PU(s) have neither an OS index nor a cpuset in hwloc's view; plans leave \
                 them out",
                self.unnumbered
            ));
        }
        for (node, (cpus, _)) in &self.unlisted {
            notes.push(format!(
                "NUMA node {node} is not in the export, though CPUs {cpus} are its (their \
                 complete nodeset); its memory size is unknown"
            ));
        }
        notes
    }

    /// The nodes of `unlisted` that `nodes` does not hold, as nodes with CPUs.
    fn missing_nodes(&self, nodes: &[NumaNode]) -> Vec<NumaNode> {
        self.unlisted
            .iter()
            .filter(|(id, _)| !nodes.iter().any(|n| n.id.0 == **id))
            .map(|(id, (_, package))| NumaNode {
                id: NodeId(*id),
                package: Some(*package),
                kind: NodeKind::Cpu,
                memory_mib: None,
            })
            .collect()
    }
}

/// The node a PU belongs to: the node with CPUs among the memory children nearest above it;
/// else the first node of its complete nodeset (hwloc's locality for a PU whose node is not in
/// the tree); else none.
enum PuNode {
    Attached(u32),
    Unlisted(u32),
    None,
}

fn pu_node(pu: &TopologyObject) -> PuNode {
    if let Some(node) = cpu_node_of(pu) {
        return PuNode::Attached(node);
    }
    let local = pu
        .complete_nodeset()
        .and_then(|set| set.first_set().map(|n| usize::from(n) as u32));
    local.map_or(PuNode::None, PuNode::Unlisted)
}

/// Cores: PUs grouped by their Core ancestor, as hwloc groups them (a PU without one is its
/// own core), each with its package, its NUMA node (`pu_node`) and its L3 group (the highest
/// data cache above it, else its node, within its package: an s390 book's cache or a node
/// without cache information can span packages); keyed in hwloc's order.
fn cores(topo: &hwlocality::Topology) -> FoundCores {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum L3Key {
        Cache(u64, PackageId),
        Node(u32, PackageId),
    }
    let mut found = FoundCores {
        cores: BTreeMap::new(),
        cpu_nodes: BTreeMap::new(),
        unlisted: BTreeMap::new(),
        nodeless: CpuSet::new(),
        unnumbered: 0,
    };
    let mut l3_ids: BTreeMap<L3Key, u32> = BTreeMap::new();
    for pu in topo.objects_with_type(ObjectType::PU) {
        let Some(cpu) = pu_number(pu) else {
            found.unnumbered += 1;
            continue;
        };
        let package = pu
            .first_ancestor_with_type(ObjectType::Package)
            .map_or(PackageId(0), package_id);
        let node = match pu_node(pu) {
            PuNode::Attached(node) => node,
            PuNode::Unlisted(node) => {
                let entry = found
                    .unlisted
                    .entry(node)
                    .or_insert_with(|| (CpuSet::new(), package));
                entry.0.insert(cpu);
                node
            }
            PuNode::None => {
                found.nodeless.insert(cpu);
                continue;
            }
        };
        found.cpu_nodes.insert(node, ());
        let core_obj = pu.first_ancestor_with_type(ObjectType::Core);
        let key = core_obj.map_or(u64::MAX - u64::from(cpu), |c| c.global_persistent_index());
        let cache = pu
            .ancestors()
            .filter_map(|a| is_data_cache(a).map(|depth| (depth, a.global_persistent_index())))
            .max_by_key(|(depth, _)| *depth);
        let l3_key = match cache {
            Some((_, id)) => L3Key::Cache(id, package),
            None => L3Key::Node(node, package),
        };
        let next = l3_ids.len() as u32;
        let l3 = *l3_ids.entry(l3_key).or_insert(next);
        found
            .cores
            .entry(key)
            .or_insert_with(|| Core {
                cpus: CpuSet::new(),
                package,
                node: NodeId(node),
                l3: L3Id(l3),
            })
            .cpus
            .insert(cpu);
    }
    found
}

/// NUMA nodes: with CPUs when a PU calls the node its own, else memory-only of the kind hwloc's
/// subtype says.
fn numa_nodes(topo: &hwlocality::Topology, cpu_nodes: &BTreeMap<u32, ()>) -> Vec<NumaNode> {
    topo.objects_with_type(ObjectType::NUMANode)
        .filter_map(|n| {
            let id = node_number(n)?;
            let kind = if cpu_nodes.contains_key(&id) {
                NodeKind::Cpu
            } else {
                memory_kind(n).unwrap_or(NodeKind::Memory)
            };
            let memory_mib = match n.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map(|m| m.get() >> 20),
                _ => None,
            };
            Some(NumaNode {
                id: NodeId(id),
                package: n
                    .first_ancestor_with_type(ObjectType::Package)
                    .map(package_id),
                kind,
                memory_mib,
            })
        })
        .collect()
}

/// The first distance matrix between NUMA nodes, as (from, to, distance) triples.
fn node_distances(topo: &hwlocality::Topology) -> Vec<(NodeId, NodeId, u32)> {
    let mut distances = Vec::new();
    let Ok(matrices) = topo.distances(None) else {
        return distances;
    };
    let numa = matrices.iter().find(|m| {
        m.objects()
            .all(|o| o.is_some_and(|o| o.object_type() == ObjectType::NUMANode))
    });
    if let Some(m) = numa {
        let ids: Vec<Option<u32>> = m.objects().map(|o| o.and_then(node_number)).collect();
        let values = m.distances();
        for (i, from) in ids.iter().enumerate() {
            for (j, to) in ids.iter().enumerate() {
                if let (Some(from), Some(to), Some(d)) = (from, to, values.get(i * ids.len() + j)) {
                    distances.push((
                        NodeId(*from),
                        NodeId(*to),
                        u32::try_from(*d).unwrap_or(u32::MAX),
                    ));
                }
            }
        }
    }
    distances
}

/// hwloc's CPU kinds (limited to the CPUs the topology has), or none on a machine with one
/// kind. Kinds that split a core (SMT siblings of different kinds, which no processor has but
/// a hand-made export can say) are left out, with a note.
fn cpu_kinds(
    topo: &hwlocality::Topology,
    all: &CpuSet,
    cores: &[Core],
) -> (Vec<CpuKind>, Option<String>) {
    let Ok(kinds) = topo.cpu_kinds() else {
        return (Vec::new(), None);
    };
    let kinds: Vec<CpuKind> = kinds
        .map(|k| CpuKind {
            cpus: to_cpuset(&k.cpuset).intersection(all),
            efficiency: k.efficiency.map(|e| e as u32),
            info: k
                .infos
                .iter()
                .map(|i| {
                    (
                        i.name().to_string_lossy().into_owned(),
                        i.value().to_string_lossy().into_owned(),
                    )
                })
                .collect(),
        })
        .filter(|k| !k.cpus.is_empty())
        .collect();
    if kinds.len() < 2 {
        return (Vec::new(), None);
    }
    let split = cores.iter().find(|c| {
        kinds
            .iter()
            .any(|k| k.cpus.intersects(&c.cpus) && !c.cpus.is_subset(&k.cpus))
    });
    match split {
        Some(core) => (
            Vec::new(),
            Some(format!(
                "hwloc's CPU kinds split core {} (its SMT siblings are of different kinds, which \
                 no processor has); the kinds are left out",
                core.cpus
            )),
        ),
        None => (kinds, None),
    }
}
