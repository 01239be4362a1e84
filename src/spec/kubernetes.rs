//! `kubernetes:` validated: what the Kubernetes manifests need beside the plan, defaults
//! applied. Passed through the plan to `--emit k8s` and `--emit kubelet`.

/// How the pod gets its devices (`kubernetes.devices`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Devices {
    /// The device plugins' counts and the static CPU Manager's CPU count: the kubelet chooses
    /// which.
    #[default]
    DevicePlugin,
    /// ResourceClaimTemplates naming the plan's devices.
    Dra,
}

/// The CPU DRA driver's mode (`kubernetes.cpus`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DraCpus {
    /// One device per CPU: the plan's exact CPUs.
    #[default]
    Individual,
    /// One device per NUMA node: the plan's CPU count on each.
    Grouped,
}

/// The workload that runs the pods (`kubernetes.workload`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    Pod,
    Job,
    LeaderWorkerSet,
    JobSet,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pod => "pod",
            Workload::Job => "job",
            Workload::LeaderWorkerSet => "leaderworkerset",
            Workload::JobSet => "jobset",
        }
    }
}

/// The Pod Security level of the namespace (`kubernetes.pod_security`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodSecurity {
    #[default]
    Privileged,
    Baseline,
    Restricted,
}

impl PodSecurity {
    pub fn name(self) -> &'static str {
        match self {
            PodSecurity::Privileged => "privileged",
            PodSecurity::Baseline => "baseline",
            PodSecurity::Restricted => "restricted",
        }
    }

    /// Whether it lets a container add `SYS_NICE` (only `privileged` does).
    pub fn allows_sys_nice(self) -> bool {
        self == PodSecurity::Privileged
    }
}

/// `kubernetes:`, defaults applied; `image` and `memory` stay unset where the spec leaves them,
/// since only `--emit k8s` needs them (and refuses their absence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubernetesSpec {
    pub image: Option<String>,
    pub memory: Option<String>,
    pub devices: Devices,
    pub cpus: DraCpus,
    /// `None`: chosen by the job's shape.
    pub workload: Option<Workload>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Whether a job without an engine runs the torchrun script rather than `numaplan exec`.
    pub torchrun: bool,
    pub args: Vec<String>,
    pub sidecars: Vec<Sidecar>,
    pub pod_security: PodSecurity,
    pub gpu_class: String,
    pub cpu_class: String,
    pub nic_class: String,
}

/// A sidecar container of every pod: Guaranteed, with its own whole CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sidecar {
    pub name: String,
    pub image: String,
    pub command: Vec<String>,
    pub cpus: u32,
    pub memory: String,
}

/// The GPU DRA driver's DeviceClass (NVIDIA's, kubernetes-sigs/dra-driver-nvidia-gpu).
pub const GPU_CLASS: &str = "gpu.nvidia.com";
/// The CPU DRA driver's DeviceClass (kubernetes-sigs/dra-driver-cpu).
pub const CPU_CLASS: &str = "dra.cpu";
/// The network DRA driver's DeviceClass (kubernetes-sigs/dranet).
pub const NIC_CLASS: &str = "dranet";

impl Default for KubernetesSpec {
    fn default() -> Self {
        KubernetesSpec {
            image: None,
            memory: None,
            devices: Devices::default(),
            cpus: DraCpus::default(),
            workload: None,
            namespace: None,
            name: None,
            torchrun: false,
            args: Vec::new(),
            sidecars: Vec::new(),
            pod_security: PodSecurity::default(),
            gpu_class: GPU_CLASS.into(),
            cpu_class: CPU_CLASS.into(),
            nic_class: NIC_CLASS.into(),
        }
    }
}

/// An RFC 1123 label (`letter_first`: an RFC 1035 one): 1-63 of `a-z`, `0-9`, `-`, neither
/// starting nor ending with `-`.
pub fn is_dns_label(s: &str, letter_first: bool) -> bool {
    let ok_chars = s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let first_ok = s
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || (!letter_first && b.is_ascii_digit()));
    (1..=63).contains(&s.len()) && ok_chars && first_ok && !s.ends_with('-')
}
