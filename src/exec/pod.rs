//! Inside a Kubernetes pod (`exec --pod`): what the pod was given (its cpuset, the CPU DRA
//! driver's `DRA_CPUSET_<claim>`, the GPUs it sees) checked against the plan before any rank
//! starts, all or nothing. Where the plan's devices are exact (`--pod exact`: DRA with the CPU
//! driver's `individual` mode) a pod given other CPUs or GPUs is refused, naming the claim at
//! fault. Where the driver or the kubelet chose the CPUs (`--pod given`: `grouped`, the device
//! plugins) the ranks run within what was given, on the plan's NUMA nodes: each planned CPU is
//! renamed to a given CPU of the same node, in core order, so that whole cores stay whole and
//! ranks that shared CPUs still share them, and the change is said (W0228). GPUs are matched by
//! PCI address, and a rank's visibility variables are renumbered as the pod numbers its GPUs
//! (a pod given host GPUs 2, 3, 6, 7 sees them as 0-3).

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId};
use crate::pci_addr::PciAddr;
use crate::plan::Plan;
use crate::variables::VISIBILITY;

/// How the pod's CPUs were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodMode {
    /// The claims name the plan's CPUs and devices: anything else is an error.
    Exact,
    /// The CPU driver (`grouped`) or the kubelet (device plugins) chose them.
    Given,
}

/// What the pod was given, as read inside it.
#[derive(Clone, Debug, Default)]
pub struct PodFacts {
    /// The container's CPUs (its cgroup's cpuset, which a rank's own binding does not narrow).
    pub cpus: CpuSet,
    /// Each `DRA_CPUSET_<claim>` the CPU driver set: the variable and its CPUs.
    pub claimed: Vec<(String, CpuSet)>,
    /// Each NUMA node's CPUs (`/sys/devices/system/node/nodeN/cpulist`).
    pub node_cpus: Vec<(NodeId, CpuSet)>,
    /// Each CPU's core, by the core's first thread (`thread_siblings_list`).
    pub core_of: BTreeMap<u32, u32>,
    /// The GPUs the pod can use, in the order its runtime numbers them; `None` where nothing
    /// says (no device node at all).
    pub gpus: Option<Vec<PciAddr>>,
    /// What the DRA drivers' device metadata (KEP-5304) says each request of the pod's
    /// devices claim was given: the request's name (`gpu-3`, `nic-0`) and the device's PCI
    /// address.
    pub claimed_devices: Vec<(String, PciAddr)>,
}

/// Where the DRA drivers' device metadata of the pod's `devices` claim is, inside the
/// container: one directory per request, one `<driver>-metadata.json` file per driver.
pub const DEVICE_METADATA: &str =
    "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/devices";

/// The PCI addresses of the devices a metadata file lists (`metadata.resource.k8s.io`
/// `DeviceMetadata`, a stream of one object per API version, newest first: the first is
/// read), by the standard attribute `resource.kubernetes.io/pciBusID`.
pub fn metadata_pci_addresses(text: &str) -> Vec<PciAddr> {
    let Some(Ok(first)) = serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .next()
    else {
        return Vec::new();
    };
    let devices = first["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["devices"].as_array().into_iter().flatten());
    devices
        .filter_map(|d| {
            d["attributes"]["resource.kubernetes.io/pciBusID"]["string"]
                .as_str()?
                .parse()
                .ok()
        })
        .collect()
}

/// Why a pod cannot run the plan.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PodMismatch {
    #[error(
        "its cpuset ({cpuset}) is not what the CPU driver claimed for it ({variable}={claimed}): \
         the kubelet's CPU Manager placed the container too"
    )]
    CpusetNotClaimed {
        cpuset: CpuSet,
        variable: String,
        claimed: CpuSet,
    },
    #[error(
        "it was given CPUs {given}, and the plan's are {planned} ({})",
        difference(planned, given)
    )]
    CpusNotPlanned { planned: CpuSet, given: CpuSet },
    #[error(
        "the plan has {planned} CPUs on NUMA node {node} and the pod was given {given} there \
         ({cpus})",
        cpus = if given_cpus.is_empty() { "none".to_string() } else { given_cpus.to_string() }
    )]
    TooFewOnNode {
        node: NodeId,
        planned: usize,
        given: usize,
        given_cpus: CpuSet,
    },
    #[error(
        "rank {rank}'s GPU {gpu} ({pci}) is not among the pod's GPUs ({})",
        if given.is_empty() { "none".to_string() } else { given.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ") }
    )]
    GpuNotGiven {
        rank: u32,
        gpu: u32,
        pci: PciAddr,
        given: Vec<PciAddr>,
    },
    #[error(
        "its devices claim's request `{request}` was given the device at {given}, and the plan's \
         is {planned}"
    )]
    ClaimedOther {
        request: String,
        given: PciAddr,
        planned: String,
    },
    #[error(
        "rank {rank} has {what}, whose CPU lists in its environment cannot be renamed to the \
         CPUs the pod was given"
    )]
    CannotRename { rank: u32, what: &'static str },
}

fn difference(planned: &CpuSet, given: &CpuSet) -> String {
    let missing = planned.difference(given);
    let extra = given.difference(planned);
    match (missing.is_empty(), extra.is_empty()) {
        (false, false) => format!("without {missing}, with {extra}"),
        (false, true) => format!("without {missing}"),
        _ => format!("with {extra} too"),
    }
}

/// The plan as the pod runs it, and what changed (W0228's text), or why it cannot.
pub fn fit(
    plan: &Plan,
    pod: &PodFacts,
    mode: PodMode,
) -> Result<(Plan, Option<String>), PodMismatch> {
    claimed_is_cpuset(pod)?;
    claimed_devices_are_planned(plan, pod)?;
    let mut fitted = plan.clone();
    // The pod's GPUs: those of its device nodes, else those its claim's metadata lists.
    let from_claims = || {
        let mut gpus: Vec<PciAddr> = pod
            .claimed_devices
            .iter()
            .filter(|(request, _)| request.starts_with("gpu-"))
            .map(|(_, pci)| *pci)
            .collect();
        gpus.sort();
        (!gpus.is_empty()).then_some(gpus)
    };
    if let Some(gpus) = pod.gpus.clone().or_else(from_claims) {
        renumber_gpus(&mut fitted, &gpus)?;
    }
    let planned: CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
    match mode {
        PodMode::Exact if planned != pod.cpus => Err(PodMismatch::CpusNotPlanned {
            planned,
            given: pod.cpus.clone(),
        }),
        PodMode::Exact => Ok((fitted, None)),
        PodMode::Given => {
            let renamed = rename(&planned, pod)?;
            if renamed.iter().all(|(from, to)| from == to) {
                return Ok((fitted, None));
            }
            for r in &mut fitted.ranks {
                if !r.helpers.is_empty() || r.openmp.is_some() {
                    let what = match r.helpers.is_empty() {
                        true => "OpenMP places",
                        false => "a helper pool",
                    };
                    return Err(PodMismatch::CannotRename {
                        rank: r.local_rank,
                        what,
                    });
                }
                r.cpus = r.cpus.iter().map(|c| renamed[&c]).collect();
            }
            let given: CpuSet = renamed.values().copied().collect();
            Ok((
                fitted,
                Some(format!(
                    "the pod was given CPUs {} and the plan's are {planned}: the ranks run on {given}, \
                     each planned CPU renamed to one of the same NUMA node and core order",
                    pod.cpus
                )),
            ))
        }
    }
}

/// Each request of the devices claim was given the plan's device: `gpu-N` the plan's GPU N, a
/// NIC request one of the plan's NICs.
fn claimed_devices_are_planned(plan: &Plan, pod: &PodFacts) -> Result<(), PodMismatch> {
    let gpus: BTreeMap<String, PciAddr> = plan
        .ranks
        .iter()
        .flat_map(|r| &r.gpus)
        .map(|g| (format!("gpu-{}", g.index.0), g.pci))
        .collect();
    let nics: Vec<PciAddr> = plan
        .ranks
        .iter()
        .flat_map(|r| r.nics.iter().filter_map(|n| n.pci))
        .collect();
    for (request, given) in &pod.claimed_devices {
        let planned = match gpus.get(request) {
            Some(pci) if pci == given => continue,
            Some(pci) => pci.to_string(),
            None if request.starts_with("nic-") && nics.contains(given) => continue,
            None if request.starts_with("nic-") => "one of the plan's NICs".to_string(),
            None => "no device of the plan's".to_string(),
        };
        return Err(PodMismatch::ClaimedOther {
            request: request.clone(),
            given: *given,
            planned,
        });
    }
    Ok(())
}

/// Where the CPU driver said which CPUs it claimed, the container's cpuset is those.
fn claimed_is_cpuset(pod: &PodFacts) -> Result<(), PodMismatch> {
    match pod.claimed.iter().find(|(_, c)| !c.is_subset(&pod.cpus)) {
        Some((variable, claimed)) => Err(PodMismatch::CpusetNotClaimed {
            cpuset: pod.cpus.clone(),
            variable: variable.clone(),
            claimed: claimed.clone(),
        }),
        None => {
            let all: CpuSet = pod.claimed.iter().map(|(_, c)| c).collect();
            match pod.claimed.first() {
                Some((variable, _)) if all != pod.cpus => Err(PodMismatch::CpusetNotClaimed {
                    cpuset: pod.cpus.clone(),
                    variable: variable.clone(),
                    claimed: all,
                }),
                _ => Ok(()),
            }
        }
    }
}

/// Each planned CPU's given CPU: per NUMA node, the planned and the given CPUs of the node in
/// core order, paired.
fn rename(planned: &CpuSet, pod: &PodFacts) -> Result<BTreeMap<u32, u32>, PodMismatch> {
    let in_core_order = |set: &CpuSet| {
        let mut v: Vec<u32> = set.iter().collect();
        v.sort_by_key(|c| (pod.core_of.get(c).copied().unwrap_or(*c), *c));
        v
    };
    let mut renamed = BTreeMap::new();
    for (node, cpus) in &pod.node_cpus {
        let on_node = planned.intersection(cpus);
        let given = pod.cpus.intersection(cpus);
        if given.len() < on_node.len() {
            return Err(PodMismatch::TooFewOnNode {
                node: *node,
                planned: on_node.len(),
                given: given.len(),
                given_cpus: given,
            });
        }
        // The planned CPUs the pod was given keep their place; the others take the rest.
        let kept = on_node.intersection(&given);
        let (mut free, moving) = (
            in_core_order(&given.difference(&kept)).into_iter(),
            in_core_order(&on_node.difference(&kept)),
        );
        for c in kept.iter() {
            renamed.insert(c, c);
        }
        for c in moving {
            renamed.insert(c, free.next().expect("invariant: as many given as planned"));
        }
    }
    match planned.iter().find(|c| !renamed.contains_key(c)) {
        // A planned CPU on no node the pod knows: as if the node had none given.
        Some(_) => Err(PodMismatch::CpusNotPlanned {
            planned: planned.clone(),
            given: pod.cpus.clone(),
        }),
        None => Ok(renamed),
    }
}

/// Every plan GPU among the pod's, and each rank's visibility variables in the pod's numbering.
fn renumber_gpus(plan: &mut Plan, gpus: &[PciAddr]) -> Result<(), PodMismatch> {
    let mut pod_index: BTreeMap<GpuIndex, usize> = BTreeMap::new();
    for r in &plan.ranks {
        for g in &r.gpus {
            match gpus.iter().position(|p| *p == g.pci) {
                Some(i) => {
                    pod_index.insert(g.index, i);
                }
                None => {
                    return Err(PodMismatch::GpuNotGiven {
                        rank: r.local_rank,
                        gpu: g.index.0,
                        pci: g.pci,
                        given: gpus.to_vec(),
                    });
                }
            }
        }
    }
    for r in &mut plan.ranks {
        for variable in VISIBILITY {
            let Some(value) = r.env.get(variable) else {
                continue;
            };
            let renumbered: Option<Vec<String>> = value
                .split(',')
                .filter(|v| !v.is_empty())
                .map(|v| {
                    let index = GpuIndex(v.parse().ok()?);
                    pod_index.get(&index).map(|i| i.to_string())
                })
                .collect();
            if let Some(ids) = renumbered {
                r.env.insert(variable.to_string(), ids.join(","));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two ranks on a machine of 2 nodes of 2 cores of 2 threads (node 0: cores {0,4},
    /// {1,5}; node 1: {2,6}, {3,7}), rank 0 on core {0,4} with GPU 2 (0000:43:00.0) seen as
    /// CUDA_VISIBLE_DEVICES=2, rank 1 on core {2,6} with GPU 3.
    fn plan() -> Plan {
        let ranks: Vec<String> = [(2, "0000:43:00.0", "0,4", 0), (3, "0000:61:00.0", "2,6", 1)]
            .iter()
            .enumerate()
            .map(|(i, (gpu, pci, cpus, node))| {
                format!(
                    "{{rank: {i}, local_rank: {i}, gpus: [{gpu}], gpu_pci: ['{pci}'], \
                     numa_node: {node}, cpus: '{cpus}', cores: 1, \
                     memory: {{policy: bind, nodes: '{node}'}}, nics: [], \
                     env: {{CUDA_VISIBLE_DEVICES: '{gpu}'}}}}"
                )
            })
            .collect();
        crate::plan_file::test_plan("cpus: 8, numa_nodes: 2, gpus: 4", &ranks)
    }

    /// What each rank sees through CUDA_VISIBLE_DEVICES.
    fn seen(plan: &Plan) -> Vec<&str> {
        plan.ranks
            .iter()
            .map(|r| r.env["CUDA_VISIBLE_DEVICES"].as_str())
            .collect()
    }

    fn pod(cpus: &str) -> PodFacts {
        PodFacts {
            cpus: cpus.parse().unwrap(),
            claimed: Vec::new(),
            node_cpus: vec![
                (NodeId(0), "0-1,4-5".parse().unwrap()),
                (NodeId(1), "2-3,6-7".parse().unwrap()),
            ],
            core_of: [
                (0, 0),
                (4, 0),
                (1, 1),
                (5, 1),
                (2, 2),
                (6, 2),
                (3, 3),
                (7, 3),
            ]
            .into_iter()
            .collect(),
            gpus: None,
            claimed_devices: Vec::new(),
        }
    }

    fn cpus_of(plan: &Plan) -> Vec<String> {
        plan.ranks.iter().map(|r| r.cpus.to_string()).collect()
    }

    #[test]
    fn an_exact_pod_runs_the_plan_as_it_is_or_nothing() {
        let (fitted, note) = fit(&plan(), &pod("0,2,4,6"), PodMode::Exact).unwrap();
        assert_eq!(
            (cpus_of(&fitted), note),
            (vec!["0,4".to_string(), "2,6".into()], None)
        );
        let refused = fit(&plan(), &pod("1,2,5,6"), PodMode::Exact);
        assert!(
            matches!(refused, Err(PodMismatch::CpusNotPlanned { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn a_given_pod_runs_each_rank_on_whole_cores_of_its_own_node() {
        // The kubelet gave core {1,5} on node 0 and core {3,7} on node 1.
        let (fitted, note) = fit(&plan(), &pod("1,3,5,7"), PodMode::Given).unwrap();
        assert_eq!(cpus_of(&fitted), ["1,5", "3,7"]);
        assert!(note.unwrap().contains("the ranks run on 1,3,5,7"));
        // The memory policy and home node stay the plan's.
        assert_eq!(fitted.ranks[1].memory, plan().ranks[1].memory);
        // Given the plan's own CPUs: nothing changes, nothing is said.
        let (same, note) = fit(&plan(), &pod("0,2,4,6"), PodMode::Given).unwrap();
        assert_eq!((same, note), (plan(), None));
    }

    #[test]
    fn a_given_pod_short_of_a_nodes_cpus_is_refused() {
        // Four CPUs, all on node 0: node 1 has none for rank 1.
        let refused = fit(&plan(), &pod("0,1,4,5"), PodMode::Given);
        assert!(
            matches!(
                refused,
                Err(PodMismatch::TooFewOnNode {
                    node: NodeId(1),
                    planned: 2,
                    given: 0,
                    ..
                })
            ),
            "{refused:?}"
        );
    }

    #[test]
    fn a_cpuset_other_than_the_cpu_drivers_claim_is_refused() {
        let mut p = pod("0,2,4,6");
        p.claimed = vec![("DRA_CPUSET_abc".into(), "0,4".parse().unwrap())];
        let refused = fit(&plan(), &p, PodMode::Exact);
        assert!(
            matches!(refused, Err(PodMismatch::CpusetNotClaimed { .. })),
            "{refused:?}"
        );
        p.claimed = vec![("DRA_CPUSET_abc".into(), "0,2,4,6".parse().unwrap())];
        assert!(fit(&plan(), &p, PodMode::Exact).is_ok());
    }

    #[test]
    fn gpus_are_matched_by_address_and_numbered_as_the_pod_numbers_them() {
        let mut p = pod("0,2,4,6");
        // Host GPUs 1, 2, 3 handed to the pod: it sees them as 0, 1, 2.
        p.gpus = Some(
            ["0000:1b:00.0", "0000:43:00.0", "0000:61:00.0"]
                .iter()
                .map(|s| s.parse().unwrap())
                .collect(),
        );
        let (fitted, _) = fit(&plan(), &p, PodMode::Exact).unwrap();
        assert_eq!(seen(&fitted), ["1", "2"]);
        p.gpus = Some(vec!["0000:43:00.0".parse().unwrap()]);
        let refused = fit(&plan(), &p, PodMode::Exact);
        assert!(
            matches!(
                refused,
                Err(PodMismatch::GpuNotGiven {
                    rank: 1,
                    gpu: 3,
                    ..
                })
            ),
            "{refused:?}"
        );
    }

    /// A metadata file as a DRA driver writes it (the Kubernetes documentation's example,
    /// with the standard PCI attribute), a stream of one object per API version.
    const METADATA: &str = r#"{"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
      "metadata": {"name": "pod0-devices-2kqrd", "generation": 1}, "podClaimName": "devices",
      "requests": [{"name": "gpu-3", "devices": [{"driver": "gpu.nvidia.com", "pool": "node-a",
        "name": "gpu-3", "attributes": {"index": {"int": 3},
        "resource.kubernetes.io/pciBusID": {"string": "0000:61:00.0"}}}]}]}
      {"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha0"}"#;

    #[test]
    fn device_metadata_says_which_device_a_request_was_given() {
        assert_eq!(
            metadata_pci_addresses(METADATA),
            ["0000:61:00.0".parse::<PciAddr>().unwrap()]
        );
        assert!(metadata_pci_addresses("").is_empty());
        assert!(metadata_pci_addresses("{not json").is_empty());
        let mut p = pod("0,2,4,6");
        p.claimed_devices = vec![("gpu-3".into(), "0000:61:00.0".parse().unwrap())];
        // The claim's GPUs are the pod's where no device node says: GPU 3 is its only one.
        let refused = fit(&plan(), &p, PodMode::Exact);
        assert!(
            matches!(
                refused,
                Err(PodMismatch::GpuNotGiven {
                    rank: 0,
                    gpu: 2,
                    ..
                })
            ),
            "{refused:?}"
        );
        p.claimed_devices
            .push(("gpu-2".into(), "0000:43:00.0".parse().unwrap()));
        let (fitted, _) = fit(&plan(), &p, PodMode::Exact).unwrap();
        assert_eq!(seen(&fitted), ["0", "1"]);
        p.claimed_devices = vec![("gpu-3".into(), "0000:43:00.0".parse().unwrap())];
        let refused = fit(&plan(), &p, PodMode::Exact);
        assert!(
            matches!(&refused, Err(PodMismatch::ClaimedOther { request, .. }) if request == "gpu-3"),
            "{refused:?}"
        );
    }
}
