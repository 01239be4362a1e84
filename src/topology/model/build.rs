//! `Topology::build`: the parts of a topology, from any source, checked and put in one
//! canonical order, one function per invariant.

use std::collections::{BTreeMap, BTreeSet};

use super::{Core, Gpu, ModelError, Nic, NumaNode, Subject, Topology, TopologyParts, model_error};
use crate::cpuset::CpuSet;
use crate::ids::{L3Id, NodeId, PackageId};

impl Topology {
    /// Checks and normalises the parts.
    ///
    /// Invariants of the result: node ids are unique; every core is non-empty, in a CPU node, and
    /// no CPU is in two cores; CPU kinds are non-empty, disjoint, within the machine and never
    /// split a core; an L3 group lies in one package; memory-only nodes own no cores and
    /// CPU nodes own at least one; the allowed set is a non-empty subset of the CPUs; GPU indices,
    /// GPU PCI addresses and NIC names are unique; every node a GPU or NIC names exists and has
    /// CPUs; distances cover only existing nodes. Cores are in topology order (package, node,
    /// L3 group, key) with L3 ids renumbered 0.. in that order; CPU kinds by efficiency, then
    /// first CPU; nodes, GPUs and NICs are sorted by id, index and name.
    pub fn build(parts: TopologyParts) -> Result<Topology, ModelError> {
        let TopologyParts {
            name,
            provenance,
            notes,
            container,
            mut nodes,
            mut cores,
            mut cpu_kinds,
            distances,
            allowed,
            allowed_memory,
            mut gpus,
            mut left_out_gpus,
            mut nics,
            tree,
        } = parts;
        left_out_gpus.sort_by_key(|g| g.pci);
        sort_nodes(&mut nodes, &cores)?;
        let all = check_cores(&cores, &nodes)?;
        order_cores(&mut cores)?;
        let node_cpus = node_cpus(&nodes, &cores)?;
        let core_cpus: Vec<&CpuSet> = cores.iter().map(|c| &c.cpus).collect();
        crate::topology::cpu_kinds::check(&mut cpu_kinds, &core_cpus, &all)?;
        let (allowed, allowed_memory) = allowed_sets(allowed, allowed_memory, &all, &nodes)?;
        let distances = distance_map(distances, &nodes)?;
        check_gpus(&mut gpus, &nodes)?;
        check_nics(&mut nics, &nodes)?;
        let core_of_cpu = cores
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.cpus.iter().map(move |cpu| (cpu, i)))
            .collect();
        Ok(Topology {
            name,
            provenance,
            notes,
            container,
            nodes,
            cores,
            cpu_kinds,
            distances,
            allowed,
            allowed_memory,
            gpus,
            left_out_gpus,
            nics,
            tree,
            node_cpus,
            core_of_cpu,
        })
    }
}

/// Nodes by id, each once. A node with cores but no package of its own (hwloc 1.x puts NUMA
/// nodes above packages) is in its cores' package when they share one, as a fixture writes it.
fn sort_nodes(nodes: &mut [NumaNode], cores: &[Core]) -> Result<(), ModelError> {
    nodes.sort_by_key(|n| n.id);
    if let Some(w) = nodes.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(model_error(
            Subject::Node(w[0].id),
            format!("NUMA node {} is listed twice", w[0].id),
        ));
    }
    for n in nodes.iter_mut().filter(|n| n.package.is_none()) {
        let packages: BTreeSet<PackageId> = cores
            .iter()
            .filter(|c| c.node == n.id)
            .map(|c| c.package)
            .collect();
        if let [one] = packages.into_iter().collect::<Vec<_>>()[..] {
            n.package = Some(one);
        }
    }
    Ok(())
}

fn node_of(nodes: &[NumaNode], id: NodeId) -> Option<&NumaNode> {
    nodes.iter().find(|n| n.id == id)
}

/// Every core has CPUs that no other core has, and is in a defined node with CPUs; there is at
/// least one. Returns every CPU.
fn check_cores(cores: &[Core], nodes: &[NumaNode]) -> Result<CpuSet, ModelError> {
    let mut seen = CpuSet::new();
    for core in cores {
        let Some(key) = core.cpus.first() else {
            return Err(model_error(Subject::Machine, "a core has no CPUs"));
        };
        if core.cpus.intersects(&seen) {
            let dup = core.cpus.intersection(&seen);
            return Err(model_error(
                Subject::Core(key),
                format!("CPUs {dup} belong to more than one core"),
            ));
        }
        seen = seen.union(&core.cpus);
        match node_of(nodes, core.node) {
            None => {
                return Err(model_error(
                    Subject::Core(key),
                    format!(
                        "core {key} is in NUMA node {}, which is not defined",
                        core.node
                    ),
                ));
            }
            Some(n) if n.kind.is_memory_only() => {
                return Err(model_error(
                    Subject::Node(n.id),
                    format!(
                        "NUMA node {} is memory-only ({}) but owns CPUs {}",
                        n.id,
                        n.kind.name(),
                        core.cpus
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if cores.is_empty() {
        return Err(model_error(Subject::Machine, "the topology has no CPUs"));
    }
    Ok(seen)
}

/// L3 groups lie in one package each; cores in topology order (package, node, L3 group, key)
/// with L3 ids renumbered 0.. in that order.
fn order_cores(cores: &mut [Core]) -> Result<(), ModelError> {
    let mut l3_package: BTreeMap<L3Id, PackageId> = BTreeMap::new();
    for core in cores.iter() {
        if let Some(p) = l3_package.insert(core.l3, core.package)
            && p != core.package
        {
            return Err(model_error(
                Subject::Core(core.key()),
                format!(
                    "L3 group {} spans packages {} and {}",
                    core.l3, p, core.package
                ),
            ));
        }
    }
    cores.sort_by_key(|c| (c.package, c.node, c.key()));
    let mut renumber: BTreeMap<L3Id, L3Id> = BTreeMap::new();
    for core in cores.iter() {
        let next = L3Id(renumber.len() as u32);
        renumber.entry(core.l3).or_insert(next);
    }
    for core in cores.iter_mut() {
        core.l3 = renumber[&core.l3];
    }
    cores.sort_by_key(|c| (c.package, c.node, c.l3, c.key()));
    Ok(())
}

/// Each node's CPUs; a CPU node must have some.
fn node_cpus(nodes: &[NumaNode], cores: &[Core]) -> Result<BTreeMap<NodeId, CpuSet>, ModelError> {
    let mut node_cpus: BTreeMap<NodeId, CpuSet> =
        nodes.iter().map(|n| (n.id, CpuSet::new())).collect();
    for core in cores {
        let set = node_cpus
            .get_mut(&core.node)
            .expect("invariant: checked above");
        *set = set.union(&core.cpus);
    }
    for n in nodes {
        if !n.kind.is_memory_only() && node_cpus[&n.id].is_empty() {
            return Err(model_error(
                Subject::Node(n.id),
                format!(
                    "NUMA node {} is a CPU node but has no cores; mark it memory-only (e.g. `kind: hbm`)",
                    n.id
                ),
            ));
        }
    }
    Ok(node_cpus)
}

/// The CPUs and memory nodes this process may use (all, when the source says nothing): within
/// the machine, and not empty.
fn allowed_sets(
    allowed: Option<CpuSet>,
    allowed_memory: Option<Vec<NodeId>>,
    all: &CpuSet,
    nodes: &[NumaNode],
) -> Result<(CpuSet, Vec<NodeId>), ModelError> {
    let allowed = allowed.unwrap_or_else(|| all.clone());
    if !allowed.is_subset(all) {
        return Err(model_error(
            Subject::Allowed,
            format!(
                "allowed CPUs {} are not in the machine (it has {all})",
                allowed.difference(all)
            ),
        ));
    }
    let node_ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
    let mut allowed_memory = allowed_memory.unwrap_or_else(|| node_ids.clone());
    allowed_memory.sort();
    allowed_memory.dedup();
    if let Some(n) = allowed_memory.iter().find(|n| !node_ids.contains(n)) {
        return Err(model_error(
            Subject::Allowed,
            format!("allowed memory node {n} is not in the machine"),
        ));
    }
    if allowed_memory.is_empty() {
        return Err(model_error(Subject::Allowed, "no memory node is allowed"));
    }
    if allowed.is_empty() {
        return Err(model_error(Subject::Allowed, "no CPU is allowed"));
    }
    Ok((allowed, allowed_memory))
}

/// Distances by (from, to), between defined nodes only.
fn distance_map(
    distances: Vec<(NodeId, NodeId, u32)>,
    nodes: &[NumaNode],
) -> Result<BTreeMap<(NodeId, NodeId), u32>, ModelError> {
    let mut map = BTreeMap::new();
    for (a, b, d) in distances {
        for id in [a, b] {
            if node_of(nodes, id).is_none() {
                return Err(model_error(
                    Subject::Distances,
                    format!("distances name NUMA node {id}, which is not defined"),
                ));
            }
        }
        map.insert((a, b), d);
    }
    Ok(map)
}

/// A device's `numa_node`, when it has one, is a defined node with CPUs.
fn check_locality(
    nodes: &[NumaNode],
    subject: Subject,
    what: &str,
    node: Option<NodeId>,
) -> Result<(), ModelError> {
    let Some(id) = node else {
        return Ok(());
    };
    match node_of(nodes, id) {
        None => Err(model_error(
            subject,
            format!("{what} is on NUMA node {id}, which is not defined"),
        )),
        Some(n) if n.kind.is_memory_only() => Err(model_error(
            subject,
            format!(
                "{what} is on NUMA node {id}, which is memory-only; a device's `numa_node` is the node with CPUs of its PCI locality"
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// GPUs by index, each index and PCI address once, on defined nodes.
fn check_gpus(gpus: &mut [Gpu], nodes: &[NumaNode]) -> Result<(), ModelError> {
    gpus.sort_by_key(|g| g.index);
    let mut pci_seen = BTreeSet::new();
    for (i, g) in gpus.iter().enumerate() {
        if i > 0 && gpus[i - 1].index == g.index {
            return Err(model_error(
                Subject::Gpu(g.index),
                format!("GPU index {} is used twice", g.index),
            ));
        }
        if !pci_seen.insert(g.pci) {
            return Err(model_error(
                Subject::Gpu(g.index),
                format!("PCI address {} is used by two GPUs", g.pci),
            ));
        }
        check_locality(
            nodes,
            Subject::GpuLocality(g.index),
            &format!("GPU {}", g.index),
            g.numa_node,
        )?;
    }
    Ok(())
}

/// NICs by name (`mlx5_2` before `mlx5_10`), each name once, on defined nodes.
fn check_nics(nics: &mut [Nic], nodes: &[NumaNode]) -> Result<(), ModelError> {
    nics.sort_by(|a, b| natural_key(&a.name).cmp(&natural_key(&b.name)));
    for (i, nic) in nics.iter().enumerate() {
        if i > 0 && nics[i - 1].name == nic.name {
            return Err(model_error(
                Subject::Nic(nic.name.clone()),
                format!("NIC `{}` is listed twice", nic.name),
            ));
        }
        check_locality(
            nodes,
            Subject::NicLocality(nic.name.clone()),
            &format!("NIC `{}`", nic.name),
            nic.numa_node,
        )?;
    }
    Ok(())
}

/// Orders device names as people do: `mlx5_2` before `mlx5_10`.
fn natural_key(name: &str) -> (&str, u64, &str) {
    let digits_start = name
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map_or(name.len(), |(i, _)| i);
    let number = name[digits_start..].parse().unwrap_or(0);
    (&name[..digits_start], number, name)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    fn node(id: u32, kind: NodeKind) -> NumaNode {
        NumaNode {
            id: NodeId(id),
            package: Some(PackageId(0)),
            kind,
            memory_mib: None,
        }
    }

    fn core(cpus: &str, node: u32, l3: u32) -> Core {
        Core {
            cpus: cpus.parse().unwrap(),
            package: PackageId(0),
            node: NodeId(node),
            l3: L3Id(l3),
        }
    }

    fn parts() -> TopologyParts {
        TopologyParts {
            name: "t".into(),
            nodes: vec![node(1, NodeKind::Cpu), node(0, NodeKind::Cpu)],
            cores: vec![
                core("3,7", 1, 9),
                core("0,4", 0, 5),
                core("1,5", 0, 5),
                core("2,6", 1, 9),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn build_sorts_and_renumbers() {
        let t = Topology::build(parts()).unwrap();
        let keys: Vec<u32> = t.cores().iter().map(|c| c.key()).collect();
        assert_eq!(keys, [0, 1, 2, 3]);
        let l3: Vec<u32> = t.cores().iter().map(|c| c.l3.0).collect();
        assert_eq!(l3, [0, 0, 1, 1]);
        assert_eq!(t.node_cpus(NodeId(1)).to_string(), "2-3,6-7");
        assert_eq!(t.allowed().to_string(), "0-7");
        assert_eq!(t.smt_width(), 2);
    }

    #[test]
    fn nics_sort_naturally() {
        let mut names = ["mlx5_10", "mlx5_9", "hsn0", "mlx5_1", "eth"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["eth", "hsn0", "mlx5_1", "mlx5_9", "mlx5_10"]);
    }

    #[test]
    fn build_rejects_broken_parts() {
        let mut p = parts();
        p.cores.push(core("7", 1, 9));
        assert_eq!(
            Topology::build(p).unwrap_err().message,
            "CPUs 7 belong to more than one core"
        );
        let mut p = parts();
        p.nodes.push(node(2, NodeKind::Cpu));
        assert!(
            Topology::build(p)
                .unwrap_err()
                .message
                .contains("has no cores")
        );
        let mut p = parts();
        p.nodes[0].kind = NodeKind::Hbm;
        assert!(
            Topology::build(p)
                .unwrap_err()
                .message
                .contains("memory-only")
        );
        let mut p = parts();
        p.allowed = Some("8".parse().unwrap());
        assert!(
            Topology::build(p)
                .unwrap_err()
                .message
                .contains("not in the machine")
        );
    }
}
