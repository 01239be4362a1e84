//! numaplan's own topology file format (YAML), read and written here and nowhere else.
//!
//! The on-disk types (`FixtureFile` and its entries) live in `fixture_file.rs`. `load` turns a
//! file into a checked
//! [`Topology`] and points every error at its line; `dump` writes one back, and
//! `dump(load(dump(t))) == dump(t)` byte for byte.

use std::collections::BTreeMap;

use super::error::TopologyError;
pub use super::fixture_file::*;
use super::model::{
    Core, CpuKind, Gpu, Nic, NicKind, NodeKind, NumaNode, Subject, Topology, TopologyParts, Vendor,
};
use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, L3Id, NodeId, PackageId};
use crate::pci_addr::PciAddr;
use crate::yaml;

/// The format version written and accepted.
pub const FORMAT_VERSION: u32 = 1;

/// Reads a fixture from its text.
pub fn load(file: &str, text: &str) -> Result<Topology, TopologyError> {
    let (raw, map) = yaml::parse::<FixtureFile>(file, text)
        .map_err(|(error, map)| TopologyError::Yaml { map, error })?;
    let invalid = |path: &str, message: String, help: Option<String>| TopologyError::Invalid {
        map: Box::new(map.clone()),
        path: path.to_string(),
        message,
        help,
    };
    if raw.numaplan_topology != FORMAT_VERSION {
        return Err(invalid(
            "numaplan_topology",
            format!(
                "unsupported fixture format version {} (this numaplan reads version {FORMAT_VERSION})",
                raw.numaplan_topology
            ),
            Some("regenerate the file with `numaplan topo --format yaml`".into()),
        ));
    }
    let parts = to_parts(&raw).map_err(|(path, message)| invalid(&path, message, None))?;
    Topology::build(parts).map_err(|e| {
        let path = subject_path(&raw, &e.subject);
        invalid(&path, e.message, None)
    })
}

type Located = (String, String);

fn cpus_at(path: String, text: &CpuList) -> Result<CpuSet, Located> {
    text.0
        .parse()
        .map_err(|e| (path, format!("invalid CPU list `{}`: {e}", text.0)))
}

fn pci_at(path: String, text: &str) -> Result<PciAddr, Located> {
    text.parse().map_err(|e| (path, format!("{e}")))
}

/// The file's entries as model parts, each error at its path: nodes and their cores, then
/// distances, devices, CPU kinds and the allowed sets. `Topology::build` checks the rest.
fn to_parts(raw: &FixtureFile) -> Result<TopologyParts, Located> {
    let mut nodes = Vec::new();
    let mut cores = Vec::new();
    // Where each CPU was first listed, to point at both places of a duplicate.
    let mut listed_at: BTreeMap<u32, String> = BTreeMap::new();
    for (i, n) in raw.nodes.iter().enumerate() {
        let (node, node_cores) = node_entry(i, n, &mut listed_at)?;
        nodes.push(node);
        cores.extend(node_cores);
    }
    let distances = distances(raw)?;
    let node_package: BTreeMap<u32, Option<u32>> =
        raw.nodes.iter().map(|n| (n.id, n.package)).collect();
    // A device without a package of its own is in its node's.
    let package_for = |explicit: Option<u32>, node: Option<u32>| {
        explicit
            .or_else(|| node.and_then(|n| node_package.get(&n).copied().flatten()))
            .map(PackageId)
    };
    let gpus = raw
        .gpus
        .iter()
        .enumerate()
        .map(|(k, g)| gpu_entry(k, g, package_for(g.package, g.numa_node)))
        .collect::<Result<Vec<_>, Located>>()?;
    let nics = raw
        .nics
        .iter()
        .enumerate()
        .map(|(k, n)| nic_entry(k, n, package_for(n.package, n.numa_node)))
        .collect::<Result<Vec<_>, Located>>()?;
    let cpu_kinds = raw
        .cpu_kinds
        .iter()
        .enumerate()
        .map(|(k, kind)| {
            Ok(CpuKind {
                cpus: cpus_at(format!("cpu_kinds[{k}].cpus"), &kind.cpus)?,
                efficiency: kind.efficiency,
                info: kind.info.clone(),
            })
        })
        .collect::<Result<Vec<_>, Located>>()?;
    let allowed = raw
        .allowed
        .as_ref()
        .map(|a| cpus_at("allowed".into(), a))
        .transpose()?;
    let allowed_memory = raw
        .allowed_memory_nodes
        .as_ref()
        .map(|a| cpus_at("allowed_memory_nodes".into(), a))
        .transpose()?
        .map(|set| set.iter().map(NodeId).collect());
    Ok(TopologyParts {
        name: raw.name.clone(),
        provenance: raw.provenance.clone(),
        notes: raw.notes.clone(),
        nodes,
        cores,
        cpu_kinds,
        distances,
        allowed,
        allowed_memory,
        gpus,
        nics,
    })
}

/// `nodes[i]`: the node, and the cores of its L3 groups; its `cpus`, when listed, must equal
/// theirs.
fn node_entry(
    i: usize,
    n: &NodeEntry,
    listed_at: &mut BTreeMap<u32, String>,
) -> Result<(NumaNode, Vec<Core>), Located> {
    let at = |field: &str| format!("nodes[{i}].{field}");
    let kind = match n.kind {
        NodeKindName::Cpu => NodeKind::Cpu,
        NodeKindName::Hbm => NodeKind::Hbm,
        NodeKindName::GpuMemory => NodeKind::GpuMemory {
            gpu: n.gpu.as_deref().map(|g| pci_at(at("gpu"), g)).transpose()?,
        },
        NodeKindName::Cxl => NodeKind::Cxl,
        NodeKindName::Nvm => NodeKind::Nvm,
        NodeKindName::Spm => NodeKind::Spm,
        NodeKindName::Memory => NodeKind::Memory,
    };
    if n.gpu.is_some() && n.kind != NodeKindName::GpuMemory {
        return Err((
            at("gpu"),
            "`gpu` is only allowed on `kind: gpu-memory` nodes".into(),
        ));
    }
    if kind.is_memory_only() && !n.l3_groups.is_empty() {
        return Err((
            at("kind"),
            format!(
                "memory-only node {} ({}) cannot have cores",
                n.id,
                kind.name()
            ),
        ));
    }
    let mut cores = Vec::new();
    for (j, group) in n.l3_groups.iter().enumerate() {
        let group_at = format!("nodes[{i}].l3_groups[{j}]");
        for cpus in group_cores(&group_at, group, listed_at)? {
            cores.push(Core {
                cpus,
                package: PackageId(group.package.or(n.package).unwrap_or(0)),
                node: NodeId(n.id),
                l3: L3Id(group.id),
            });
        }
    }
    if let Some(listed) = &n.cpus {
        let listed = cpus_at(at("cpus"), listed)?;
        let held: CpuSet = cores.iter().map(|c| &c.cpus).collect();
        if listed != held {
            return Err((
                at("cpus"),
                format!(
                    "node {} lists CPUs {listed} but its L3 groups hold {}",
                    n.id,
                    crate::phrase::list_or_none(&held)
                ),
            ));
        }
    }
    let node = NumaNode {
        id: NodeId(n.id),
        package: n.package.map(PackageId),
        kind,
        memory_mib: n.memory_mib,
    };
    Ok((node, cores))
}

/// An L3 group's cores, from its `threads` rows or its `cores` list; no CPU is listed twice
/// in the file.
fn group_cores(
    group_at: &str,
    group: &L3Entry,
    listed_at: &mut BTreeMap<u32, String>,
) -> Result<Vec<CpuSet>, Located> {
    let (field, lists) = match (group.threads.is_empty(), group.cores.is_empty()) {
        (false, true) => ("threads", &group.threads),
        (true, false) => ("cores", &group.cores),
        (true, true) => {
            return Err((
                format!("{group_at}.threads"),
                "an L3 group needs its cores: `threads` rows, or a `cores` list".into(),
            ));
        }
        (false, false) => {
            return Err((
                format!("{group_at}.cores"),
                "an L3 group lists its cores either as `threads` rows or as `cores`, not both"
                    .into(),
            ));
        }
    };
    let sets = lists
        .iter()
        .enumerate()
        .map(|(t, list)| cpus_at(format!("{group_at}.{field}[{t}]"), list))
        .collect::<Result<Vec<CpuSet>, _>>()?;
    for (t, set) in sets.iter().enumerate() {
        let here = format!("{group_at}.{field}[{t}]");
        if set.is_empty() {
            return Err((here, format!("`{field}[{t}]` lists no CPU")));
        }
        for cpu in set.iter() {
            if let Some(first) = listed_at.insert(cpu, here.clone()) {
                return Err((
                    here,
                    format!("CPU {cpu} is listed twice: here and in `{first}`"),
                ));
            }
        }
    }
    match field {
        "threads" => rows_to_cores(group_at, &sets),
        _ => Ok(sets),
    }
}

/// Thread rows as cores: row 0 holds each core's first CPU, row t the t-th CPU of the first
/// len(row t) cores; rows never grow.
fn rows_to_cores(group_at: &str, rows: &[CpuSet]) -> Result<Vec<CpuSet>, Located> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let mut cores: Vec<CpuSet> = first.iter().map(|c| std::iter::once(c).collect()).collect();
    for (t, row) in rows.iter().enumerate().skip(1) {
        if row.len() > rows[t - 1].len() {
            return Err((
                format!("{group_at}.threads[{t}]"),
                format!(
                    "thread row {t} has {} CPUs but row {} has {}; rows must not grow (list \
                     cores with different numbers of threads under `cores`)",
                    row.len(),
                    t - 1,
                    rows[t - 1].len()
                ),
            ));
        }
        for (core, cpu) in cores.iter_mut().zip(row.iter()) {
            core.insert(cpu);
        }
    }
    Ok(cores)
}

/// The distance rows, each as long as there are rows.
fn distances(raw: &FixtureFile) -> Result<Vec<(NodeId, NodeId, u32)>, Located> {
    let columns: Vec<u32> = raw.distances.keys().copied().collect();
    let mut distances = Vec::new();
    for (from, row) in &raw.distances {
        if row.len() != columns.len() {
            return Err((
                format!("distances.{from}"),
                format!(
                    "node {from}'s distance row has {} entries but {} nodes have rows",
                    row.len(),
                    columns.len()
                ),
            ));
        }
        for (to, d) in columns.iter().zip(row) {
            distances.push((NodeId(*from), NodeId(*to), *d));
        }
    }
    Ok(distances)
}

fn gpu_entry(k: usize, g: &GpuEntry, package: Option<PackageId>) -> Result<Gpu, Located> {
    Ok(Gpu {
        index: GpuIndex(g.index),
        vendor: match g.vendor {
            VendorName::Nvidia => Vendor::Nvidia,
            VendorName::Amd => Vendor::Amd,
            VendorName::Intel => Vendor::Intel,
        },
        model: g.model.clone(),
        pci: pci_at(format!("gpus[{k}].pci"), &g.pci)?,
        uuid: g.uuid.clone(),
        numa_node: g.numa_node.map(NodeId),
        package,
        pci_path: g.pci_path.clone(),
    })
}

fn nic_entry(k: usize, n: &NicEntry, package: Option<PackageId>) -> Result<Nic, Located> {
    Ok(Nic {
        name: n.name.clone(),
        kind: match n.kind {
            NicKindName::Infiniband => NicKind::Infiniband,
            NicKindName::Roce => NicKind::Roce,
            NicKindName::Efa => NicKind::Efa,
            NicKindName::Slingshot => NicKind::Slingshot,
            NicKindName::Ethernet => NicKind::Ethernet,
        },
        pci: n
            .pci
            .as_deref()
            .map(|p| pci_at(format!("nics[{k}].pci"), p))
            .transpose()?,
        numa_node: n.numa_node.map(NodeId),
        package,
        pci_path: n.pci_path.clone(),
    })
}

/// The path in the raw file of the entity an invariant violation is about.
fn subject_path(raw: &FixtureFile, subject: &Subject) -> String {
    let found = match subject {
        Subject::Machine => None,
        Subject::Node(id) => raw
            .nodes
            .iter()
            .position(|n| n.id == id.0)
            .map(|i| format!("nodes[{i}]")),
        Subject::Core(cpu) => raw.nodes.iter().enumerate().find_map(|(i, n)| {
            n.l3_groups.iter().enumerate().find_map(|(j, g)| {
                let (field, lists) = match g.threads.is_empty() {
                    true => ("cores", &g.cores),
                    false => ("threads", &g.threads),
                };
                lists.iter().enumerate().find_map(|(t, list)| {
                    list.0
                        .parse::<CpuSet>()
                        .ok()
                        .filter(|s| s.contains(*cpu))
                        .map(|_| format!("nodes[{i}].l3_groups[{j}].{field}[{t}]"))
                })
            })
        }),
        Subject::Gpu(index) => raw
            .gpus
            .iter()
            .position(|g| g.index == index.0)
            .map(|k| format!("gpus[{k}]")),
        Subject::GpuLocality(index) => raw
            .gpus
            .iter()
            .position(|g| g.index == index.0)
            .map(|k| format!("gpus[{k}].numa_node")),
        Subject::Nic(name) => raw
            .nics
            .iter()
            .position(|n| &n.name == name)
            .map(|k| format!("nics[{k}]")),
        Subject::NicLocality(name) => raw
            .nics
            .iter()
            .position(|n| &n.name == name)
            .map(|k| format!("nics[{k}].numa_node")),
        Subject::Distances => Some("distances".into()),
        Subject::Allowed => Some("allowed".into()),
        Subject::CpuKind(cpus) => raw
            .cpu_kinds
            .iter()
            .position(|k| k.cpus.0.parse::<CpuSet>().is_ok_and(|s| s == *cpus))
            .map(|k| format!("cpu_kinds[{k}].cpus")),
    };
    found.unwrap_or_default()
}

/// The on-disk form of a topology.
pub fn to_file(t: &Topology) -> FixtureFile {
    let nodes = t.nodes().iter().map(|n| node_to_entry(t, n)).collect();
    let with_rows = t.nodes_with_distances();
    let distances = with_rows
        .iter()
        .map(|from| {
            let row = with_rows
                .iter()
                .map(|to| t.distance(*from, *to).unwrap_or(0))
                .collect();
            (from.0, row)
        })
        .collect();
    // A device's package is written only where it is not its node's.
    let own_package = |package: Option<PackageId>, node: Option<NodeId>| {
        package
            .filter(|p| Some(*p) != node.and_then(|n| t.node_package(n)))
            .map(|p| p.0)
    };
    let gpus = t
        .gpus()
        .iter()
        .map(|g| GpuEntry {
            index: g.index.0,
            vendor: match g.vendor {
                Vendor::Nvidia => VendorName::Nvidia,
                Vendor::Amd => VendorName::Amd,
                Vendor::Intel => VendorName::Intel,
            },
            model: g.model.clone(),
            pci: g.pci.to_string(),
            uuid: g.uuid.clone(),
            numa_node: g.numa_node.map(|n| n.0),
            package: own_package(g.package, g.numa_node),
            pci_path: g.pci_path.clone(),
        })
        .collect();
    let nics = t
        .nics()
        .iter()
        .map(|n| NicEntry {
            name: n.name.clone(),
            kind: match n.kind {
                NicKind::Infiniband => NicKindName::Infiniband,
                NicKind::Roce => NicKindName::Roce,
                NicKind::Efa => NicKindName::Efa,
                NicKind::Slingshot => NicKindName::Slingshot,
                NicKind::Ethernet => NicKindName::Ethernet,
            },
            pci: n.pci.map(|p| p.to_string()),
            numa_node: n.numa_node.map(|x| x.0),
            package: own_package(n.package, n.numa_node),
            pci_path: n.pci_path.clone(),
        })
        .collect();
    FixtureFile {
        numaplan_topology: FORMAT_VERSION,
        name: t.name().to_string(),
        provenance: t.provenance().to_string(),
        notes: t.notes().to_vec(),
        allowed: (*t.allowed() != t.all_cpus()).then(|| CpuList(t.allowed().to_string())),
        allowed_memory_nodes: (t.allowed_memory().len() != t.nodes().len())
            .then(|| CpuList(crate::ids::node_list(t.allowed_memory()))),
        nodes,
        cpu_kinds: t
            .cpu_kinds()
            .iter()
            .map(|k| CpuKindEntry {
                cpus: CpuList(k.cpus.to_string()),
                efficiency: k.efficiency,
                info: k.info.clone(),
            })
            .collect(),
        distances,
        gpus,
        nics,
    }
}

/// A node as the file writes it, its cores as L3 groups of thread rows.
fn node_to_entry(t: &Topology, n: &NumaNode) -> NodeEntry {
    let mut groups: BTreeMap<L3Id, Vec<&Core>> = BTreeMap::new();
    for c in t.cores().iter().filter(|c| c.node == n.id) {
        groups.entry(c.l3).or_default().push(c);
    }
    let l3_groups = groups
        .into_iter()
        .map(|(id, cores)| {
            // Every core of an L3 group is in one package (`Topology::build` checks it).
            let package = cores
                .first()
                .map(|c| c.package)
                .filter(|p| Some(*p) != n.package);
            let sets: Vec<CpuSet> = cores.iter().map(|c| c.cpus.clone()).collect();
            let (threads, cores) = group_lists(&sets);
            L3Entry {
                id: id.0,
                package: package.map(|p| p.0),
                threads,
                cores,
            }
        })
        .collect();
    let cpus = t.node_cpus(n.id);
    NodeEntry {
        id: n.id.0,
        package: n.package.map(|p| p.0),
        kind: match n.kind {
            NodeKind::Cpu => NodeKindName::Cpu,
            NodeKind::Hbm => NodeKindName::Hbm,
            NodeKind::GpuMemory { .. } => NodeKindName::GpuMemory,
            NodeKind::Cxl => NodeKindName::Cxl,
            NodeKind::Nvm => NodeKindName::Nvm,
            NodeKind::Spm => NodeKindName::Spm,
            NodeKind::Memory => NodeKindName::Memory,
        },
        gpu: match n.kind {
            NodeKind::GpuMemory { gpu } => gpu.map(|g| g.to_string()),
            _ => None,
        },
        memory_mib: n.memory_mib,
        cpus: (!cpus.is_empty()).then(|| CpuList(cpus.to_string())),
        l3_groups,
    }
}

/// An L3 group's cores as the file writes them: compact `threads` rows where reading them back
/// gives exactly these cores (the same number of threads per core, numbered in step), else
/// each core's own cpulist under `cores`.
fn group_lists(cores: &[CpuSet]) -> (Vec<CpuList>, Vec<CpuList>) {
    let mut by_key: Vec<&CpuSet> = cores.iter().collect();
    by_key.sort_by_key(|c| c.first());
    let width = by_key.iter().map(|c| c.len()).max().unwrap_or(0);
    let rows: Vec<CpuSet> = (0..width)
        .map(|t| by_key.iter().filter_map(|c| c.iter().nth(t)).collect())
        .collect();
    let exact = by_key.iter().all(|c| c.len() == width)
        && rows_to_cores("", &rows).is_ok_and(|mut back| {
            back.sort_by_key(CpuSet::first);
            back.iter().eq(by_key.iter().copied())
        });
    let text =
        |sets: &mut dyn Iterator<Item = &CpuSet>| sets.map(|s| CpuList(s.to_string())).collect();
    if exact {
        (text(&mut rows.iter()), Vec::new())
    } else {
        (Vec::new(), text(&mut by_key.into_iter()))
    }
}

/// Writes a topology as fixture YAML.
pub fn dump(t: &Topology) -> String {
    let mut out = String::from(
        "# numaplan topology fixture (format: schemas/topology.schema.json in the numaplan repository)\n",
    );
    out.push_str(&yaml::emit(&to_file(t)));
    out
}

/// A content fingerprint of a topology: FNV-1a 64 of its canonical fixture text, so equal
/// machines have equal fingerprints whatever their name, provenance, notes or memory sizes.
pub fn fingerprint(t: &Topology) -> String {
    let mut content = to_file(t);
    content.name.clear();
    content.provenance.clear();
    content.notes.clear();
    // Memory sizes drift (a VM's balloon, memory taken by firmware or hot-plug) while the
    // placement, which never depends on them, stays: they are in the plan to be read only.
    for node in &mut content.nodes {
        node.memory_mib = None;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in yaml::emit(&content).bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The JSON form of the same structure (`numaplan topo --format json`).
pub fn dump_json(t: &Topology) -> String {
    let mut s = serde_json::to_string_pretty(&to_file(t))
        .expect("invariant: fixture types always serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "\
numaplan_topology: 1
name: small
nodes:
- id: 0
  package: 0
  cpus: 0-1,4-5
  l3_groups:
  - id: 0
    threads: [0-1, 4-5]
- id: 1
  package: 0
  l3_groups:
  - id: 1
    threads: [2-3, 6-7]
- id: 2
  package: 0
  kind: hbm
distances:
  0: [10, 20, 13]
  1: [20, 10, 13]
  2: [13, 13, 10]
";

    #[test]
    fn loads_and_round_trips() {
        let t = load("small.yaml", SMALL).unwrap();
        assert_eq!(t.node_cpus(NodeId(1)).to_string(), "2-3,6-7");
        assert_eq!(t.cores()[0].cpus.to_string(), "0,4");
        assert_eq!(t.distance(NodeId(2), NodeId(0)), Some(13));
        assert!(t.node(NodeId(2)).unwrap().kind.is_memory_only());
        let once = dump(&t);
        let again = dump(&load("dumped.yaml", &once).unwrap());
        assert_eq!(once, again);
    }

    #[test]
    fn cpus_summary_must_match_groups() {
        let text = SMALL.replace("cpus: 0-1,4-5", "cpus: 0-1,4-6");
        match load("f.yaml", &text).unwrap_err() {
            TopologyError::Invalid { path, message, .. } => {
                assert_eq!(path, "nodes[0].cpus");
                assert_eq!(
                    message,
                    "node 0 lists CPUs 0-1,4-6 but its L3 groups hold 0-1,4-5"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
