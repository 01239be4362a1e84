//! How `exec` and `bind` failures read: a node that is not the plan's, a rank that failed,
//! a launcher whose world differs from the plan's.

use crate::diag::Diagnostic;
use crate::diag::codes::*;
use crate::exec::Input;
use crate::exec::pod::{PodMismatch, PodMode};
use crate::exec::{ExecError, NodeMismatch};

pub(super) fn exec(e: &ExecError) -> Diagnostic {
    let message = e.to_string();
    match e {
        ExecError::NoCommand { input: Input::Given } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("add the program each rank runs to the job spec, e.g. `command: [python, train.py]`, or give it after `--`"),
        ExecError::NoCommand { input: Input::None } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("give the program each rank runs after `--`, e.g. `numaplan exec --nproc-per-node 2 -- python train.py`"),
        ExecError::ServerPerRank { engine, emit, .. } => Diagnostic::error(E0448_SERVER_PER_RANK, message)
            .note("nothing was started")
            .help(format!("start one server with the plan's own launch: `numaplan compile job.yaml --emit {emit} -o serve.sh`, then `./serve.sh MODEL ...`; {engine} binds each of its workers to its rank there")),
        ExecError::NoNodePlace { group, .. } => Diagnostic::error(E0410_NODE_PLACE, message).help(node_place_help(group.as_deref())),
        ExecError::NodeCount { group, .. } => Diagnostic::error(E0424_NODE_COUNT, message).help(node_place_help(group.as_deref())),
        ExecError::NodeRank { .. } => Diagnostic::error(E0425_NODE_RANK, message).help(NODE_PLACE_HELP),
        ExecError::NotThisNode { why, .. } => Diagnostic::error(E0411_NOT_THIS_NODE, message)
            .note("nothing was started")
            .help(match why {
                NodeMismatch::Shape { .. } => "compile the plan for this machine (`numaplan topo` shows it) or run it where it was made for; `--force` starts despite a different CPU, NUMA node or GPU count",
                NodeMismatch::GpuAbsent { .. } => "this is another machine's plan, whose GPUs sit elsewhere: compile the job for this machine (`numaplan topo` shows its GPUs), or run the plan where it was made for; `--force` starts anyway",
                NodeMismatch::CpusAbsent { .. } | NodeMismatch::MemoryNode { .. } => "this is another machine's plan: compile the job for this machine (`numaplan compile job.yaml` discovers it), or run the plan where it was made for",
                NodeMismatch::MemoryNotAllowed { .. } => "run where those nodes are allowed (a wider cgroup cpuset.mems), start from the job spec where it runs (`numaplan bind job.yaml -- CMD` or `exec job.yaml` plans within the allowed nodes), or say `memory: {required: false}` to run without the policy where it cannot be had",
                NodeMismatch::CpusNotAllowed { .. } => "run with those CPUs allowed (a wider taskset or cgroup, `srun --cpu-bind=none`, `mpirun --bind-to none`), or start from the job spec where it runs: `numaplan bind job.yaml -- CMD` (or `exec job.yaml`) compiles inside this process's CPUs, a container's or pod's cpuset included",
            }),
        ExecError::Pod { why, mode } => pod(why, *mode, message),
        ExecError::Bind { among_ranks, .. } => {
            let refusal = e.refusal();
            let d = Diagnostic::error(E0412_BIND, message);
            let d = match refusal.cause {
                Some(cause) => d.note(cause),
                None => d,
            };
            d.note(match among_ranks {
                true => "no rank was left running, and this process's binding is as it was",
                false => "nothing was bound or started: this process's binding is as it was",
            })
            .help(refusal.help)
        }
        ExecError::ReadBack { .. } => Diagnostic::error(E0438_READ_BACK, message)
            .note("the rank was not started, and no rank was left running")
            .help("the kernel narrowed what exec set: check this process's cpuset (`cat /sys/fs/cgroup/cpuset.cpus.effective`, `cpuset.mems.effective`) against the plan's CPUs and memory nodes"),
        ExecError::Spawn { .. } => Diagnostic::error(E0413_SPAWN, message).note("no rank was left running"),
        ExecError::LogDir { .. } => Diagnostic::error(E0426_LOG_DIR, message).note("no rank was left running"),
        ExecError::Syscall { .. } => Diagnostic::error(E0427_SYSCALL, message).note("no rank was left running"),
        ExecError::RankFailed { .. } => Diagnostic::error(E0414_RANK_FAILED, message)
            .note("the other ranks were stopped (TERM, then KILL after the grace period)")
            .help("the rank's own output above says why"),
        ExecError::Interrupted { .. } => Diagnostic::error(E0415_INTERRUPTED, message)
            .note("the signal was forwarded to every rank's process group"),
        ExecError::BindExec { .. } => Diagnostic::error(E0413_SPAWN, message)
            .note("the binding was applied; the program could not replace numaplan"),
    }
}

/// How to tell `exec` its node's place in a multi-node job.
const NODE_PLACE_HELP: &str = "run one `numaplan exec` per node under Slurm (`srun --ntasks-per-node=1`), or pass `--node-rank K --nodes N --master-addr HOST`";

/// The node place's help; of a group, what its `--nodes` and `--node-rank` count.
fn node_place_help(group: Option<&str>) -> String {
    match group {
        None => NODE_PLACE_HELP.to_string(),
        Some(name) => format!(
            "{NODE_PLACE_HELP}: N the nodes of group `{name}`, K this node's index among them"
        ),
    }
}

/// A pod whose CPUs or GPUs are not what the plan needs: each help names the claim or the
/// kubelet setting that decides it (docs/kubernetes.md).
fn pod(why: &PodMismatch, mode: PodMode, message: String) -> Diagnostic {
    let (code, help) = match (why, mode) {
        (PodMismatch::CpusetNotClaimed { .. }, _) => (
            E0457_POD_CPUS,
            "the CPU DRA driver and the kubelet's static CPU Manager both placed the container: \
             set `cpuManagerPolicy: none` on nodes where the driver runs (`numaplan compile job.yaml \
             --emit kubelet` writes it)",
        ),
        (PodMismatch::CpusNotPlanned { .. }, PodMode::Exact) => (
            E0457_POD_CPUS,
            "the pod's CPU claim (`cpus`, ResourceClaimTemplate NAME-cpus) was allocated other \
             CPUs than it names: run the CPU driver in its `individual` mode, which publishes one \
             device per CPU; where the driver or kubelet chooses the CPUs, emit with \
             `kubernetes.cpus: grouped` (the launch then runs `--pod given`)",
        ),
        (PodMismatch::CpusNotPlanned { .. } | PodMismatch::TooFewOnNode { .. }, PodMode::Given) => {
            (
                E0457_POD_CPUS,
                "under the CPU driver's `grouped` mode the claim's `node-N` request gives the node's \
             CPUs; under the device plugins the kubelet's Topology Manager keeps the pod's CPUs \
             on its GPUs' nodes (`topologyManagerPolicy: restricted`, `topologyManagerScope: pod`, \
             as `--emit kubelet` writes them): check the node's kubelet settings",
            )
        }
        (PodMismatch::TooFewOnNode { .. }, PodMode::Exact) => {
            (E0457_POD_CPUS, "check the pod's CPU claim (`cpus`)")
        }
        (PodMismatch::ClaimedOther { .. }, _) => (
            E0458_POD_GPUS,
            "the devices claim (`devices`, ResourceClaimTemplate NAME-devices) selects each \
             device by its PCI address: a driver that allocated another publishes a `pciBusID` \
             other than the device's; check the driver's ResourceSlices (`kubectl get \
             resourceslices -o yaml`)",
        ),
        (PodMismatch::GpuNotGiven { .. }, PodMode::Exact) => (
            E0458_POD_GPUS,
            "the pod's devices claim (`devices`, ResourceClaimTemplate NAME-devices) names each GPU \
             by its PCI address: check that the GPU driver publishes `pciBusID` and that the pod \
             runs on a node of the plan's machine",
        ),
        (PodMismatch::GpuNotGiven { .. }, PodMode::Given) => (
            E0458_POD_GPUS,
            "the device plugin chose other GPUs (`nvidia.com/gpu` is a count): plan the node's \
             GPUs the pod asks (a pod of all of a node's GPUs is given all), or claim them by \
             address with `kubernetes.devices: dra`",
        ),
        (PodMismatch::CannotRename { .. }, _) => (
            E0459_POD_CANNOT_RENAME,
            "claim the plan's exact CPUs (`kubernetes: {devices: dra, cpus: individual}`, the \
             launch then runs `--pod exact`), or plan without `cpu.helpers` and `openmp:` places",
        ),
    };
    Diagnostic::error(code, message)
        .note("nothing was started")
        .help(help)
}
