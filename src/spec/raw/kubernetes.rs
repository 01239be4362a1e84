//! `kubernetes:` as written: what `--emit k8s` and `--emit kubelet` cannot read from the plan
//! (the image, the pod's memory, how devices are claimed, names), each with a safe default
//! where one exists.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the Kubernetes manifests need beside the plan (docs/kubernetes.md): `--emit k8s`,
/// `--emit kubelet`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KubernetesOptions {
    /// The container image the ranks run in, with numaplan on its PATH (required for
    /// `--emit k8s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The memory of each pod, a Kubernetes quantity (`1800Gi`): its request and limit, equal,
    /// as a Guaranteed pod needs (required for `--emit k8s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// How the pod gets its GPUs, NICs and CPUs: `device-plugin` (default: `nvidia.com/gpu`
    /// and a CPU count, the kubelet chooses which) or `dra` (ResourceClaimTemplates naming the
    /// plan's devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "device-plugin"))]
    pub devices: Option<DevicesName>,
    /// Under `devices: dra`, the CPU driver's mode (`dra.cpu`): `individual` (default: the
    /// plan's exact CPUs, one device each) or `grouped` (per NUMA node, the plan's CPU count
    /// there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "individual"))]
    pub cpus: Option<DraCpusName>,
    /// The workload that runs the pods: `pod` (one node), `job` (an Indexed Job),
    /// `leaderworkerset` or `jobset`. Default: a Pod for one node, a LeaderWorkerSet for a
    /// serving engine on several, an Indexed Job otherwise, a JobSet for a job of groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadName>,
    /// The namespace of every object (default: none written, `kubectl`'s current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The objects' name (a DNS label; default: the job's `name`, else `numaplan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the container runs, for a job without `engine:`: `exec` (default: `numaplan exec`
    /// of the plan) or `torchrun` (the `--emit torchrun` script, each rank bound by `numaplan
    /// bind`). A serving engine's pods run its script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "exec"))]
    pub launch: Option<LaunchName>,
    /// Arguments after the launch in the container: appended to every rank's command, or, for
    /// a serving engine, its script's (the model and the engine's flags: `[MODEL, --tp, "8"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Sidecars of every pod (restartable init containers: a log shipper, a metrics agent),
    /// each Guaranteed with its own whole CPUs, outside the plan's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub sidecars: Vec<SidecarOptions>,
    /// The Pod Security level the namespace enforces: `privileged` (default), `baseline` or
    /// `restricted`. The two last refuse `SYS_NICE`, which a memory policy needs: the pod then
    /// goes without it (W0226; an error where the policy is `required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "privileged"))]
    pub pod_security: Option<PodSecurityName>,
    /// The DeviceClass of the GPUs under `devices: dra` (default `gpu.nvidia.com`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "gpu.nvidia.com"))]
    pub gpu_class: Option<String>,
    /// The DeviceClass of the CPUs under `devices: dra` (default `dra.cpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "dra.cpu"))]
    pub cpu_class: Option<String>,
    /// The DeviceClass of the NICs under `devices: dra` (default `dranet`, the class of
    /// kubernetes-sigs/dranet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "dranet"))]
    pub nic_class: Option<String>,
}

/// A sidecar container (`kubernetes.sidecars`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SidecarOptions {
    /// The container's name (a DNS label; not `ranks`).
    pub name: String,
    /// Its image.
    pub image: String,
    /// Its command (default: the image's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Its whole CPUs (requests equal limits, as a Guaranteed pod needs).
    #[schemars(range(min = 1))]
    pub cpus: u32,
    /// Its memory, a Kubernetes quantity.
    pub memory: String,
}

/// `kubernetes.launch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LaunchName {
    /// `numaplan exec --pod` of the plan.
    Exec,
    /// The `--emit torchrun` script.
    Torchrun,
}

/// `kubernetes.devices`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DevicesName {
    /// Dynamic Resource Allocation (`resource.k8s.io/v1`): claims naming the plan's devices.
    Dra,
    /// The device plugins' counts (`nvidia.com/gpu`) and the static CPU Manager's CPU count.
    DevicePlugin,
}

/// `kubernetes.cpus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DraCpusName {
    /// One device per CPU: the claim names the plan's CPUs (at most 32 a claim).
    Individual,
    /// One device per NUMA node: the claim asks the plan's CPU count on each node.
    Grouped,
}

/// `kubernetes.workload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadName {
    /// A Pod: one node.
    Pod,
    /// An Indexed Job with a headless Service: the node rank is the completion index.
    Job,
    /// A LeaderWorkerSet of one group: the node rank is the worker index, the leader the
    /// master.
    Leaderworkerset,
    /// A JobSet, one replicated job per group.
    Jobset,
}

/// `kubernetes.pod_security`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PodSecurityName {
    /// No restriction: the pod adds `SYS_NICE` where the plan has a memory policy.
    Privileged,
    /// Refuses `SYS_NICE`: the ranks go without their memory policy (W0226).
    Baseline,
    /// As `baseline`, and the container runs as non-root with every capability dropped.
    Restricted,
}
