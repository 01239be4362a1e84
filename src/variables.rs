//! The environment variables of the launchers and GPU runtimes that numaplan reads and sets,
//! each list written once: torchrun's numbering, the MPI, PMI, PALS, Flux and Slurm rank and
//! size variables, and each vendor's GPU visibility variable. `resolve` sets them in a plan,
//! the batch files take some from Slurm, and `rank/` reads them to tell which rank a process is.

/// What tells a process started by someone else's code its local rank (a number or `gpu`), as
/// `bind --local-rank` does. The user's alone: numaplan reads it and never sets it.
pub const NUMAPLAN_LOCAL_RANK: &str = "NUMAPLAN_LOCAL_RANK";
/// The plan a rank was started from, where numaplan (and `numaplan.check_binding()`) finds it
/// when given none: a path, `env:VAR`, or the plan itself (the generated scripts hand it so).
pub const NUMAPLAN_PLAN: &str = "NUMAPLAN_PLAN";
/// Which group of a plan of several groups this node runs (`rank::group`).
pub const NUMAPLAN_GROUP: &str = "NUMAPLAN_GROUP";
/// How a Kubernetes pod was given its CPUs (`exact`, `given`), which the `--emit k8s`
/// manifests set and `exec` and `bind` read as `exec --pod`.
pub const NUMAPLAN_POD: &str = "NUMAPLAN_POD";
/// A pod's node rank, which the `--emit k8s` manifests set from the pod's index.
pub const NUMAPLAN_NODE_RANK: &str = "NUMAPLAN_NODE_RANK";

/// The mark of a plan's rank (`ids::Mark`, `PLAN_ID:LOCAL_RANK`), which `exec`, `bind` and
/// `numaplan.bind()` set in every rank and `verify --match` reads.
pub const NUMAPLAN_BOUND: &str = "NUMAPLAN_BOUND";

/// torchrun's numbering, each as torchrun sets it in every worker.
pub const RANK: &str = "RANK";
pub const WORLD_SIZE: &str = "WORLD_SIZE";
pub const LOCAL_RANK: &str = "LOCAL_RANK";
pub const LOCAL_WORLD_SIZE: &str = "LOCAL_WORLD_SIZE";
/// The node's rank (torchrun's agent's); `NODE_RANK` is Lightning's and torch's older spelling.
pub const GROUP_RANK: &str = "GROUP_RANK";
pub const NODE_RANK: &str = "NODE_RANK";
pub const MASTER_ADDR: &str = "MASTER_ADDR";
pub const MASTER_PORT: &str = "MASTER_PORT";

/// torchrun's numbering, all of it.
pub const TORCHRUN_NUMBERING: [&str; 8] = [
    RANK,
    WORLD_SIZE,
    LOCAL_RANK,
    LOCAL_WORLD_SIZE,
    GROUP_RANK,
    NODE_RANK,
    MASTER_ADDR,
    MASTER_PORT,
];

/// The numbering that says where a node is in a job of several nodes: set by the launcher that
/// knows it (`exec --node-rank`, torchrun, the batch files), and in a one-node plan by the plan.
pub const NODE_PLACE: [&str; 4] = [RANK, GROUP_RANK, NODE_RANK, MASTER_ADDR];

/// OpenMP's variables (GNU libgomp, LLVM libomp and Intel's runtime read the `OMP_` ones;
/// the LLVM and Intel runtimes `KMP_AFFINITY` instead of the places).
pub const OMP_NUM_THREADS: &str = "OMP_NUM_THREADS";
pub const OMP_PLACES: &str = "OMP_PLACES";
pub const OMP_PROC_BIND: &str = "OMP_PROC_BIND";
pub const KMP_AFFINITY: &str = "KMP_AFFINITY";
/// What OpenMP runtimes read once, when they load: set later, they change nothing.
pub const OPENMP_READ_AT_LOAD: [&str; 3] = [OMP_PLACES, OMP_PROC_BIND, KMP_AFFINITY];

/// The thread count an `OMP_NUM_THREADS` value gives a rank: its first number (a list, `8,4`,
/// sets nested levels; the outermost is the rank's). `None`: no number.
pub fn omp_threads(value: &str) -> Option<u32> {
    value.split(',').next()?.trim().parse().ok()
}

/// The job's size, torchrun's first, then Open MPI, MPICH/PMI, Flux and Slurm.
pub const WORLD_SIZES: [&str; 5] = [
    WORLD_SIZE,
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "FLUX_JOB_SIZE",
    "SLURM_NTASKS",
];

/// A process's global rank under Open MPI, MPICH/PMI, PALS, Flux and Slurm.
pub const GLOBAL_RANK: [&str; 5] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PALS_RANKID",
    "FLUX_TASK_RANK",
    "SLURM_PROCID",
];

/// A node's place in the job under Slurm and PALS.
pub const NODE_ID: [&str; 2] = ["SLURM_NODEID", "PALS_NODEID"];

/// A process's local rank under torchrun, Slurm, Open MPI, MPICH (Hydra), PALS and Flux, and
/// the count of local ranks where the launcher says it (`rank::local_rank` pairs them).
pub const SLURM_LOCALID: &str = "SLURM_LOCALID";
pub const OMPI_COMM_WORLD_LOCAL_RANK: &str = "OMPI_COMM_WORLD_LOCAL_RANK";
pub const OMPI_COMM_WORLD_LOCAL_SIZE: &str = "OMPI_COMM_WORLD_LOCAL_SIZE";
pub const MPI_LOCALRANKID: &str = "MPI_LOCALRANKID";
pub const MPI_LOCALNRANKS: &str = "MPI_LOCALNRANKS";
pub const PALS_LOCAL_RANKID: &str = "PALS_LOCAL_RANKID";
pub const FLUX_TASK_LOCAL_ID: &str = "FLUX_TASK_LOCAL_ID";

/// Every variable by which a launcher numbers a process (torchrun's, the MPIs', PMI's, PALS',
/// Flux's and Slurm's ranks, sizes and node places): each rank has its own value, so none is
/// the spec's to set (`env:`).
pub fn launch_numbering() -> impl Iterator<Item = &'static str> {
    TORCHRUN_NUMBERING
        .into_iter()
        .chain(WORLD_SIZES)
        .chain(GLOBAL_RANK)
        .chain(NODE_ID)
        .chain([
            SLURM_LOCALID,
            OMPI_COMM_WORLD_LOCAL_RANK,
            OMPI_COMM_WORLD_LOCAL_SIZE,
            MPI_LOCALRANKID,
            MPI_LOCALNRANKS,
            PALS_LOCAL_RANKID,
            FLUX_TASK_LOCAL_ID,
        ])
}

/// CUDA's (and HIP's) visibility variable: device indices or UUIDs.
pub const CUDA_VISIBLE_DEVICES: &str = "CUDA_VISIBLE_DEVICES";
/// ROCm's: narrows the machine's GPUs before HIP numbers what is left.
pub const ROCR_VISIBLE_DEVICES: &str = "ROCR_VISIBLE_DEVICES";
/// HIP's: indexes what ROCm left.
pub const HIP_VISIBLE_DEVICES: &str = "HIP_VISIBLE_DEVICES";
/// Level Zero's (Intel): devices and tiles (`1.0`).
pub const ZE_AFFINITY_MASK: &str = "ZE_AFFINITY_MASK";

/// The NVIDIA Container Toolkit's: the GPUs a container is handed, by index or UUID (or `all`,
/// `none`); discovery plans only those.
pub const NVIDIA_VISIBLE_DEVICES: &str = "NVIDIA_VISIBLE_DEVICES";
/// Asks NVML during discovery even where HWLOC_FSROOT names a sysfs snapshot: for an NVML that
/// answers for the snapshot's machine (the tests' stand-in library).
pub const NVML_WITH_FSROOT: &str = "NUMAPLAN_NVML_WITH_FSROOT";

/// The variables that narrow or renumber the GPUs a process sees (CUDA, ROCm, HIP, Level Zero).
pub const VISIBILITY: [&str; 4] = [
    CUDA_VISIBLE_DEVICES,
    ROCR_VISIBLE_DEVICES,
    HIP_VISIBLE_DEVICES,
    ZE_AFFINITY_MASK,
];

/// TensorRT-LLM's switch of its own worker affinity: unset, it sets its NVML mask where the
/// affinity is unconstrained and clears a constrained one; `0` leaves the affinity as it is.
pub const TLLM_NUMA_AWARE_WORKER_AFFINITY: &str = "TLLM_NUMA_AWARE_WORKER_AFFINITY";
/// SGLang's binding of each worker to its GPU's first NUMA node where no `--numa-node` is
/// given (on by default); `0` turns it off.
pub const SGLANG_AUTO_NUMA_BIND: &str = "SGLANG_AUTO_NUMA_BIND";
/// SGLang's own CPU rule (off by default): each worker's CPUs by its GPU's index.
pub const SGLANG_SET_CPU_AFFINITY: &str = "SGLANG_SET_CPU_AFFINITY";
/// SGLang's one visible GPU per worker (off by default): every worker then reads entry 0.
pub const SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS: &str = "SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS";
/// vLLM's table of each GPU's NIC (`GPU_BUS_ID=NIC_BUS_ID,...`) and the variables it sets
/// from it in each worker.
pub const VLLM_GPU_NIC_PCIE_MAPPING: &str = "VLLM_GPU_NIC_PCIE_MAPPING";
pub const VLLM_NIC_SELECTION_VARS: &str = "VLLM_NIC_SELECTION_VARS";

/// The variables that name a rank's NIC to NCCL, UCX and libfabric (`resolve::nics`).
pub const NCCL_IB_HCA: &str = "NCCL_IB_HCA";
pub const UCX_NET_DEVICES: &str = "UCX_NET_DEVICES";
pub const FI_PROVIDER: &str = "FI_PROVIDER";
pub const NCCL_SOCKET_IFNAME: &str = "NCCL_SOCKET_IFNAME";
pub const NIC_VARIABLES: [&str; 4] = [
    NCCL_IB_HCA,
    UCX_NET_DEVICES,
    FI_PROVIDER,
    NCCL_SOCKET_IFNAME,
];
