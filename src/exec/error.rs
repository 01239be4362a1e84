//! `ExecError`: why ranks could not be started, or how the job ended badly (E041x).

use std::fmt;
use std::path::PathBuf;
use std::process::ExitStatus;

use crate::cpuset::CpuSet;
use crate::ids::NodeId;
use crate::plan::{MachineShape, RankBinding};
use crate::sys::affinity::Call;
use crate::sys::confinement::Confinement;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("{}", match input {
        Input::Given => "the plan has no `command` for the ranks to run",
        Input::None => "no program for the ranks to run",
    })]
    /// `input`: whether a job spec or plan was given (where the command could go).
    NoCommand { input: Input },
    #[error(
        "the command starts {engine}'s server, and `{command}` would start it once per rank: \
         {ranks} servers on this node, each over GPUs its rank does not own"
    )]
    /// A serving engine's server (`vllm serve`, SGLang's) under `exec` or `bind` of a plan of
    /// several ranks a node: one server per rank, where the engine's own launch starts one.
    ServerPerRank {
        engine: &'static str,
        /// The engine's `--emit` word.
        emit: &'static str,
        command: &'static str,
        ranks: u32,
    },
    #[error("{} is for {plan} node(s), but this job has {job}", planned(group.as_deref()))]
    NodeCount {
        plan: u32,
        job: u32,
        /// Of a job of several groups: the group's name (whose nodes `plan` counts).
        group: Option<String>,
    },
    #[error("node rank {node_rank} is not below the node count {nodes}")]
    NodeRank { node_rank: u32, nodes: u32 },
    #[error("{}", no_node_place(*nodes, *world, group.as_deref()))]
    NoNodePlace {
        /// The plan's nodes (of a group: the group's), which `--nodes` counts.
        nodes: u32,
        /// The whole job's nodes.
        world: u64,
        group: Option<String>,
    },
    #[error("this node ({host}) cannot run the plan: {why}")]
    NotThisNode { host: String, why: NodeMismatch },
    /// Inside a Kubernetes pod (`--pod`), what the pod was given is not what the plan needs.
    #[error("this pod cannot run the plan: {why}")]
    Pod {
        why: super::pod::PodMismatch,
        mode: super::pod::PodMode,
    },
    #[error("{}", bind_failure(*rank, cpus, memory, *call, source))]
    Bind {
        rank: u32,
        cpus: CpuSet,
        /// The planned memory policy, as numa_maps spells it.
        memory: String,
        /// The call the kernel refused; `None`: the binding could not be prepared (a CPU or
        /// node past what a mask holds).
        call: Option<Call>,
        source: std::io::Error,
        /// What confines this process (seccomp, `CAP_SYS_NICE`), for the error's help.
        confinement: Confinement,
        /// Whether ranks were started beside this one (`exec`, which stops them), or the
        /// process binds itself alone (`bind`, `numaplan.bind()`).
        among_ranks: bool,
    },
    #[error(
        "rank {rank}'s binding reads back otherwise than exec applied it: {}",
        read_back_difference(planned_cpus, actual_cpus.as_ref(), planned_memory, actual_memory.as_deref())
    )]
    ReadBack {
        rank: u32,
        planned_cpus: CpuSet,
        actual_cpus: Option<CpuSet>,
        planned_memory: String,
        actual_memory: Option<String>,
    },
    #[error("cannot start rank {rank} (`{program}`): {source}")]
    Spawn {
        rank: u32,
        program: String,
        source: std::io::Error,
    },
    #[error("cannot write rank logs to `{}`: {source}", path.display())]
    LogDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot {what}: {source}")]
    Syscall {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("rank {rank} {}", super::status::describe(*status))]
    RankFailed { rank: u32, status: ExitStatus },
    #[error("numaplan received {}; the ranks were stopped", crate::sys::signals::signal_name(*signal))]
    Interrupted { signal: i32 },
    #[error("cannot run `{program}`: {source}")]
    BindExec {
        program: String,
        source: std::io::Error,
    },
}

/// E0410's message: of a group, its own node count (what `--nodes` says) beside the job's.
fn no_node_place(nodes: u32, world: u64, group: Option<&str>) -> String {
    match group {
        None => format!("a plan for {nodes} nodes needs this node's place in the job"),
        Some(name) => format!(
            "group `{name}` is for {nodes} node(s) of a job of {world}, and needs this node's \
             place in the group"
        ),
    }
}

/// What a node count is of: `the plan`, or `group `rollout``.
fn planned(group: Option<&str>) -> String {
    match group {
        Some(name) => format!("group `{name}`"),
        None => "the plan".to_string(),
    }
}

/// `cannot bind rank 3 to CPUs 8-15 (sched_setaffinity): ...`, or for the memory policy
/// `cannot set rank 3's memory policy bind:1 (set_mempolicy): ...`: the message names the call
/// that failed, and speaks of CPUs only when the CPU call did.
fn bind_failure(
    rank: u32,
    cpus: &CpuSet,
    memory: &str,
    call: Option<Call>,
    source: &std::io::Error,
) -> String {
    match call {
        Some(call) if call.is_memory() => format!(
            "cannot set rank {rank}'s memory policy {memory} ({}): {source}",
            call.name()
        ),
        Some(call) => format!(
            "cannot bind rank {rank} to CPUs {cpus} ({}): {source}",
            call.name()
        ),
        None => format!("cannot bind rank {rank} to CPUs {cpus}: {source}"),
    }
}

/// `CPUs 0-1, read back as 1`, `memory bind:0-1, read back as bind:0`.
fn read_back_difference(
    planned_cpus: &CpuSet,
    actual_cpus: Option<&CpuSet>,
    planned_memory: &str,
    actual_memory: Option<&str>,
) -> String {
    let mut parts = Vec::new();
    match actual_cpus {
        Some(actual) if actual == planned_cpus => {}
        Some(actual) => parts.push(format!("CPUs {planned_cpus}, read back as {actual}")),
        None => parts.push(format!("CPUs {planned_cpus}, which could not be read back")),
    }
    match actual_memory {
        Some(actual) if actual == planned_memory => {}
        Some(actual) => parts.push(format!("memory {planned_memory}, read back as {actual}")),
        None if planned_memory == "default" => {}
        None => parts.push(format!(
            "memory {planned_memory}, which could not be read back"
        )),
    }
    parts.join("; ")
}

/// Whether a job spec or plan was given: where a missing command could go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Given,
    None,
}

/// Why a node cannot run a plan, which decides what can be done about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeMismatch {
    /// Another CPU, NUMA node or GPU count than the plan's topology (`--force` starts anyway).
    Shape {
        node: MachineShape,
        plan: MachineShape,
        topology: String,
    },
    /// A rank's GPU, by the PCI address the plan records, that this machine does not have
    /// (`--force` starts anyway).
    GpuAbsent {
        rank: u32,
        gpu: u32,
        pci: String,
        present: Vec<String>,
    },
    /// Planned CPUs this machine does not have.
    CpusAbsent {
        rank: u32,
        planned: CpuSet,
        absent: CpuSet,
        online: CpuSet,
    },
    /// Planned CPUs outside this process's affinity (taskset, a cgroup, a Slurm step).
    CpusNotAllowed {
        rank: u32,
        planned: CpuSet,
        missing: CpuSet,
        allowed: CpuSet,
    },
    /// A memory node this machine does not have.
    MemoryNode {
        rank: u32,
        node: NodeId,
        online: CpuSet,
    },
    /// Memory nodes of a required policy outside this process's `cpuset.mems`.
    MemoryNotAllowed {
        rank: u32,
        /// The policy, as numa_maps spells it.
        memory: String,
        missing: CpuSet,
        allowed: CpuSet,
    },
}

impl fmt::Display for NodeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeMismatch::Shape {
                node,
                plan,
                topology,
            } => write!(
                f,
                "it has {}; it does not look like topology `{topology}`",
                plan.differences(node).join("; ")
            ),
            NodeMismatch::GpuAbsent {
                rank,
                gpu,
                pci,
                present,
            } => write!(
                f,
                "rank {rank} drives GPU {gpu} at PCI address {pci}, which this machine does not \
                 have (its GPUs are at {})",
                match present.as_slice() {
                    [] => "no address it could read".to_string(),
                    p => p.join(", "),
                }
            ),
            NodeMismatch::CpusAbsent {
                rank,
                planned,
                absent,
                online,
            } => write!(
                f,
                "rank {rank} is planned on CPUs {planned}, and CPUs {absent} do not exist here \
                 (this machine has CPUs {online})"
            ),
            NodeMismatch::CpusNotAllowed {
                rank,
                planned,
                missing,
                allowed,
            } => write!(
                f,
                "rank {rank} is planned on CPUs {planned}, and CPUs {missing} are outside this \
                 process's affinity (it may use CPUs {allowed}: a taskset, cgroup cpuset, Slurm \
                 step or MPI binding narrows it)"
            ),
            NodeMismatch::MemoryNode { rank, node, online } => write!(
                f,
                "rank {rank} binds memory to NUMA node {node}, which this node does not have \
                 (online: {online})"
            ),
            NodeMismatch::MemoryNotAllowed {
                rank,
                memory,
                missing,
                allowed,
            } => write!(
                f,
                "rank {rank}'s memory policy is {memory}, and nodes {missing} are outside the \
                 memory nodes this process may use ({allowed}: a cgroup's cpuset.mems), which \
                 the kernel would narrow it to without a word"
            ),
        }
    }
}

impl ExecError {
    /// Binding `binding` as rank `rank` was refused: by `call`, or before any call (`None`: a
    /// CPU or node past what a mask holds).
    pub fn bind(
        rank: u32,
        binding: &RankBinding,
        call: Option<Call>,
        source: std::io::Error,
    ) -> ExecError {
        ExecError::Bind {
            rank,
            cpus: binding.cpus.clone(),
            memory: binding.memory.numa_maps(),
            call,
            source,
            confinement: Confinement::of_self(),
            among_ranks: true,
        }
    }

    /// The error of a process that binds itself alone (`bind`): no other rank was started.
    pub fn alone(mut self) -> ExecError {
        if let ExecError::Bind { among_ranks, .. } = &mut self {
            *among_ranks = false;
        }
        self
    }

    /// The job's exit status: a failed rank's status (128 + signal for a signal death), 128 +
    /// the signal numaplan received, else 1 (bad input or a mismatch) or 3 (the environment).
    pub fn exit_code(&self) -> i32 {
        match self {
            ExecError::RankFailed { status, .. } => super::status::exit_code(*status),
            ExecError::Interrupted { signal } => 128 + signal,
            // As `env`, `nice` and numactl: 127 when the program is not found, 126 otherwise.
            // `exec` too: the program a rank runs is not found (127) or cannot be run (126).
            ExecError::BindExec { source, .. } | ExecError::Spawn { source, .. } => {
                match source.kind() {
                    std::io::ErrorKind::NotFound => 127,
                    _ => 126,
                }
            }
            ExecError::Bind { .. }
            | ExecError::ReadBack { .. }
            | ExecError::LogDir { .. }
            | ExecError::Syscall { .. } => 3,
            _ => 1,
        }
    }
}

/// Why the kernel refused `call` with EPERM, from what confines this process: a seccomp filter
/// without `CAP_SYS_NICE` (Docker's default profile, containerd's `RuntimeDefault`), one that
/// refuses even with it, or no filter at all.
pub fn refusal_cause(call: Call, confinement: &Confinement) -> String {
    let name = call.name();
    match (confinement.filtered(), confinement.sys_nice) {
        (true, false) => format!(
            "this process runs under a seccomp filter (`Seccomp: 2` in /proc/self/status) \
             without CAP_SYS_NICE{}: Docker's default profile and containerd's RuntimeDefault \
             (Kubernetes) allow {name} only with CAP_SYS_NICE",
            confinement
                .container
                .map(|c| format!(", in {c}"))
                .unwrap_or_default(),
        ),
        (true, true) => format!(
            "this process runs under a seccomp filter (`Seccomp: 2` in /proc/self/status) that \
             refuses {name} even with CAP_SYS_NICE"
        ),
        (false, _) => format!(
            "the kernel refused {name} without a seccomp filter in place: a security module \
             (SELinux, AppArmor) or a sandbox may forbid it"
        ),
    }
}

/// Why a binding call was refused, where this process's status says, and what to do.
pub struct Refusal {
    pub cause: Option<String>,
    pub help: &'static str,
}

/// What to do about a memory policy a container refuses.
const MEMORY_REFUSED_HELP: &str = "add CAP_SYS_NICE (`docker run --cap-add SYS_NICE`; Kubernetes: `securityContext.capabilities.add: [SYS_NICE]`), or run without a memory policy: `memory: {policy: none}`, or `memory: {required: false}` to run without it only where it is refused";

impl ExecError {
    /// For a refused binding: a memory call refused with EPERM is a container's seccomp profile
    /// without `CAP_SYS_NICE` (said so where `/proc/self/status` shows both); anything else is
    /// about the CPUs or the nodes the call named, never the other.
    pub fn refusal(&self) -> Refusal {
        let ExecError::Bind {
            call,
            source,
            confinement,
            ..
        } = self
        else {
            return Refusal {
                cause: None,
                help: "check the plan against `numaplan topo` on this node",
            };
        };
        match call {
            Some(call) if call.is_memory() && source.raw_os_error() == Some(libc::EPERM) => {
                Refusal {
                    cause: Some(refusal_cause(*call, confinement)),
                    help: MEMORY_REFUSED_HELP,
                }
            }
            Some(call) if call.is_memory() => Refusal {
                cause: None,
                help: "check the plan's memory nodes against the nodes this process may use (`cpuset.mems`; `numaplan topo` shows them)",
            },
            _ => Refusal {
                cause: None,
                help: "check the plan's CPUs against the CPUs this process may use (a cpuset that shrank, a taskset; `numaplan topo` shows them)",
            },
        }
    }
}
