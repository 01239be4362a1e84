//! `--emit kubelet`: the KubeletConfiguration fragment a group's node needs so that the pod of
//! `--emit k8s` is placed as planned, each setting with the reason it is there: the CPU
//! Manager (`static` and the options the plan relies on; `none` under the CPU DRA driver,
//! which cannot run beside it), the CPUs the plan leaves to the system, the Topology Manager
//! (its limit of 8 NUMA nodes raised where the machine has more) and the Memory Manager.

use super::node::NodeFacts;
use super::yaml::{Map, Yaml};
use crate::emit::EmitError;
use crate::ids::node_list;
use crate::plan::Plan;
use crate::spec::MemPolicy;
use crate::spec::kubernetes::Devices;

/// The Topology Manager refuses to start on a machine of more NUMA nodes than this unless
/// `max-allowable-numa-nodes` says more (kubelet's `defaultMaxAllowableNUMANodes`).
pub const TOPOLOGY_MANAGER_NODES: usize = 8;

/// What the Memory Manager reserves for the system on each NUMA node with CPUs, in MiB, and
/// the eviction threshold, which with `systemReserved` must add up to the reservations.
const RESERVED_MIB: u64 = 1024;
const EVICTION_MIB: u64 = 100;

/// The group's KubeletConfiguration; refused where the plan leaves no CPU to the system.
pub fn document(plan: &Plan, facts: &NodeFacts, group: &str) -> Result<Yaml, EmitError> {
    if facts.system_cpus.is_empty() {
        return Err(EmitError::KubernetesNoSystemCpus {
            group: (!group.is_empty()).then(|| group.to_string()),
        });
    }
    let dra = plan.kubernetes.devices == Devices::Dra;
    let config = Map::new()
        .set("apiVersion", "kubelet.config.k8s.io/v1beta1")
        .set("kind", "KubeletConfiguration");
    let config = cpu_manager(config, facts, dra);
    let config = topology_manager(config, facts);
    Ok(memory_manager(config, plan, facts).into())
}

fn cpu_manager(config: Map, facts: &NodeFacts, dra: bool) -> Map {
    let reserved = facts.system_cpus.to_string();
    let config = match dra {
        true => config.why(
            "cpuManagerPolicy",
            "none",
            "The CPU DRA driver (dra.cpu) gives the pod its CPUs, and cannot run beside the \
             static CPU Manager; give the driver the same reserved CPUs (its --reserved-cpus).",
        ),
        false => {
            let config = config.why(
                "cpuManagerPolicy",
                "static",
                "Exclusive CPUs for the Guaranteed pod, which the plan's ranks are bound within.",
            );
            let mut options = Map::new();
            let mut why = Vec::new();
            if facts.whole_cores && facts.smt > 1 {
                options = options.set("full-pcpus-only", "true");
                why.push("full-pcpus-only: the plan gives ranks whole cores, every thread of each");
            }
            let counts: Vec<usize> = facts.cpus_by_node.iter().map(|(_, c)| c.len()).collect();
            if counts.len() > 1 && counts.iter().all(|&c| c == counts[0]) {
                options = options.set("distribute-cpus-across-numa", "true");
                why.push("distribute-cpus-across-numa: the plan takes as many CPUs on each of its NUMA nodes");
            }
            match options.is_empty() {
                true => config,
                false => config.why("cpuManagerPolicyOptions", options, why.join("; ")),
            }
        }
    };
    config.why(
        "reservedSystemCPUs",
        reserved,
        "The CPUs the plan leaves to the system (`cpu.reserve_*`, `cpu.allowed`): no pod gets them, and no rank is planned on them.",
    )
}

fn topology_manager(config: Map, facts: &NodeFacts) -> Map {
    let used = facts.nodes_used();
    let (policy, why) = match used.len() {
        1 => (
            "single-numa-node",
            format!(
                "The pod's CPUs and devices are all on NUMA node {}.",
                node_list(&used)
            ),
        ),
        _ => (
            "restricted",
            format!(
                "The pod spans NUMA nodes {}: admitted only where its CPUs and devices are placed on the fewest nodes.",
                node_list(&used)
            ),
        ),
    };
    let config = config.why("topologyManagerPolicy", policy, why).why(
        "topologyManagerScope",
        "pod",
        "One alignment for the pod's containers together.",
    );
    match facts.numa_nodes > TOPOLOGY_MANAGER_NODES {
        true => config.why(
            "topologyManagerPolicyOptions",
            Map::new().set("max-allowable-numa-nodes", facts.numa_nodes.to_string()),
            format!(
                "The machine has {} NUMA nodes (memory-only ones count): past {TOPOLOGY_MANAGER_NODES} the Topology Manager refuses to start without this.",
                facts.numa_nodes
            ),
        ),
        false => config,
    }
}

/// The Memory Manager's `Static` policy where every rank binds its memory (the pod's memory
/// is then confined to its nodes, as the plan confines it); else `None`, since it would
/// confine a memory policy that lets memory spill (`preferred`, `interleave`).
fn memory_manager(config: Map, plan: &Plan, facts: &NodeFacts) -> Map {
    let binds = plan
        .ranks
        .iter()
        .all(|r| r.memory.policy == MemPolicy::Bind);
    if !binds {
        return config.why(
            "memoryManagerPolicy",
            "None",
            "The plan lets memory leave its nodes (`preferred`, `interleave` or none): the \
             Static policy would confine it; each rank's own policy places it.",
        );
    }
    let reservations: Vec<Yaml> = facts
        .cpu_nodes
        .iter()
        .map(|n| {
            Map::new()
                .set("numaNode", n.0)
                .set(
                    "limits",
                    Map::new().set("memory", format!("{RESERVED_MIB}Mi")),
                )
                .into()
        })
        .collect();
    let total = RESERVED_MIB * facts.cpu_nodes.len() as u64;
    config
        .why(
            "memoryManagerPolicy",
            "Static",
            "The plan binds every rank's memory to its nodes: the pod's memory is reserved there too.",
        )
        .why(
            "reservedMemory",
            reservations,
            "Memory kept from pods on each NUMA node with CPUs; the Memory Manager requires \
             its sum to equal systemReserved + kubeReserved + evictionHard's memory.",
        )
        .set(
            "systemReserved",
            Map::new().set("memory", format!("{}Mi", total - EVICTION_MIB)),
        )
        .set(
            "evictionHard",
            Map::new().set("memory.available", format!("{EVICTION_MIB}Mi")),
        )
}
