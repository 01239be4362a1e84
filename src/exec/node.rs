//! Whether this node can run a plan: its shape, the CPUs this process may use and the memory
//! nodes the kernel has, read by `app` and checked before any rank starts (`exec`, `bind`).

use super::{ExecError, NodeMismatch};
use crate::cpuset::CpuSet;
use crate::plan::{MachineShape, Plan, RankBinding};
use crate::sys::{affinity, node, proc};

/// What `exec` knows of the node it runs on, read from `/proc` and `/sys` (`NodeFacts::read`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    pub host: String,
    /// Counted as the generated launchers count (`/sys`): CPUs, NUMA nodes, GPUs.
    pub shape: MachineShape,
    /// This process's CPU affinity.
    pub allowed: CpuSet,
    /// `/sys/devices/system/cpu/online`.
    pub online_cpus: CpuSet,
    /// `/sys/devices/system/node/online`.
    pub online_nodes: CpuSet,
    /// The memory nodes this process may use (`Mems_allowed_list`: a cgroup's `cpuset.mems`);
    /// `None` where unread.
    pub mems_allowed: Option<CpuSet>,
    /// Its GPUs' PCI addresses (`0000:07:00.0`), as counted in `shape`.
    pub gpu_pci: Vec<String>,
}

impl NodeFacts {
    /// This node and this process, with `gpus` the GPUs found on its PCI bus
    /// (`topology::pci_gpus::gpus`).
    pub fn read(gpus: Vec<String>) -> Result<NodeFacts, ExecError> {
        let shape = machine_shape(gpus.len());
        Ok(NodeFacts {
            host: proc::hostname(),
            allowed: affinity::own_affinity().map_err(|source| ExecError::Syscall {
                what: "read this process's CPU affinity",
                source,
            })?,
            online_cpus: node::online_cpus()
                .unwrap_or_else(|| CpuSet::range(0, shape.cpus.max(1) as u32 - 1)),
            shape,
            online_nodes: node::online_nodes().unwrap_or_else(|| [0].into_iter().collect()),
            mems_allowed: node::mems_allowed(),
            gpu_pci: gpus,
        })
    }
}

/// This machine counted as the generated launchers count it (`check_node` in the templates):
/// `/sys` CPU and NUMA node directories, and `gpus`.
pub fn machine_shape(gpus: usize) -> MachineShape {
    let (cpus, numa_nodes) = node::cpus_and_nodes();
    MachineShape {
        cpus,
        numa_nodes,
        gpus,
    }
}

/// Refuses a plan this node cannot run: a machine of another shape than the plan's topology
/// (unless `force`), or `ranks` (exec: all of the node's; bind: its own) on CPUs this machine
/// lacks or this process may not use, or memory nodes the kernel does not have or (for a
/// policy the plan requires) this process may not use.
pub fn check_node(
    plan: &Plan,
    ranks: &[RankBinding],
    node: &NodeFacts,
    force: Force,
) -> Result<(), ExecError> {
    let refuse = |why: NodeMismatch| ExecError::NotThisNode {
        host: node.host.clone(),
        why,
    };
    if plan.machine != node.shape && force == Force::No {
        return Err(refuse(NodeMismatch::Shape {
            node: node.shape,
            plan: plan.machine,
            topology: plan.topology.clone(),
        }));
    }
    for r in ranks {
        // A machine of the plan's counts whose GPUs sit elsewhere (another SKU, another
        // machine's fixture) drives other GPUs than the plan placed the ranks next to.
        if let Some(gpu) = r
            .gpus
            .iter()
            .find(|g| force == Force::No && !node.gpu_pci.contains(&g.pci.to_string()))
        {
            return Err(refuse(NodeMismatch::GpuAbsent {
                rank: r.local_rank,
                gpu: gpu.index.0,
                pci: gpu.pci.to_string(),
                present: node.gpu_pci.clone(),
            }));
        }
        let missing = r.cpus.difference(&node.allowed);
        let absent = missing.difference(&node.online_cpus);
        if !absent.is_empty() {
            return Err(refuse(NodeMismatch::CpusAbsent {
                rank: r.local_rank,
                planned: r.cpus.clone(),
                absent,
                online: node.online_cpus.clone(),
            }));
        }
        if !missing.is_empty() {
            return Err(refuse(NodeMismatch::CpusNotAllowed {
                rank: r.local_rank,
                planned: r.cpus.clone(),
                missing,
                allowed: node.allowed.clone(),
            }));
        }
        if let Some(n) = r
            .memory
            .nodes
            .iter()
            .find(|n| !node.online_nodes.contains(n.0))
        {
            return Err(refuse(NodeMismatch::MemoryNode {
                rank: r.local_rank,
                node: *n,
                online: node.online_nodes.clone(),
            }));
        }
        // The kernel narrows a policy to the allowed nodes without an error: a policy the plan
        // requires is refused here, before anything starts. One it does not require is left to
        // the memory probe (run without it, W0217).
        let planned: CpuSet = r.memory.nodes.iter().map(|n| n.0).collect();
        if let Some(allowed) = &node.mems_allowed
            && r.memory.required
            && !planned.difference(allowed).is_empty()
        {
            return Err(refuse(NodeMismatch::MemoryNotAllowed {
                rank: r.local_rank,
                memory: r.memory.numa_maps(),
                missing: planned.difference(allowed),
                allowed: allowed.clone(),
            }));
        }
    }
    Ok(())
}

/// Whether to start on a node of another shape than the plan's topology (`--force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Force {
    No,
    Yes,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ranks of one GPU each (GPUs 0 and 1 at 0000:07:00.0 and 0000:0f:00.0) on a machine
    /// of 2 CPUs, 1 node, 2 GPUs.
    fn plan() -> Plan {
        let ranks: Vec<String> = ["0000:07:00.0", "0000:0f:00.0"]
            .iter()
            .enumerate()
            .map(|(i, pci)| {
                format!(
                    "{{rank: {i}, local_rank: {i}, gpus: [{i}], gpu_pci: ['{pci}'], numa_node: 0, \
                     cpus: '{i}', cores: 1, memory: {{policy: none, nodes: ''}}, nics: [], env: {{}}}}"
                )
            })
            .collect();
        crate::plan_file::test_plan("cpus: 2, numa_nodes: 1, gpus: 2", &ranks)
    }

    fn node(gpu_pci: &[&str]) -> NodeFacts {
        NodeFacts {
            host: "n".into(),
            shape: MachineShape {
                cpus: 2,
                numa_nodes: 1,
                gpus: gpu_pci.len(),
            },
            allowed: CpuSet::range(0, 1),
            online_cpus: CpuSet::range(0, 1),
            online_nodes: [0].into_iter().collect(),
            mems_allowed: None,
            gpu_pci: gpu_pci.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_node_of_the_plans_counts_whose_gpus_sit_elsewhere_is_refused() {
        let plan = plan();
        let same = node(&["0000:07:00.0", "0000:0f:00.0"]);
        assert!(check_node(&plan, &plan.ranks, &same, Force::No).is_ok());
        let elsewhere = node(&["0000:07:00.0", "0000:47:00.0"]);
        let refused = check_node(&plan, &plan.ranks, &elsewhere, Force::No);
        match refused {
            Err(ExecError::NotThisNode {
                why: NodeMismatch::GpuAbsent { rank, gpu, .. },
                ..
            }) => assert_eq!((rank, gpu), (1, 1)),
            other => panic!("{other:?}"),
        }
        assert!(check_node(&plan, &plan.ranks, &elsewhere, Force::Yes).is_ok());
        // Only the ranks checked: rank 0's GPU is there.
        assert!(check_node(&plan, &plan.ranks[..1], &elsewhere, Force::No).is_ok());
    }
}
