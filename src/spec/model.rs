//! `Spec`, the validated job spec the resolver sees, and its enums: ids, `CpuSet`s and named
//! choices, no strings standing for CPUs.

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId};
use crate::topology::Reading;

/// A validated job spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub name: Option<String>,
    pub command: Vec<String>,
    /// `topology:`, a file relative to the spec, or `discover`.
    pub topology: Option<crate::topology::Source>,
    pub nodes: u32,
    pub ranks_per_node: Option<u32>,
    pub gpus: GpuChoice,
    /// The key with which the spec asked for GPUs outright (`gpus: all`, `gpus: visible`,
    /// `gpus_per_rank`), where it did: then finding none is an error, not a CPU-only plan.
    pub gpus_asked: Option<&'static str>,
    pub gpus_per_rank: u32,
    pub visible: Visibility,
    pub cpu: CpuSpec,
    pub memory: MemorySpec,
    pub nic: NicPolicy,
    pub env: BTreeMap<String, String>,
    /// `openmp:`; `None` leaves OpenMP's placement to the runtime.
    pub openmp: Option<OpenMpSpec>,
    pub port: u16,
    pub master_addr: String,
    pub slurm: SlurmSpec,
    /// What the `--emit flux` script asks of Flux (`flux:`).
    pub flux: FluxSpec,
    /// Extra words of the `--emit mpirun` script's mpirun line.
    pub mpirun: MpirunSpec,
    /// What the Kubernetes manifests need beside the plan (`kubernetes:`).
    pub kubernetes: crate::spec::KubernetesSpec,
    /// `engine:`, the serving engine the ranks run.
    pub engine: Option<Engine>,
    /// What the spec says that the plan should repeat (a deprecated key), in order.
    pub warnings: Vec<crate::diag::Warning>,
    /// `allow_warnings:`, the warning codes accepted after review.
    pub allowed_warnings: Vec<crate::diag::Code>,
    /// `groups:`, each a spec of its own (the top level with the group's keys over it); empty
    /// for a job whose nodes are all alike.
    pub groups: Vec<GroupSpec>,
}

impl Spec {
    /// The job's groups: a spec without `groups:` is a job of one group, itself, unnamed and
    /// without a topology of its own (so `--topology`, else the spec's `topology:`, is its
    /// machine, as for a named group that names none). The one place that says so.
    pub fn job_groups(&self) -> Vec<JobGroup<'_>> {
        match self.groups.is_empty() {
            true => vec![JobGroup {
                name: None,
                topology: None,
                spec: self,
            }],
            false => self
                .groups
                .iter()
                .map(|g| JobGroup {
                    name: Some(&g.name),
                    topology: g.topology.as_ref(),
                    spec: &g.spec,
                })
                .collect(),
        }
    }

    /// Whether some group of the job (or all of them) has no `command`: known before anything
    /// is planned, so that a launch that needs one is refused before planning costs anything.
    pub fn lacks_command(&self, which: Groups) -> bool {
        let mut lacking = self
            .job_groups()
            .into_iter()
            .map(|g| g.spec.command.is_empty());
        match which {
            Groups::Any => lacking.any(|l| l),
            Groups::All => lacking.all(|l| l),
        }
    }
}

/// Of a job's groups: whether some or every one is meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Groups {
    Any,
    All,
}

/// One group of a job as the stages after validation see it (`Spec::job_groups`).
#[derive(Clone, Copy, Debug)]
pub struct JobGroup<'a> {
    /// `None`: the one group of a spec without `groups:`.
    pub name: Option<&'a str>,
    /// The group's own `topology:`.
    pub topology: Option<&'a crate::topology::Source>,
    pub spec: &'a Spec,
}

/// One group of a heterogeneous job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub name: String,
    /// The group's own `topology:` (the merged `spec.topology` may be the top level's).
    pub topology: Option<crate::topology::Source>,
    pub spec: Spec,
}

/// Extra words of the `--emit mpirun` script's mpirun line, passed through to the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MpirunSpec {
    pub extra: Vec<String>,
    pub openmpi: Vec<String>,
    pub mpich: Vec<String>,
}

/// Settings of the Flux job (`flux:`), passed through to the plan for `--emit flux`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FluxSpec {
    pub queue: Option<String>,
    pub requires: Option<String>,
    pub extra: Vec<String>,
}

/// Settings of the Slurm batch file, passed through to the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlurmSpec {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub time: Option<String>,
    pub exclusive: bool,
    pub extra: Vec<String>,
    pub verbose: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuChoice {
    All,
    None,
    Count(u32),
    List(Vec<GpuIndex>),
    /// `visible`: the GPUs a visibility variable names, as `(variable, value)`; the app fills it
    /// in from the environment (`None`: neither variable is set, so every GPU).
    Visible(Option<(String, String)>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visibility {
    All,
    Own,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSpec {
    pub policy: Policy,
    pub scope: Scope,
    pub smt: Smt,
    pub balance: Balance,
    pub min_cores: u32,
    pub max_cores: Option<u32>,
    /// CPUs whose whole cores no rank gets (`cpu.reserve_cpus`).
    pub reserve_cpus: CpuSet,
    /// The last N cores of every node with CPUs (`cpu.reserve_cores`).
    pub reserve_cores: u32,
    /// The first N cores of every L3 group (`cpu.reserve_per_l3`).
    pub reserve_per_l3: u32,
    pub allowed: Option<CpuSet>,
    /// `cpu.allowed_nodes`: only the CPUs of these NUMA nodes (under mpibind, its memory
    /// restriction).
    pub allowed_nodes: Option<Vec<NodeId>>,
    /// mpibind's own settings (read only under `policy: mpibind`).
    pub mpibind: MpibindOptions,
    /// Cores of each rank set aside for helper threads (`cpu.helpers`).
    pub helpers: u32,
    /// The options the spec sets explicitly, so that a policy that ignores one can say so.
    pub set: Vec<CpuOption>,
}

/// `cpu.greedy`, `cpu.gpu_optim` and `cpu.threads`: mpibind's knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpibindOptions {
    pub greedy: bool,
    pub gpu_optim: bool,
    /// mpibind's in_nthreads; `None`: its own choice.
    pub threads: Option<u32>,
}

impl Default for MpibindOptions {
    fn default() -> Self {
        MpibindOptions {
            greedy: true,
            gpu_optim: true,
            threads: None,
        }
    }
}

/// OpenMP placement inside each rank (`openmp:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenMpSpec {
    pub places: Places,
    pub bind: ProcBind,
    pub threads: Threads,
    /// Also set KMP_AFFINITY.
    pub kmp_affinity: bool,
}

/// What one OpenMP place is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Places {
    /// A compute core (its SMT siblings together).
    Cores,
    /// A compute CPU.
    Threads,
    /// No OMP_PLACES: the runtime's own.
    None,
}

/// OMP_PROC_BIND: how threads are assigned to places.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcBind {
    Close,
    Spread,
    Master,
    /// Threads are not bound (OMP_PROC_BIND=false).
    None,
}

impl ProcBind {
    /// OMP_PROC_BIND's value (and the plan's spelling).
    pub fn name(self) -> &'static str {
        match self {
            ProcBind::Close => "close",
            ProcBind::Spread => "spread",
            ProcBind::Master => "master",
            ProcBind::None => "false",
        }
    }
}

/// How many OpenMP threads a rank runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    Count(u32),
    /// One per compute core.
    Cores,
    /// One per compute CPU.
    Cpus,
    /// The number `env: {OMP_NUM_THREADS: ...}` starts with.
    FromEnv(u32),
}

/// The `cpu:` options a policy may ignore (docs/policies.md, "Options a policy ignores").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuOption {
    Scope,
    Smt,
    Balanced,
    MinCores,
    MaxCores,
    ReserveCpus,
    ReserveCores,
    ReservePerL3,
    GpuOptim,
}

impl CpuOption {
    /// The spec key (`cpu.reserve_per_l3`).
    pub fn key(self) -> &'static str {
        match self {
            CpuOption::Scope => "cpu.scope",
            CpuOption::Smt => "cpu.smt",
            CpuOption::Balanced => "cpu.balanced",
            CpuOption::MinCores => "cpu.min_cores",
            CpuOption::MaxCores => "cpu.max_cores",
            CpuOption::ReserveCpus => "cpu.reserve_cpus",
            CpuOption::ReserveCores => "cpu.reserve_cores",
            CpuOption::ReservePerL3 => "cpu.reserve_per_l3",
            CpuOption::GpuOptim => "cpu.gpu_optim",
        }
    }
}

/// A binding policy: numaplan's own, or a mode of one of the tools whose placements numaplan
/// reproduces (docs/policies.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Auto,
    Torch(TorchMode),
    GpuAffinity(AffinityMode),
    /// LLNL mpibind (docs/mpibind.md).
    Mpibind,
}

/// `torchrun --numa-binding=MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TorchMode {
    Node,
    Socket,
    Exclusive,
    CoreComplex,
}

/// NVIDIA `gpu_affinity`'s modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffinityMode {
    All,
    Single,
    SingleUnique,
    UniqueContiguous,
    UniqueInterleaved,
}

/// The policy families of docs/policies.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `torchrun --numa-binding` compatible.
    PyTorch,
    /// NVIDIA `gpu_affinity` compatible.
    GpuAffinity,
    /// numaplan's own.
    Auto,
    /// LLNL mpibind compatible.
    Mpibind,
}

impl Policy {
    /// Every policy with the name a spec and a plan give it, in the schema's order.
    pub const NAMED: [(Policy, &'static str); 11] = [
        (Policy::Auto, "auto"),
        (Policy::Torch(TorchMode::Node), "node"),
        (Policy::Torch(TorchMode::Socket), "socket"),
        (Policy::Torch(TorchMode::Exclusive), "exclusive"),
        (Policy::Torch(TorchMode::CoreComplex), "core-complex"),
        (Policy::GpuAffinity(AffinityMode::All), "all"),
        (Policy::GpuAffinity(AffinityMode::Single), "single"),
        (
            Policy::GpuAffinity(AffinityMode::SingleUnique),
            "single-unique",
        ),
        (
            Policy::GpuAffinity(AffinityMode::UniqueContiguous),
            "unique-contiguous",
        ),
        (
            Policy::GpuAffinity(AffinityMode::UniqueInterleaved),
            "unique-interleaved",
        ),
        (Policy::Mpibind, "mpibind"),
    ];

    /// What the policy reads of a machine: only mpibind walks hwloc's object tree.
    pub fn reading(self) -> Reading {
        match self {
            Policy::Mpibind => Reading::ModelAndTree,
            Policy::Auto | Policy::Torch(_) | Policy::GpuAffinity(_) => Reading::Model,
        }
    }

    pub fn family(self) -> Family {
        match self {
            Policy::Auto => Family::Auto,
            Policy::Torch(_) => Family::PyTorch,
            Policy::GpuAffinity(_) => Family::GpuAffinity,
            Policy::Mpibind => Family::Mpibind,
        }
    }

    pub fn name(self) -> &'static str {
        Policy::NAMED
            .iter()
            .find(|(p, _)| *p == self)
            .map(|(_, name)| *name)
            .expect("invariant: NAMED lists every policy")
    }

    /// The policy a spec or plan names.
    pub fn named(name: &str) -> Option<Policy> {
        Policy::NAMED
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(p, _)| *p)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Node,
    Socket,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Smt {
    All,
    One,
    /// The first N hardware threads of each core.
    Count(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balance {
    Balanced,
    Unbalanced,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemorySpec {
    /// `None`: the family's default (preferred for `auto`, none for the compatibility families).
    pub policy: Option<MemPolicy>,
    /// `None`: the rank's home node(s).
    pub nodes: Option<Vec<MemoryNode>>,
    /// `memory.required` as written; `None`: required when `policy` is written.
    pub required: Option<bool>,
}

impl MemorySpec {
    /// Whether a refused memory policy stops the job (`required`), else the rank runs without.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(self.policy.is_some())
    }
}

/// One entry of `memory.nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemoryNode {
    /// A node named by its id.
    Node(NodeId),
    /// `local+N`: the node whose id is the rank's home node's plus N (`local` is `local+0`).
    Local(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemPolicy {
    None,
    Preferred,
    Bind,
    Interleave,
}

impl MemPolicy {
    pub const ALL: [MemPolicy; 4] = [
        MemPolicy::None,
        MemPolicy::Preferred,
        MemPolicy::Bind,
        MemPolicy::Interleave,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MemPolicy::None => "none",
            MemPolicy::Preferred => "preferred",
            MemPolicy::Bind => "bind",
            MemPolicy::Interleave => "interleave",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicPolicy {
    Closest,
    None,
}

/// A serving engine that places its GPU workers itself (`engine:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
    Trtllm,
}
