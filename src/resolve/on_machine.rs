//! A plan read from a file, checked against the machine it was made for: what `Plan::check`
//! cannot know without the machine (which NUMA node holds a rank's CPUs, how many cores they
//! are, which GPU is at which PCI address) must agree with the topology. `explain` and `diff`
//! run it when they load the plan's own topology (its fingerprint the plan's).

use crate::plan::Plan;
use crate::plan::check::Located;
use crate::topology::Topology;

/// The first field of `plan` that the machine `topo` contradicts, at its path.
pub fn check_on_machine(plan: &Plan, topo: &Topology) -> Result<(), Located> {
    for (i, r) in plan.ranks.iter().enumerate() {
        let at = |key: &str| format!("ranks[{i}].{key}");
        if let Some(node) = r.numa_node {
            let cpus = topo.node_cpus(node);
            if !cpus.intersects(&r.cpus) {
                return Err((
                    at("numa_node"),
                    format!(
                        "rank {i}: node {node} has none of its CPUs {} (node {node}'s CPUs: {})",
                        r.cpus,
                        if cpus.is_empty() {
                            "none".into()
                        } else {
                            cpus.to_string()
                        }
                    ),
                ));
            }
        }
        let cores = topo.cores_touching(&r.cpus).len() as u32;
        if cores != r.cores {
            return Err((
                at("cores"),
                format!(
                    "rank {i}: it has {} cores, but its CPUs {} are {cores} core(s) of {}",
                    r.cores,
                    r.cpus,
                    topo.name()
                ),
            ));
        }
        for (j, g) in r.gpus.iter().enumerate() {
            let found = topo.gpus().iter().find(|t| t.index == g.index);
            if found.is_none_or(|t| t.pci != g.pci) {
                return Err((
                    format!("ranks[{i}].gpu_pci[{j}]"),
                    format!(
                        "rank {i}: GPU {} is at {} in the plan, {} on {}",
                        g.index,
                        g.pci,
                        found.map_or("nowhere".to_string(), |t| format!("at {}", t.pci)),
                        topo.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}
