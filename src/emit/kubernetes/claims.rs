//! Dynamic Resource Allocation (`devices: dra`): a group's ResourceClaimTemplates, written so
//! that the only allocation the scheduler can make is the plan's devices. One claim holds the
//! GPUs and NICs, a request per device naming its PCI address (`pciBusID`), with each rank's
//! GPU and NIC held to one `pcieRoot` (or `numaNode`, where the machine does not record the
//! root) as they are on the plan; the other the CPUs, since the CPU driver takes one claim per
//! container: per NUMA node, the plan's CPUs by `cpuID` (`individual`, at most 32 devices a
//! claim) or the plan's CPU count as the node's `dra.cpu/cpu` capacity (`grouped`).

use super::names::Names;
use super::node::{Device, NodeFacts};
use super::yaml::{Map, Yaml};
use crate::emit::EmitError;
use crate::spec::kubernetes::{DraCpus, KubernetesSpec};

/// The most devices Kubernetes allocates to one claim (`AllocationResultsMaxSize`,
/// k8s.io/api/resource/v1).
pub const MAX_DEVICES_PER_CLAIM: usize = 32;

/// The standard attributes' domain (`resource.kubernetes.io`).
const STANDARD: &str = "resource.kubernetes.io";

/// The CPU driver's name: the domain of its attributes (`dra.cpu/cpuID`) and capacity
/// (`dra.cpu/cpu`), whatever its DeviceClass is called.
const CPU_DRIVER: &str = "dra.cpu";

/// The name by which the pod and its container refer to each claim.
pub const DEVICES_CLAIM: &str = "devices";
pub const CPUS_CLAIM: &str = "cpus";

/// A group's claim templates, each a document with its comment: the devices' (where the plan
/// has any) and the CPUs'.
pub fn templates(
    facts: &NodeFacts,
    k8s: &KubernetesSpec,
    names: &Names,
    group: &str,
) -> Result<Vec<(Vec<String>, Yaml)>, EmitError> {
    let mut docs = Vec::new();
    if !facts.gpus.is_empty() || !facts.nics.is_empty() {
        docs.push((
            vec![format!(
                "The {}'s GPUs and NICs, each by its PCI address: no other device satisfies a request.",
                names.pod_noun(group)
            )],
            template(names, &names.claim(group, DEVICES_CLAIM), devices_spec(facts, k8s)),
        ));
    }
    let cpus = facts.cpus.len();
    if k8s.cpus == DraCpus::Individual && cpus > MAX_DEVICES_PER_CLAIM {
        return Err(EmitError::KubernetesTooManyCpus {
            group: names.group_phrase(group),
            cpus,
        });
    }
    let comment = match k8s.cpus {
        DraCpus::Individual => {
            "The plan's CPUs, each by its id (the CPU driver's `individual` mode)."
        }
        DraCpus::Grouped => {
            "The plan's CPU count on each NUMA node (the CPU driver's `grouped` mode): the driver \
             chooses which CPUs of the node."
        }
    };
    docs.push((
        vec![comment.to_string()],
        template(
            names,
            &names.claim(group, CPUS_CLAIM),
            cpus_spec(facts, k8s),
        ),
    ));
    Ok(docs)
}

fn template(names: &Names, name: &str, devices: Map) -> Yaml {
    Map::new()
        .set("apiVersion", "resource.k8s.io/v1")
        .set("kind", "ResourceClaimTemplate")
        .set("metadata", names.metadata(name))
        .set(
            "spec",
            Map::new().set("spec", Map::new().set("devices", devices)),
        )
        .into()
}

/// One request per GPU and NIC, and the constraints that hold on the plan.
fn devices_spec(facts: &NodeFacts, k8s: &KubernetesSpec) -> Map {
    let requests: Vec<Yaml> = facts
        .gpus
        .iter()
        .map(|d| (d, &k8s.gpu_class))
        .chain(facts.nics.iter().map(|d| (d, &k8s.nic_class)))
        .map(|(d, class)| device_request(d, class))
        .collect();
    let constraints = constraints(facts);
    let spec = Map::new().set("requests", requests);
    match constraints.is_empty() {
        true => spec,
        false => spec.why(
            "constraints",
            constraints,
            "Each rank's GPU and NIC share their PCIe root (else their NUMA node), as on the plan.",
        ),
    }
}

fn device_request(d: &Device, class: &str) -> Yaml {
    Map::new()
        .why(
            "name",
            d.request.as_str(),
            format!("{} at {}", d.label, d.pci),
        )
        .set(
            "exactly",
            Map::new()
                .set("deviceClassName", class)
                .set("allocationMode", "ExactCount")
                .set("count", 1u32)
                .set(
                    "selectors",
                    vec![cel(format!(
                        "device.attributes[\"{STANDARD}\"].pciBusID == \"{}\"",
                        d.pci
                    ))],
                ),
        )
        .into()
}

fn cel(expression: String) -> Yaml {
    Map::new()
        .set("cel", Map::new().set("expression", expression))
        .into()
}

/// For each rank with a GPU and a NIC: `pcieRoot` where the machine records both roots and
/// they are one, else `numaNode` where both nodes are known and one.
fn constraints(facts: &NodeFacts) -> Vec<Yaml> {
    let all: Vec<&Device> = facts.gpus.iter().chain(&facts.nics).collect();
    let find = |r: &String| all.iter().find(|d| &d.request == r).copied();
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut yaml = Vec::new();
    for (_, requests) in &facts.pairs {
        let devices: Vec<&Device> = requests.iter().filter_map(find).collect();
        if devices.len() < 2 || out.contains(requests) {
            continue;
        }
        let same = |f: &dyn Fn(&Device) -> Option<String>| {
            let first = f(devices[0])?;
            devices
                .iter()
                .all(|d| f(d).as_ref() == Some(&first))
                .then_some(())
        };
        let attribute = if same(&|d| d.pcie_root.clone()).is_some() {
            "pcieRoot"
        } else if same(&|d| d.numa_node.map(|n| n.to_string())).is_some() {
            "numaNode"
        } else {
            continue;
        };
        out.push(requests.clone());
        yaml.push(
            Map::new()
                .set("requests", requests.clone())
                .set("matchAttribute", format!("{STANDARD}/{attribute}"))
                .into(),
        );
    }
    yaml
}

/// A request per NUMA node of the plan's CPUs.
fn cpus_spec(facts: &NodeFacts, k8s: &KubernetesSpec) -> Map {
    let requests: Vec<Yaml> = facts
        .cpus_by_node
        .iter()
        .map(|(node, cpus)| {
            let exactly = Map::new().set("deviceClassName", k8s.cpu_class.as_str());
            let exactly = match k8s.cpus {
                DraCpus::Individual => {
                    let ids: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
                    exactly
                        .set("allocationMode", "ExactCount")
                        .set("count", u32::try_from(cpus.len()).unwrap_or(u32::MAX))
                        .set(
                            "selectors",
                            vec![cel(format!(
                                "device.attributes[\"{CPU_DRIVER}\"].cpuID in [{}]",
                                ids.join(", ")
                            ))],
                        )
                }
                DraCpus::Grouped => exactly
                    .set("allocationMode", "ExactCount")
                    .set("count", 1u32)
                    .set(
                        "selectors",
                        vec![cel(format!(
                            "device.attributes[\"{STANDARD}\"].numaNode == {node}"
                        ))],
                    )
                    .set(
                        "capacity",
                        Map::new().set(
                            "requests",
                            Map::new().set(&format!("{CPU_DRIVER}/cpu"), cpus.len().to_string()),
                        ),
                    ),
            };
            Map::new()
                .why(
                    "name",
                    format!("node-{node}"),
                    format!("NUMA node {node}: CPUs {cpus}"),
                )
                .set("exactly", exactly)
                .into()
        })
        .collect();
    Map::new().set("requests", requests)
}
