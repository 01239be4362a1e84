//! hwloc as a topology source, through hwlocality and the system libhwloc: XML exports
//! (`lstopo --of xml`, hwloc 1.x and 2.x formats) and the live machine (`discover`).
//!
//! This is the only module that talks to hwloc. It turns hwloc's object tree into
//! [`TopologyParts`]:
//! - a PU's NUMA node is the one *with CPUs* among the memory children nearest above it (hwloc
//!   reports the parent's cpuset for memory-only nodes: GPU memory, HBM, CXL);
//! - a NUMA node that no PU calls its own is memory-only; its kind comes from hwloc's subtype
//!   (`GPUMemory` with info `PCIBusID`, `HBM`/`MCDRAM`, `NVM`, `SPM`, `CXL-*`);
//! - an L3 group is the set of PUs under one highest-level data/unified cache;
//! - CPU kinds are hwloc's, kept only when there are at least two (a hybrid machine);
//! - GPUs are PCI devices of NVIDIA/AMD/Intel with a display, 3D or processing-accelerator class;
//!   NICs are network or InfiniBand PCI devices, named after their OpenFabrics or network OS
//!   device.

use std::collections::BTreeMap;
use std::ffi::CStr;

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::topology::builder::{BuildFlags, TypeFilter};

use super::error::TopologyError;
use super::model::{Core, CpuKind, NodeKind, NumaNode, Topology, TopologyParts, Vendor};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId, PackageId};
use crate::pci_addr::PciAddr;
use crate::sandbox::Outcome;

mod pci;

use pci::{Locality, number_gpus, pci_devices};

/// Loads an hwloc XML export given as text (already read from `file`). hwloc imports it in a
/// child process (`sandbox`): libhwloc segfaults on some malformed files, and numaplan must not
/// die of a signal on any input.
pub fn load_xml(file: &str, name: &str, text: &str) -> Result<Topology, TopologyError> {
    let translated;
    let checked = super::xml_precheck::precheck_xml(file, text)?;
    let text = match checked.major {
        3 => {
            translated = super::hwloc_v3::to_v2(file, text)?;
            translated.as_str()
        }
        _ => text,
    };
    // hwloc's consistency check marks every object id in a bitmap as large as the largest id:
    // `gp_index="-1"` took 526 MB (lstopo, without the check: 8 MB). hwloc numbers objects from
    // 1, so an id past this bound is no export of hwloc's, and is read without the check.
    const CHECKABLE_IDS: u64 = 1 << 24;
    let check = match checked.largest_id < CHECKABLE_IDS {
        true => Check::Consistency,
        false => Check::None,
    };
    let rejected = |detail: String| TopologyError::XmlRejected {
        file: file.to_string(),
        detail,
    };
    // The variables are set here, before the fork: the child must take no lock.
    let ended = with_hwloc_settings(check, || {
        crate::sandbox::in_child(|| encode(import_xml(file, name, text)))
    })
    .map_err(|e| rejected(format!("cannot start the importing process: {e}")))?;
    // What hwloc said (a failed assertion, an out-of-order object), in one line.
    let said = hwloc_said(&ended.stderr);
    match ended.outcome {
        Outcome::Returned(bytes) => {
            let mut topo = decode(file, &bytes)?;
            if let Some(said) = said {
                topo.add_note(format!("hwloc warned while importing `{file}`: {said}"));
            }
            if matches!(check, Check::None) {
                topo.add_note(format!(
                    "hwloc's consistency check was skipped for `{file}`: its object ids \
                     (gp_index) are not hwloc's (the largest is {})",
                    match checked.largest_id {
                        u64::MAX => "not a number".to_string(),
                        id => id.to_string(),
                    }
                ));
            }
            Ok(topo)
        }
        Outcome::Crashed { signal } => Err(rejected(match said {
            Some(said) => {
                format!("hwloc crashed reading it (signal {signal}: {said}); the XML is malformed")
            }
            None => format!("hwloc crashed reading it (signal {signal}); the XML is malformed"),
        })),
        Outcome::Panicked => Err(rejected(
            "hwloc's bindings failed on an object it describes: the XML is malformed".into(),
        )),
    }
}

/// hwloc's message on standard error, without its banner of asterisks: the failed assertion
/// (its last line) or the first line of a warning.
fn hwloc_said(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim().trim_start_matches('*').trim())
        .filter(|l| !l.is_empty())
        .collect();
    let assertion = lines.iter().rev().find(|l| l.contains("Assertion"));
    assertion
        .or(lines.first())
        .map(|l| l.trim_start_matches("numaplan: ").to_string())
}

/// What the importing child sends back: the topology as fixture JSON, or its error.
fn encode(result: Result<Topology, TopologyError>) -> Vec<u8> {
    let (tag, body) = match result {
        Ok(t) => (b'T', super::fixture::dump_json(&t)),
        Err(TopologyError::Inconsistent { error, .. }) => (b'I', error.message),
        Err(TopologyError::XmlRejected { detail, .. }) => (b'R', detail),
        Err(e) => (b'R', e.to_string()),
    };
    let mut out = vec![tag];
    out.extend_from_slice(body.as_bytes());
    out
}

fn decode(file: &str, bytes: &[u8]) -> Result<Topology, TopologyError> {
    let text = String::from_utf8_lossy(bytes.get(1..).unwrap_or_default());
    match bytes.first() {
        Some(b'T') => super::fixture::load(file, &text).map_err(|e| TopologyError::XmlRejected {
            file: file.to_string(),
            detail: format!("numaplan cannot read back its conversion of it: {e}"),
        }),
        Some(b'I') => Err(TopologyError::Inconsistent {
            file: file.to_string(),
            error: super::model::model_error(super::model::Subject::Machine, text),
        }),
        _ => Err(TopologyError::XmlRejected {
            file: file.to_string(),
            detail: text.into_owned(),
        }),
    }
}

/// hwloc's import and numaplan's conversion, in the importing child.
fn import_xml(file: &str, name: &str, text: &str) -> Result<Topology, TopologyError> {
    let rejected = |detail: String| TopologyError::XmlRejected {
        file: file.to_string(),
        detail,
    };
    // An export's `allowed_cpuset` (a cgroup, `lstopo --allow`) narrows only the allowed set:
    // without INCLUDE_DISALLOWED hwloc would delete the other CPUs, changing cores, node CPU
    // lists and GPU localities.
    let topo = hwlocality::Topology::builder()
        .from_xml(text)
        .map_err(|_| rejected("the XML is malformed or truncated".into()))?
        .with_flags(BuildFlags::INCLUDE_DISALLOWED)
        .map_err(|e| rejected(e.to_string()))?
        .with_io_type_filter(TypeFilter::KeepImportant)
        .map_err(|e| rejected(e.to_string()))?
        .build()
        // hwloc's own XML parser finds a malformed or truncated file while loading it.
        .map_err(|_| rejected("the XML is malformed or truncated".into()))?;
    // Named as hwloc names the machine (its root's HostName), else after the file.
    let host = self::text(topo.root_object().info("HostName")).filter(|h| !h.trim().is_empty());
    let parts = convert(
        &topo,
        host.as_deref().unwrap_or(name),
        &format!("imported from the hwloc XML export `{file}`"),
        &[],
    );
    Topology::build(parts).map_err(|error| TopologyError::Inconsistent {
        file: file.to_string(),
        error,
    })
}

/// The hwloc API numaplan is linked with, as `major.x`.
pub fn linked_version() -> String {
    format!("{}.x", hwlocality::hwloc_api_version() >> 16)
}

fn text(c: Option<&CStr>) -> Option<String> {
    c.map(|s| s.to_string_lossy().into_owned())
}

fn os_index(obj: &TopologyObject) -> u32 {
    obj.os_index().unwrap_or(obj.logical_index()) as u32
}

fn to_cpuset(set: &hwlocality::cpu::cpuset::CpuSet) -> CpuSet {
    set.iter_set().map(|i| usize::from(i) as u32).collect()
}

/// NUMA nodes among `obj`'s memory children (looking through memory-side caches).
fn numa_children(obj: &TopologyObject) -> Vec<&TopologyObject> {
    let mut out = Vec::new();
    for m in obj.memory_children() {
        if m.object_type() == ObjectType::NUMANode {
            out.push(m);
        } else {
            out.extend(numa_children(m));
        }
    }
    out
}

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
        nodes.sort_by_key(|n| (memory_kind(n).is_some(), os_index(n)));
        return nodes.first().map(|n| os_index(n));
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
        allowed_memory: (!allowed_memory.is_empty() && allowed_memory.len() != nodes.len())
            .then_some(allowed_memory),
        nodes,
        cores,
        cpu_kinds,
        distances,
        allowed: (!allowed.is_empty() && allowed != all).then_some(allowed),
        gpus,
        nics,
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
    };
    let mut l3_ids: BTreeMap<L3Key, u32> = BTreeMap::new();
    for pu in topo.objects_with_type(ObjectType::PU) {
        let cpu = os_index(pu);
        let package = PackageId(
            pu.first_ancestor_with_type(ObjectType::Package)
                .map_or(0, os_index),
        );
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
        .map(|n| {
            let id = os_index(n);
            let kind = if cpu_nodes.contains_key(&id) {
                NodeKind::Cpu
            } else {
                memory_kind(n).unwrap_or(NodeKind::Memory)
            };
            let memory_mib = match n.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map(|m| m.get() >> 20),
                _ => None,
            };
            NumaNode {
                id: NodeId(id),
                package: n
                    .first_ancestor_with_type(ObjectType::Package)
                    .map(|p| PackageId(os_index(p))),
                kind,
                memory_mib,
            }
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
        let ids: Vec<u32> = m.objects().map(|o| o.map_or(0, os_index)).collect();
        let values = m.distances();
        for (i, from) in ids.iter().enumerate() {
            for (j, to) in ids.iter().enumerate() {
                if let Some(d) = values.get(i * ids.len() + j) {
                    distances.push((NodeId(*from), NodeId(*to), *d as u32));
                }
            }
        }
    }
    distances
}

/// Whether hwloc checks the consistency of what it built (see `with_hwloc_settings`).
#[derive(Clone, Copy)]
enum Check {
    Consistency,
    None,
}

/// Runs `build` with numaplan's hwloc settings, each unless the user set it, and removes them
/// again so that ranks do not inherit them:
/// - `HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1`: hwloc hides the NUMA nodes of NVIDIA GPU memory by
///   default on POWER9 (and on Grace Hopper before hwloc 2.11), but plans need them, and `exec`
///   counts them in `/sys/devices/system/node` when it checks a node against its plan;
/// - `HWLOC_PLUGINS_PATH` pointing nowhere: numaplan uses hwloc's built-in components (Linux
///   sysfs, PCI included, and its own XML parser), never the plugins (libxml2, libpciaccess,
///   OpenCL) an installed hwloc may have, so it behaves the same wherever it runs, and the
///   statically linked hwloc never loads a plugin built for the shared one;
/// - for an XML import (`Check::Consistency`), `HWLOC_DEBUG_CHECK=1`: hwloc checks the
///   imported tree (every cpuset within its complete cpuset, children in order) and aborts on
///   an inconsistency, which the import's sandbox reports. hwlocality runs that check itself
///   only in debug builds: without the variable, a release build would accept a malformed file
///   that a debug build refuses.
fn with_hwloc_settings<T>(check: Check, build: impl FnOnce() -> T) -> T {
    const SETTINGS: [(&str, &str); 2] = [
        ("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", "1"),
        ("HWLOC_PLUGINS_PATH", "/numaplan/uses/no/hwloc/plugins"),
    ];
    let checked = match check {
        Check::Consistency => Some(("HWLOC_DEBUG_CHECK", "1")),
        Check::None => None,
    };
    let ours: Vec<&str> = SETTINGS
        .iter()
        .chain(checked.iter())
        .filter(|(var, _)| std::env::var_os(var).is_none())
        .map(|(var, value)| {
            // SAFETY: numaplan reads topologies before it starts any thread (exec's relays
            // start later), so no other thread reads the environment meanwhile.
            unsafe { std::env::set_var(var, value) };
            *var
        })
        .collect();
    let built = build();
    for var in ours {
        // SAFETY: as above.
        unsafe { std::env::remove_var(var) };
    }
    built
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

/// The hwloc numaplan runs with: the release it was built against (pkg-config's, by build.rs),
/// how it is linked, and the API version the library itself reports.
pub fn library() -> String {
    let api = hwlocality::hwloc_api_version();
    format!(
        "hwloc {} ({}, API {}.{}.{})",
        env!("NUMAPLAN_HWLOC_VERSION"),
        if cfg!(feature = "dynamic-hwloc") {
            "linked dynamically"
        } else {
            "linked statically"
        },
        api >> 16,
        (api >> 8) & 0xff,
        api & 0xff
    )
}

/// Reads the machine numaplan runs on: the whole machine (hwloc's `INCLUDE_DISALLOWED`, so that
/// a cgroup-restricted job still sees every CPU and node), with the CPUs this process may use,
/// the cgroup's cpuset (hwloc's allowed set) intersected with its affinity (`taskset`, a Slurm
/// step's binding), as the allowed set.
///
/// With `HWLOC_FSROOT` set, hwloc reads a sysfs snapshot (`hwloc-gather-topology`) instead; the
/// machine is then named after the snapshot's folder, and neither this process's affinity nor
/// NVML (which would describe this machine, not the snapshot's) is consulted.
pub fn discover() -> Result<Topology, TopologyError> {
    let failed = |detail: String| TopologyError::Discover { detail };
    let build = || {
        hwlocality::Topology::builder()
            .with_flags(BuildFlags::INCLUDE_DISALLOWED)
            .map_err(|e| failed(e.to_string()))?
            .with_io_type_filter(TypeFilter::KeepImportant)
            .map_err(|e| failed(e.to_string()))?
            .build()
            .map_err(|e| failed(e.to_string()))
    };
    let topo = with_hwloc_settings(Check::None, build)?;
    let snapshot = (!topo.is_this_system())
        .then(|| std::env::var_os("HWLOC_FSROOT"))
        .flatten()
        .map(std::path::PathBuf::from);
    let root = snapshot.clone().unwrap_or_else(|| "/".into());
    let (name, provenance) = match &snapshot {
        Some(dir) => (
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "snapshot".into()),
            format!(
                "discovered with hwloc from the sysfs snapshot `{}` (HWLOC_FSROOT)",
                dir.display()
            ),
        ),
        None => (
            super::hostname(),
            "discovered with hwloc on this machine".to_string(),
        ),
    };
    // ROCm's compute nodes: they say which AMD devices compute, and in which order ROCm
    // numbers them.
    let kfd = super::kfd::gpu_order(&super::kfd::read(&root.join(super::kfd::NODES)));
    let mut parts = convert(&topo, &name, &provenance, &kfd);
    if snapshot.is_none() && parts.gpus.iter().any(|g| g.vendor == Vendor::Nvidia) {
        let nvml = super::nvml::merge(&mut parts, super::nvml::probe());
        parts.notes.extend(nvml);
    }
    if parts.gpus.iter().any(|g| g.vendor == Vendor::Amd) {
        super::kfd::apply(&mut parts, &kfd);
    }
    if snapshot.is_none() {
        let affinity = topo
            .cpu_binding(CpuBindingFlags::PROCESS)
            .map_err(|e| failed(format!("cannot read this process's CPU affinity: {e}")))?;
        let all: CpuSet = parts.cores.iter().map(|c| &c.cpus).collect();
        let allowed = parts
            .allowed
            .take()
            .unwrap_or_else(|| all.clone())
            .intersection(&to_cpuset(&affinity));
        parts.allowed = (allowed != all).then_some(allowed);
    }
    Topology::build(parts).map_err(|error| TopologyError::Inconsistent {
        file: "this machine".into(),
        error,
    })
}
