//! Command-line syntax (clap). Doc comments are the help text; no logic lives here.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diag::Code;
use crate::diag::codes::warning_code;
use crate::diag::render::MessageFormat;

mod options;
mod review;
mod run;

pub use options::{ReportFormat, SpecOverrides, key_value};
pub use review::{ColourChoice, DiffArgs, ExplainArgs, ExplainFormat};
pub use run::{BindArgs, ExecArgs, NprocPerNode, PodArg, VerifyArgs, WatchArgs, nproc_per_node};

/// Compile a job spec and a machine topology into a reviewable per-rank binding plan.
#[derive(Debug, Parser)]
#[command(
    name = "numaplan",
    version,
    disable_version_flag = true,
    arg_required_else_help = true
)]
pub struct Cli {
    /// Print numaplan's version; with `--verbose`, also the hwloc it runs with, whether NVML
    /// was found, and the build's features (what a bug report needs).
    #[arg(short = 'V', long)]
    pub version: bool,

    /// With `--version`: the versions of what numaplan runs with.
    #[arg(long, requires = "version")]
    pub verbose: bool,

    /// How errors are printed on stderr.
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,

    /// Do not print the plan's warnings on standard error (compile, exec, bind).
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Make the plan's warnings an error (exit 1; for CI): nothing is written or started
    /// (compile, exec, bind).
    #[arg(long, global = true)]
    pub deny_warnings: bool,

    /// Accept the warnings of kind CODE after review (`W0203`, repeatable; `numaplan codes`
    /// lists them): not printed, and not fatal under `--deny-warnings` (compile, exec, bind).
    #[arg(long, global = true, value_name = "CODE", value_parser = warning_code)]
    pub allow: Vec<Code>,

    /// `None` only with `--version` (main refuses it otherwise).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The exit statuses: one table, shown at the end of `numaplan --help`, in the manual's EXIT
/// STATUS and in the README's "Exit status" (`argv::exit_status_text`; a test keeps the three
/// equal).
pub const EXIT_STATUSES: &[(&str, &str)] = &[
    (
        "0",
        "success (`compile --check`: the file is up to date; `diff`: no `--exit-code` difference)",
    ),
    (
        "1",
        "bad input or a mismatch: a spec, topology or plan numaplan refuses, an impossible \
         request, `--deny-warnings` with warnings, `compile --check` or `diff --exit-code` found \
         a difference, `verify` found a rank bound otherwise, a node that cannot run the plan \
         (from `exec`, `bind` and every generated launcher)",
    ),
    (
        "2",
        "usage: an unknown flag or subcommand, a missing or conflicting argument, a flag the \
         subcommand does not take; a generated launcher started without the arguments it needs",
    ),
    (
        "3",
        "environment: a file that cannot be read or written, hwloc that cannot read this \
         machine, a syscall that failed (binding)",
    ),
    (
        "126",
        "`exec` and `bind`: a rank's program cannot be run (as a shell)",
    ),
    (
        "127",
        "`exec` and `bind`: a rank's program is not found (as a shell); a generated launcher: \
         numaplan, torchrun or mpirun is not on PATH",
    ),
    (
        "other",
        "`exec`: the status of the first rank that failed (128 + N for a rank killed by signal \
         N), or 128 + N when numaplan itself got SIGINT, SIGTERM or SIGHUP; `bind`: the \
         program's own status once it runs (bind replaces itself)",
    ),
];

/// Every environment variable numaplan reads or sets, for the manual's ENVIRONMENT (a test
/// checks that every variable the code and the templates name is here).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NUMAPLAN_PLAN",
        "Read by `bind` and `numaplan.bind()` without a plan argument, and by `env:NUMAPLAN_PLAN` \
         inputs: a plan file's path or the plan itself, as the `--emit torchrun`, `mpirun` and \
         `sbatch-exec` scripts hand it to every rank (in parts NUMAPLAN_PLAN_1... when long).",
    ),
    (
        crate::variables::NUMAPLAN_LOCAL_RANK,
        "Yours to set, never set by numaplan: read by `bind` and `numaplan.bind()` before the \
         launchers' variables (a number, or `gpu`). A number that a launcher's variable \
         (`LOCAL_RANK`, `SLURM_LOCALID`, ...) contradicts is an error naming both (E0428).",
    ),
    (
        crate::variables::NUMAPLAN_GROUP,
        "Of a plan of several groups (`groups:`), the group this node runs, read by `exec`, \
         `bind` and `verify` where `--group` is not given; the generated scripts set it per \
         group, and `exec` and `bind` in every rank of a group. Without it, the heterogeneous Slurm component holding this host \
         (`SLURM_JOB_NODELIST_HET_GROUP_<n>`), else the one group of this node's shape.",
    ),
    (
        crate::variables::NUMAPLAN_BOUND,
        "The mark of a plan's rank, `PLAN_ID:LOCAL_RANK` (PLAN_ID: a hash of the plan's \
         content; `:no-memory-policy` after it: the rank runs without its refused memory \
         policy, W0217), set by `exec`, `bind` and the `--emit bash` and `sbatch` launchers in \
         every rank they start; `numaplan.bind()` sets \
         it for the process's children and writes it, with the process's start time, to \
         /tmp/numaplan-UID/rank-PID (removed at exit). `verify --match` reads it to find this \
         plan's ranks, and only this plan's: another job's ranks on the node are skipped, \
         and `--repin` moves only the invoking user's marked ranks.",
    ),
    (
        "NUMAPLAN_FORCE",
        "`1`: as `--force` for `bind` started by someone else's code and for the generated \
         launchers (start on a node that does not look like the plan's topology).",
    ),
    (
        "NUMAPLAN, TORCHRUN, MPIRUN",
        "The generated scripts run these programs (default `numaplan`, `torchrun`, `mpirun`).",
    ),
    (
        "NUMAPLAN_BIN",
        "The numaplan binary the Python package runs (default: the one its wheel installed).",
    ),
    (
        "NUMAPLAN_GRACE",
        "The `--emit bash` script's seconds between TERM and KILL when it stops the ranks \
         (default 10).",
    ),
    (
        "NUMAPLAN_HOSTFILE",
        "The `--emit mpirun` script's hostfile for a multi-node job outside Slurm, a host a line \
         (of a plan of several groups: every group's hosts, in group order).",
    ),
    (
        "NUMAPLAN_POD",
        "`exact` or `given`: set by the `--emit k8s` manifests in each pod, read by `exec` (as \
         `--pod`) and `bind` (under the torchrun and SGLang scripts): what the pod was given is \
         checked against the plan before any rank starts, and under `given` the ranks run on \
         the CPUs the kubelet or the CPU driver chose, on the plan's NUMA nodes.",
    ),
    (
        "NUMAPLAN_NODE_RANK",
        "Set by the `--emit k8s` manifests in each pod, from the pod's own index (an Indexed \
         Job's completion index, a LeaderWorkerSet's worker index), and passed to the launch as \
         `--node-rank`.",
    ),
    (
        "NUMAPLAN_VALUE_N, NUMAPLAN_VALUE_G",
        "Set by `--emit sbatch` for values too long for its per-task function (of a plan of \
         several groups, NUMAPLAN_VALUE_G<group>_N); unset before the rank starts.",
    ),
    (
        "LOCAL_RANK, LOCAL_WORLD_SIZE, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, \
         OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS, PALS_LOCAL_RANKID, \
         FLUX_TASK_LOCAL_ID",
        "Read by `bind`: the local rank and local size the launcher (torchrun, Slurm, Open MPI, \
         MPICH, PALS, Flux) set.",
    ),
    (
        "RANK, WORLD_SIZE, SLURM_PROCID, SLURM_NTASKS, SLURM_NTASKS_PER_NODE, \
         SLURM_STEP_TASKS_PER_NODE, OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, PMI_RANK, \
         PMI_SIZE, PALS_RANKID, FLUX_TASK_RANK, FLUX_JOB_SIZE, SLURM_NODEID, PALS_NODEID, \
         SLURM_NNODES, SLURM_JOB_NODELIST",
        "Read by `bind` and `exec` for the global numbering and the node's place in the job.",
    ),
    (
        "RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, \
         MASTER_PORT",
        "Set in every rank (torchrun's names), where the launcher did not set them.",
    ),
    (
        "OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND, KMP_AFFINITY",
        "Set in every rank: the rank's threads (`openmp:` for places and binding).",
    ),
    (
        "NUMAPLAN_COMPUTE_CPUS, NUMAPLAN_HELPER_CPUS",
        "Set in every rank under `cpu.helpers`: its compute CPUs and its helper pool.",
    ),
    (
        "NCCL_IB_HCA, UCX_NET_DEVICES, NCCL_SOCKET_IFNAME",
        "Set in every rank: the NIC chosen for it (`nic:`).",
    ),
    (
        "CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK",
        "Read by `compile` (`gpus: visible`), by `bind --local-rank gpu`, and by `exec` and \
         `bind` to warn when they renumber the GPUs (W0214); set in every rank under `gpu: \
         {visible: own}`.",
    ),
    (
        "NVIDIA_VISIBLE_DEVICES",
        "Read by discovery where no `/dev/nvidiaN` node and no NVML says which GPUs a container \
         was handed (the NVIDIA Container Toolkit sets it): GPU indices, `all` or `none`; the \
         others are left out (`topo` lists them). UUIDs need NVML.",
    ),
    (
        "NUMAPLAN_NVML_WITH_FSROOT",
        "Set: discovery asks NVML even where HWLOC_FSROOT names a sysfs snapshot of another \
         machine, for an NVML that answers for it (the tests' stand-in library).",
    ),
    (
        "NO_COLOR",
        "`explain --color auto` colours a terminal unless it is set.",
    ),
];

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compile a job spec and a topology into a per-rank binding plan.
    Compile(CompileArgs),
    /// Start the plan's ranks on this node, each bound to its CPUs and memory policy before it
    /// starts, and supervise them (a torchrun-style launcher).
    Exec(ExecArgs),
    /// Bind this process as one local rank of a plan, then run CMD in its place.
    ///
    /// The per-rank trampoline for torchrun (`--no-python numaplan bind`), srun, mpirun and
    /// other launchers: the local rank comes from the launcher's variables.
    Bind(BindArgs),
    /// Compare the bindings of running ranks (from /proc) with a plan.
    Verify(VerifyArgs),
    /// Compare two plans rank by rank: CPUs, cores and L3 groups moved, GPUs, NIC, memory.
    Diff(DiffArgs),
    /// Explain a plan: a table per rank, the warnings, quality figures and a picture of the
    /// machine with every core marked by its rank.
    Explain(ExplainArgs),
    /// Print a machine's topology: packages, NUMA nodes, cores, L3 groups, GPUs and NICs.
    Topo(TopoArgs),
    /// Print a JSON schema of one of numaplan's file formats.
    ///
    /// For editors: point a plan's `--schema-ref`, or a spec's modeline, at the written file.
    Schema {
        #[arg(value_enum)]
        which: SchemaKind,
        /// Write to FILE (atomically) instead of standard output (`-`).
        #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
        output: Option<PathBuf>,
    },
    /// List error codes, or explain one (`numaplan codes E0302`).
    Codes {
        code: Option<String>,
        /// Text, or JSON (`"numaplan_codes": 1`, schemas/codes.schema.json).
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Print numaplan's version, the hwloc it runs with, whether NVML was found, and the
    /// build's features (as `--version --verbose`).
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// bash: `numaplan completions bash > ~/.local/share/bash-completion/completions/numaplan`;
    /// zsh: into a directory of `$fpath` as `_numaplan`; fish: into
    /// `~/.config/fish/completions/numaplan.fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): one page with every subcommand.
    ///
    /// `numaplan man > ~/.local/share/man/man1/numaplan.1`, then `man numaplan`.
    Man {
        /// Write to FILE (atomically) instead of standard output (`-`).
        #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct CompileArgs {
    /// The job spec (YAML); `-` reads it from standard input.
    #[arg(value_name = "JOB.yaml", value_hint = clap::ValueHint::FilePath)]
    pub spec: PathBuf,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// The machine to plan for: a fixture, an hwloc XML export, or `discover`. Overrides the
    /// spec's `topology:`; default: the spec's, else this machine.
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    /// Plan format: YAML for people and diffs, JSON for scripts. Not with `--emit`, which
    /// writes a script.
    #[arg(long, value_enum, default_value_t = PlanFormat::Yaml, conflicts_with = "emit")]
    pub format: PlanFormat,

    /// Write the plan to FILE (atomically) instead of standard output (`-`).
    #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub output: Option<PathBuf>,

    /// Emit a launch script for the plan instead of the plan itself.
    #[arg(long, value_enum, value_name = "KIND")]
    pub emit: Option<crate::emit::EmitKind>,

    /// Compare with the file `-o` names instead of writing it: exit 0 when it is up to date,
    /// else print a unified diff and exit 1 (for a repository's CI, like `cargo fmt --check`).
    #[arg(long, requires = "output")]
    pub check: bool,

    /// Start a YAML plan with a `yaml-language-server` modeline pointing editors at this plan
    /// schema (a path relative to the plan, or a URL); `numaplan schema plan -o FILE` writes
    /// it. Default: no modeline.
    #[arg(long, value_name = "PATH|URL", value_hint = clap::ValueHint::FilePath)]
    pub schema_ref: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Yaml,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct TopoArgs {
    /// A topology file (numaplan YAML fixture or `lstopo --of xml` export, told apart by
    /// content), or `discover` for this machine (the default).
    #[arg(long, value_name = "PATH|discover", default_value = "discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: crate::topology::Source,

    /// Output format: a readable summary, a numaplan fixture (YAML), or the same as JSON.
    #[arg(long, value_enum, default_value_t = TopoFormat::Text)]
    pub format: TopoFormat,

    /// Print the GPU/NIC affinity matrix as `nvidia-smi topo -m` does (PIX, PXB, PHB, NODE,
    /// SYS from the PCI tree; CPU and NUMA affinity), for any vendor's GPUs.
    #[arg(long, short = 'm', conflicts_with = "format")]
    pub matrix: bool,

    /// Write to FILE (atomically) instead of standard output (`-`).
    #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopoFormat {
    Text,
    Yaml,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// The topology fixture format (schemas/topology.schema.json).
    Topology,
    /// The job spec format (schemas/job.schema.json).
    Job,
    /// The plan format (schemas/plan.schema.json).
    Plan,
    /// `explain --format json` (schemas/explain.schema.json).
    Explain,
    /// `diff --format json` (schemas/diff.schema.json).
    Diff,
    /// `bind --dry-run --format json` (schemas/bind.schema.json).
    Bind,
    /// `exec --dry-run --format json` (schemas/exec.schema.json).
    Exec,
    /// `verify --format json` (schemas/verify.schema.json).
    Verify,
    /// `verify --watch --format json`'s lines after the report (schemas/watch.schema.json).
    Watch,
    /// `codes --format json` (schemas/codes.schema.json).
    Codes,
}
