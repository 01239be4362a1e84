//! Quality figures of a plan on its topology (defined in docs/review.md, "Quality figures").

use schemars::JsonSchema;
use serde::Serialize;

use super::{core_owners, home_node};
use crate::plan::{Plan, RankBinding};
use crate::topology::Topology;

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Quality {
    /// Rank CPUs on their rank's home node, over all rank CPUs (0 to 1); a rank whose memory
    /// policy names nodes counts only the share of them that are local to its CPUs.
    pub numa_local: f64,
    /// Physical cores holding CPUs of two or more ranks.
    pub shared_cores: u32,
    /// Fewest and most cores of any rank.
    pub min_cores: u32,
    pub max_cores: u32,
    /// Ranks whose first NIC is on another NUMA node than the rank's home, and ranks with a NIC.
    pub remote_nics: u32,
    pub ranks_with_nic: u32,
    /// Cores in the ranks' helper pools (`cpu.helpers`), counted in the cores above.
    pub helper_cores: u32,
}

pub fn measure(plan: &Plan, topo: &Topology) -> Quality {
    let (mut local, mut total) = (0.0, 0usize);
    let (mut remote_nics, mut ranks_with_nic) = (0, 0);
    for r in &plan.ranks {
        let home = home_node(topo, r.numa_node, &r.cpus);
        total += r.cpus.len();
        if let Some(h) = home {
            let cpus = topo.node_cpus(h).intersection(&r.cpus).len();
            local += cpus as f64 * local_memory_share(topo, r);
        }
        if let Some(nic) = r.nics.first() {
            ranks_with_nic += 1;
            let nic_node = topo
                .nics()
                .iter()
                .find(|n| n.name == nic.name)
                .and_then(|n| n.numa_node);
            if nic_node.is_none() || nic_node != home {
                remote_nics += 1;
            }
        }
    }
    let shared_cores = core_owners(plan, topo)
        .iter()
        .filter(|o| o.len() > 1)
        .count() as u32;
    Quality {
        numa_local: if total == 0 {
            0.0
        } else {
            local / total as f64
        },
        shared_cores,
        min_cores: plan.ranks.iter().map(|r| r.cores).min().unwrap_or(0),
        max_cores: plan.ranks.iter().map(|r| r.cores).max().unwrap_or(0),
        remote_nics,
        ranks_with_nic,
        helper_cores: plan
            .ranks
            .iter()
            .map(|r| super::cores_of(topo, &r.helpers).len() as u32)
            .sum(),
    }
}

/// The share of a rank's memory nodes that belong to nodes holding its CPUs (1 without a
/// memory policy: first touch allocates locally).
fn local_memory_share(topo: &Topology, rank: &RankBinding) -> f64 {
    if rank.memory.nodes.is_empty() {
        return 1.0;
    }
    let local = rank
        .memory
        .nodes
        .iter()
        .filter(|n| {
            topo.cpu_node_of_memory(**n)
                .is_some_and(|c| topo.node_cpus(c).intersects(&rank.cpus))
        })
        .count();
    local as f64 / rank.memory.nodes.len() as f64
}

impl Quality {
    /// `NUMA-local 100.0%, shared cores 0, cores per rank 8-8, remote NICs 0 of 8`.
    pub fn line(&self) -> String {
        let helpers = match self.helper_cores {
            0 => String::new(),
            n => format!(", helper cores {n}"),
        };
        format!(
            "NUMA-local {}, shared cores {}, cores per rank {}-{}{helpers}, remote NICs {} of {}",
            percent(self.numa_local),
            self.shared_cores,
            self.min_cores,
            self.max_cores,
            self.remote_nics,
            self.ranks_with_nic
        )
    }
}

pub fn percent(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}
