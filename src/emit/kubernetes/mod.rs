//! Kubernetes: a job as manifests (`--emit k8s`, `manifests.rs`) and its nodes' kubelet
//! settings (`--emit kubelet`, `kubelet.rs`). Unlike the launch scripts these are data, built
//! as values and written by `yaml.rs`; they read the group's machine beside its plan
//! (`node.rs`: each NUMA node's CPUs, the devices' NUMA nodes and PCIe roots), which a plan
//! does not carry. docs/kubernetes.md says what each object does.

mod claims;
mod kubelet;
mod manifests;
mod names;
mod node;
mod pod;
mod workloads;
pub mod yaml;

pub use claims::MAX_DEVICES_PER_CLAIM;
pub use kubelet::TOPOLOGY_MANAGER_NODES;
pub use manifests::{Script, manifests};
pub use names::SCRIPT_KEY as SCRIPT_NAME;

use crate::emit::{EmitError, Origin};
use crate::plan::job::JobPlan;
use crate::provenance;
use crate::topology::Topology;

/// `--emit kubelet`: one KubeletConfiguration per group (a job of one group: one).
pub fn kubelet(job: &JobPlan, machines: &[Topology], origin: &Origin) -> Result<String, EmitError> {
    let mut docs = Vec::new();
    for (plan, machine) in job.groups.iter().zip(machines) {
        let facts = node::NodeFacts::of(plan, machine);
        let group = plan.group().map(|g| g.name.as_str()).unwrap_or("");
        let comment = match group {
            "" => format!("The node of plan `{}`.", plan.topology),
            g => format!("The nodes of group `{g}` (`{}`).", plan.topology),
        };
        docs.push((vec![comment], kubelet::document(plan, &facts, group)?));
    }
    Ok(yaml::stream(
        &origin.header.lines(provenance::File::Script),
        &docs,
    ))
}
