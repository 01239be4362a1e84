//! `Plan`: what the resolver produces and every emitter and launcher consumes. Per local rank:
//! GPUs, home NUMA node, CPUs, memory policy, NICs and environment. `check.rs`: what a plan
//! must hold, every field against the others.

pub mod check;
pub mod environment;
pub mod job;
pub mod place;
mod shown_policy;

pub use shown_policy::ShownPolicy;

use std::collections::BTreeMap;

use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId};
use crate::nic_kind::NicKind;
use crate::pci_addr::PciAddr;
use crate::spec::{
    AffinityMode, Engine, FluxSpec, MemPolicy, MpirunSpec, Policy, ProcBind, SlurmSpec, TorchMode,
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub name: Option<String>,
    pub command: Vec<String>,
    pub topology: String,
    /// The machine the plan was made for, which a node checks itself against before starting.
    pub machine: MachineShape,
    /// The machine's NICs by name, in its topology's order: what a variable naming a NIC by prefix takes beside
    /// a rank's own (NCCL's `NCCL_IB_HCA=mlx5_1` takes `mlx5_10` too). Empty in a plan file of
    /// an earlier numaplan.
    pub machine_nics: Vec<String>,
    pub policy: Policy,
    pub nodes: u32,
    pub ranks_per_node: u32,
    pub ranks: Vec<RankBinding>,
    /// CPUs the spec set aside (`cpu.reserve`, `cpu.reserve_per_l3`) that no rank may use.
    pub reserved: CpuSet,
    /// CPUs the machine allows that the spec's `cpu.allowed` leaves out (no rank may use them;
    /// `explain` draws them as not allowed). Empty without `cpu.allowed`.
    pub excluded: CpuSet,
    /// Facts the reader should know (fallbacks, restrictions), in a stable order.
    pub warnings: Vec<crate::diag::Warning>,
    /// Warning codes the spec accepts after review (`allow_warnings:`): not printed, not
    /// fatal under `--deny-warnings`; the warnings stay in the plan for its reader.
    pub allowed_warnings: Vec<crate::diag::Code>,
    /// MASTER_PORT, for launchers that set the rendezvous per node.
    pub port: u16,
    /// Batch-file settings for `--emit sbatch`.
    pub slurm: SlurmSpec,
    /// The Flux job's settings for `--emit flux`.
    pub flux: FluxSpec,
    /// Extra mpirun words for `--emit mpirun`.
    pub mpirun: MpirunSpec,
    /// What the Kubernetes manifests need beside the plan (`--emit k8s`, `--emit kubelet`).
    pub kubernetes: crate::spec::KubernetesSpec,
    /// The serving engine the ranks run (`engine:`).
    pub engine: Option<Engine>,
    /// Its place in its job (and, of a job of several groups, its group).
    pub place: place::Place,
}

impl Plan {
    /// Ranks of the whole job: of every group, else nodes x ranks per node.
    pub fn world_size(&self) -> u64 {
        self.place.world_size
    }

    /// Nodes of the whole job.
    pub fn world_nodes(&self) -> u64 {
        self.place.world_nodes
    }

    /// Its ranks on all of its nodes: nodes x ranks per node (`ranks` holds one node's).
    pub fn ranks_in_all(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.ranks_per_node)
    }

    /// Whether two of a node's ranks share a CPU (`node`, `socket`, `all`... policies).
    pub fn ranks_share_cpus(&self) -> bool {
        let all: CpuSet = self.ranks.iter().map(|r| &r.cpus).collect();
        self.ranks.iter().map(|r| r.cpus.len()).sum::<usize>() != all.len()
    }

    /// Its group, in a job of several groups.
    pub fn group(&self) -> Option<&place::Group> {
        self.place.group.as_ref()
    }

    /// Its warnings as they are told on standard error: of a group of a job of several
    /// groups, each named by its group.
    pub fn shown_warnings(&self) -> Vec<crate::diag::Warning> {
        self.warnings
            .iter()
            .map(|w| match self.group() {
                None => w.clone(),
                Some(g) => {
                    crate::diag::Warning::new(w.code, format!("group `{}`: {}", g.name, w.message))
                }
            })
            .collect()
    }

    /// Its warnings as a generated file lists them (`[W0203] ...`, `(allowed)` where the spec
    /// allows it): of a group of a job of several groups, each named by its group.
    pub fn listed_warnings(&self) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| {
                let line = w.listed(&self.allowed_warnings);
                match self.group() {
                    None => line,
                    Some(g) => format!("group `{}`: {line}", g.name),
                }
            })
            .collect()
    }

    /// Whether it is the plan of group `name` of a job of several groups.
    pub fn is_group(&self, name: &str) -> bool {
        self.group().is_some_and(|g| g.name == name)
    }

    /// What a report of the ranks of node `node` (of `nodes`) says first: where the node is
    /// in a job of several nodes (of several groups: in its group); nothing for one node.
    pub fn node_heading(&self, node: u32, nodes: u32) -> String {
        match (self.group(), self.nodes > 1) {
            (Some(g), _) => format!("group `{}`, node {node} of {nodes}:\n", g.name),
            (None, true) => format!("node {node} of {nodes}:\n"),
            (None, false) => String::new(),
        }
    }

    /// Its group as the search for a node's group and its errors show it: its name, node
    /// count and machine; `None` for the one group of a job without groups.
    pub fn group_shape(&self) -> Option<place::GroupShape> {
        Some(place::GroupShape {
            name: self.group()?.name.clone(),
            nodes: self.nodes,
            topology: self.topology.clone(),
            shape: self.machine,
        })
    }

    /// The global rank of local rank `local` on the plan's node `node`: group by group, node
    /// by node, local rank by local rank.
    pub fn global_rank(&self, node: u32, local: u32) -> u64 {
        self.place.first_rank + u64::from(node) * u64::from(self.ranks_per_node) + u64::from(local)
    }

    /// The job's node number of the plan's node `node`.
    pub fn global_node(&self, node: u32) -> u64 {
        self.place.first_node + u64::from(node)
    }
}

/// What a node must look like to run a plan: counted the same way on the node (launchers read
/// `/sys`) as in the topology, so that a node of another kind refuses to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineShape {
    /// Logical CPUs (hardware threads), allowed or not.
    pub cpus: usize,
    /// NUMA nodes, memory-only ones included.
    pub numa_nodes: usize,
    /// GPUs on the PCI bus (NVIDIA, AMD, Intel display and processing accelerators).
    pub gpus: usize,
}

impl MachineShape {
    /// `224 CPUs, 8 NUMA nodes, 8 GPUs`.
    pub fn text(&self) -> String {
        format!(
            "{} CPUs, {} NUMA nodes, {} GPUs",
            self.cpus, self.numa_nodes, self.gpus
        )
    }

    /// How `node` differs from this shape, one phrase per difference ("1 NUMA nodes, the plan
    /// expects 2"); empty when it matches.
    pub fn differences(&self, node: &MachineShape) -> Vec<String> {
        [
            (node.cpus, self.cpus, "CPUs"),
            (node.numa_nodes, self.numa_nodes, "NUMA nodes"),
            (node.gpus, self.gpus, "GPUs"),
        ]
        .into_iter()
        .filter(|(have, want, _)| have != want)
        .map(|(have, want, what)| format!("{have} {what}, the plan expects {want}"))
        .collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankBinding {
    pub local_rank: u32,
    pub gpus: Vec<PlannedGpu>,
    /// The rank's home NUMA node (the node with CPUs it is placed on); `None` for a CPU-only
    /// rank spanning several nodes.
    pub numa_node: Option<NodeId>,
    pub cpus: CpuSet,
    /// Physical cores the CPUs belong to.
    pub cores: u32,
    pub memory: MemoryBinding,
    pub nics: Vec<PlannedNic>,
    pub env: BTreeMap<String, String>,
    /// The OpenMP thread count it runs with (its `OMP_NUM_THREADS`): its fair share of its
    /// cores, `openmp:`'s count, mpibind's, or the spec's own `env:` value (its CPU count where
    /// that value is no count).
    pub threads: u32,
    /// The rank's helper pool (`cpu.helpers`), inside `cpus`; empty without one. The rest of
    /// `cpus` is the rank's compute set.
    pub helpers: CpuSet,
    /// Where its OpenMP threads run (`openmp:`).
    pub openmp: Option<OpenMpBinding>,
}

impl RankBinding {
    /// The CPUs for compute threads: the rank's CPUs less its helper pool.
    pub fn compute(&self) -> CpuSet {
        self.cpus.difference(&self.helpers)
    }

    /// Its NICs' names.
    pub fn nic_names(&self) -> Vec<String> {
        self.nics.iter().map(|n| n.name.clone()).collect()
    }
}

/// A rank's OpenMP placement: its places (inside the compute set, disjoint, in order), how
/// threads bind to them, and how many threads run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenMpBinding {
    /// Empty for `places: none`.
    pub places: Vec<CpuSet>,
    pub bind: ProcBind,
    pub threads: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedGpu {
    pub index: GpuIndex,
    pub pci: PciAddr,
    /// The GPU's UUID (`GPU-8f3c...`), where the topology knows it (NVML): a worker that sees
    /// its GPU by UUID (`CUDA_VISIBLE_DEVICES=GPU-8f3c`) finds its rank by it.
    pub uuid: Option<String>,
}

/// A rank's NIC: its name, and what a launcher names it by where the topology knows it (its
/// kind, its PCI address). A plan file of an earlier numaplan lists names alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedNic {
    pub name: String,
    pub kind: Option<NicKind>,
    pub pci: Option<PciAddr>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBinding {
    pub policy: MemPolicy,
    /// Empty for `MemPolicy::None`.
    pub nodes: Vec<NodeId>,
    /// Whether a refused policy stops the job; `false`: the rank runs with its CPUs bound and
    /// no memory policy, said by W0217 (`memory.required`, false for a default policy).
    pub required: bool,
}

impl MemoryBinding {
    /// The policy as `/proc/PID/numa_maps` spells it: `default`, `prefer:1`, `bind:0`,
    /// `interleave:0-3`.
    pub fn numa_maps(&self) -> String {
        self.shown().to_string()
    }

    /// The policy as numa_maps shows it, typed.
    pub fn shown(&self) -> ShownPolicy {
        let mode = match self.policy {
            MemPolicy::None => "default",
            MemPolicy::Preferred => "prefer",
            MemPolicy::Bind => "bind",
            MemPolicy::Interleave => "interleave",
        };
        ShownPolicy {
            mode: mode.into(),
            nodes: match self.policy {
                MemPolicy::None => Vec::new(),
                _ => self.nodes.clone(),
            },
        }
    }
}

/// Whether a plan may hand one CPU to two ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    Exclusive,
    MayShare,
}

impl Policy {
    /// Policies whose ranks never share a CPU (`exclusive`, `unique-*`, `auto`).
    pub fn sharing(self) -> Sharing {
        match self {
            Policy::Torch(TorchMode::Exclusive)
            | Policy::GpuAffinity(
                AffinityMode::UniqueContiguous | AffinityMode::UniqueInterleaved,
            )
            | Policy::Auto => Sharing::Exclusive,
            _ => Sharing::MayShare,
        }
    }
}
