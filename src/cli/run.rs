//! The commands that run or inspect ranks: `exec`, `bind`, `verify` (and its `--watch`).

use std::ffi::OsString;
use std::path::PathBuf;

use super::{ReportFormat, SpecOverrides};

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// A job spec (compiled for this machine unless it or `--topology` names one), a plan file,
    /// `git:REV:PATH`, or `env:VAR` (a plan in an environment variable, as `--emit sbatch-exec`
    /// hands it to every node). Without one, the default spec (`--set` and `--nproc-per-node`
    /// adjust it) and the command after `--`.
    #[arg(value_name = "JOB.yaml|PLAN.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: Option<String>,

    /// Ranks on this node (the spec's `ranks_per_node`), as torchrun's `--nproc-per-node`;
    /// `gpu`: one per GPU (the default).
    #[arg(long, value_name = "N|gpu", value_parser = nproc_per_node)]
    pub nproc_per_node: Option<NprocPerNode>,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// The machine a job spec is compiled for (default: the spec's, else this machine).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    /// Of a plan of several groups (`groups:`), the group this node runs. Default:
    /// `NUMAPLAN_GROUP`, else the heterogeneous Slurm component whose node list holds this
    /// host, else the one group whose machine has this node's shape.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,

    /// This node's index in a multi-node job (default: `SLURM_NODEID`); of a plan of several
    /// groups, its index in its group.
    #[arg(long, value_name = "K")]
    pub node_rank: Option<u32>,

    /// Nodes in the job, or in this node's group (default: `SLURM_NNODES`, else the plan's).
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,

    /// The rendezvous host (default: the first host of `SLURM_JOB_NODELIST`).
    #[arg(long, value_name = "HOST")]
    pub master_addr: Option<String>,

    /// Write each rank's output to DIR/rank-K.out and DIR/rank-K.err instead of the terminal.
    #[arg(long, value_name = "DIR", conflicts_with = "no_prefix", value_hint = clap::ValueHint::DirPath)]
    pub log_dir: Option<PathBuf>,

    /// With `--log-dir`: also show the output on the terminal, prefixed.
    #[arg(long, requires = "log_dir")]
    pub tee: bool,

    /// Let the ranks write to the terminal directly, without `[K] ` prefixes.
    #[arg(long)]
    pub no_prefix: bool,

    /// Check the binding exec applied: each rank reads its CPUs and memory policy back before
    /// its program starts, and a rank whose binding differs is not started (nothing is left
    /// running); then print the table. What a rank's program does afterwards is `--watch`'s.
    #[arg(long)]
    pub verify: bool,

    /// `--watch` reads the ranks from /proc while they run and prints each change (a thread
    /// that leaves its rank's CPUs, memory under `--min-local`) and a summary at the end;
    /// `--repin` (which implies `--watch`) puts threads that leave their rank's CPUs back. Both
    /// imply `--verify`. A change never stops the job unless `--stop-on-drift` says so.
    #[command(flatten)]
    pub watch: WatchArgs,

    /// With `--watch`: a change that stays a problem (a thread outside its rank's CPUs that
    /// `--repin` did not put back, memory under `--min-local`) stops every rank (E0439).
    #[arg(long)]
    pub stop_on_drift: bool,

    /// Inside a Kubernetes pod (the container command of `--emit k8s`): check what the pod was
    /// given (its cpuset, the CPU driver's `DRA_CPUSET_*`, the GPUs it sees) against the plan
    /// before any rank starts. `exact`: its CPUs and GPUs must be the plan's, as DRA claims
    /// them CPU by CPU; `given`: the CPU driver or the kubelet chose the CPUs, and the ranks run
    /// on them, on the plan's NUMA nodes (W0228). GPUs are matched by PCI address and the
    /// visibility variables renumbered as the pod numbers them. Default: `NUMAPLAN_POD`, which
    /// the manifests set (and `bind` reads too).
    #[arg(long, value_name = "MODE")]
    pub pod: Option<PodArg>,

    /// Print each rank's binding, environment and exact argv; start nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Text, or JSON: with `--dry-run`, the report (`"numaplan_exec": 1`,
    /// schemas/exec.schema.json); with `--verify` or `--watch`, the table and the watch's lines
    /// as JSON Lines on stdout, which the ranks' output may then not share (`--log-dir`).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,

    /// Start even if this node's CPU, NUMA node or GPU count differs from the plan's topology.
    #[arg(long)]
    pub force: bool,

    /// Seconds between TERM and KILL when stopping ranks.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub grace: f64,

    /// Arguments appended to every rank's command (the command itself when the spec has none),
    /// passed byte for byte.
    #[arg(last = true, value_name = "ARGS")]
    pub extra: Vec<OsString>,
}

/// `exec --pod`: how the pod's CPUs were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PodArg {
    /// The claims name the plan's CPUs and GPUs (DRA, the CPU driver's `individual` mode).
    Exact,
    /// The CPU driver (`grouped`) or the kubelet (device plugins) chose the CPUs.
    Given,
}

/// `--nproc-per-node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NprocPerNode {
    Count(u32),
    /// One rank per GPU.
    Gpu,
}

/// `--nproc-per-node`: a count of ranks (1 or more), or `gpu`.
pub fn nproc_per_node(arg: &str) -> Result<NprocPerNode, String> {
    match arg {
        "gpu" => Ok(NprocPerNode::Gpu),
        n => match n.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(NprocPerNode::Count(n)),
            _ => Err(format!(
                "`{arg}` is neither a count of ranks (1 or more) nor `gpu`"
            )),
        },
    }
}

#[derive(Debug, clap::Args)]
pub struct BindArgs {
    /// A plan file, a job spec (compiled for this machine), `git:REV:PATH`, or `env:VAR` (a
    /// plan in an environment variable, as the `--emit torchrun` and `mpirun` scripts hand it
    /// to every rank).
    #[arg(value_name = "PLAN.yaml|JOB.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: String,

    /// This process's local rank, or `gpu`: the rank whose GPUs are exactly the ones this
    /// process sees (`CUDA_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`/`HIP_VISIBLE_DEVICES`,
    /// `ZE_AFFINITY_MASK`), for workers that Ray or an inference server started. Default:
    /// `NUMAPLAN_LOCAL_RANK`, else the launcher's variable: `LOCAL_RANK`, `SLURM_LOCALID`,
    /// `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`, `PALS_LOCAL_RANKID`,
    /// `FLUX_TASK_LOCAL_ID`.
    #[arg(long, value_name = "N|gpu")]
    pub local_rank: Option<crate::rank::LocalRankChoice>,

    /// Of a plan of several groups (`groups:`), the group this node runs. Default:
    /// `NUMAPLAN_GROUP`, else the heterogeneous Slurm component whose node list holds this
    /// host, else the one group whose machine has this node's shape.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,

    /// The machine a job spec is compiled for (default: the spec's, else this machine).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Bind even if this node's CPU, NUMA node or GPU count differs from the plan's topology
    /// (also `NUMAPLAN_FORCE=1`, for a process that someone else's code starts).
    #[arg(long)]
    pub force: bool,

    /// Bind to the CPUs of every local rank together (their union), with no memory policy and
    /// none of a rank's variables: for a server that starts the ranks' workers and binds each
    /// itself (`--emit sglang`). Every rank's binding is checked on this node first.
    #[arg(long, conflicts_with_all = ["local_rank", "dry_run"])]
    pub all_ranks: bool,

    /// Print the rank's binding on standard error (`rank 3: CPUs 48-55 memory bind:3 via
    /// LOCAL_RANK`), like `srun --cpu-bind=verbose`.
    #[arg(long, short)]
    pub verbose: bool,

    /// Print the rank's binding and the environment it would set, and run nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// With `--dry-run`: text, or JSON (`"numaplan_bind": 1`) for scripts and the Python
    /// package.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text, requires = "dry_run")]
    pub format: ReportFormat,

    /// The program and its arguments, run in numaplan's place once bound (default: the plan's
    /// command).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["pids", "match_name", "process"]))]
pub struct VerifyArgs {
    /// The plan the ranks were started from (a plan file, a job spec, or `git:REV:PATH`).
    #[arg(value_name = "PLAN.yaml|JOB.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: String,

    /// The machine a job spec is compiled for.
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    /// Of a plan of several groups (`groups:`), the group this node runs. Default:
    /// `NUMAPLAN_GROUP`, else the heterogeneous Slurm component whose node list holds this
    /// host, else the one group whose machine has this node's shape.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,

    /// The ranks' process ids (each once). Which rank each is: its mark of this plan
    /// (`NUMAPLAN_BOUND`, or numaplan.bind()'s mark file), else its launcher's variable
    /// (`LOCAL_RANK`, `SLURM_LOCALID`, ... from /proc/PID/environ), else the order given. The
    /// plan's ranks that none of them is are reported missing. `--repin` may move any of them.
    #[arg(long, num_args = 1.., value_name = "PID")]
    pub pids: Vec<u32>,

    /// Find the ranks by name: processes whose command line contains NAME and that carry this
    /// plan's mark (`NUMAPLAN_BOUND`, set by exec and bind; numaplan.bind()'s mark file), a
    /// serving engine's worker title (`VLLM::Worker_TP1`, `sglang::scheduler_TP1`: the rank
    /// of the GPU it drives), or, where none does, a launcher's variable. Other plans' ranks are skipped, and `--repin`
    /// moves only the invoking user's marked ranks.
    #[arg(long = "match", value_name = "NAME")]
    pub match_name: Option<String>,

    /// One process checked as its rank of the plan alone (the plan's other ranks are not
    /// looked for): which rank, as `--pids` finds it, or `--local-rank`. What
    /// `numaplan.check_binding()` runs for the calling process.
    #[arg(long, value_name = "PID")]
    pub process: Option<u32>,

    /// With `--process`: the local rank the process is, whatever it says of itself, or `gpu`:
    /// the rank whose GPUs are those the process sees (its visibility variables).
    #[arg(long, value_name = "N|gpu", requires = "process")]
    pub local_rank: Option<crate::rank::LocalRankChoice>,

    /// Text for people, or JSON (`"numaplan_verify": 2`, schemas/verify.schema.json); with
    /// `--watch`, JSON Lines: the report on one line, then one `"numaplan_watch": 2` object per
    /// change and a summary (schemas/watch.schema.json).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,

    #[command(flatten)]
    pub watch: WatchArgs,

    /// Count the kernel's `node-loads` and `node-load-misses` events of every rank for SECONDS
    /// and report the share of its loads served by a remote node (where the machine has the
    /// counters; otherwise it says so and reports pages only).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub counters: Option<f64>,
}

/// How `verify` and `exec` check where the ranks' memory is, and watch them while they run.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("watching").args(["watch", "repin"]).multiple(true)))]
pub struct WatchArgs {
    /// The share of a rank's memory (in percent) that must be on its planned nodes; a rank
    /// under it is a mismatch. Default: 90 under `memory.policy: bind`, none for `preferred`
    /// and `interleave` (the report shows the spread).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub min_local: Option<f64>,

    /// Keep reading until the ranks exit (or `--count` readings), one line per change: a thread
    /// that leaves its rank's CPUs or returns, a rank whose memory falls under `--min-local`, a
    /// rank that exits. A closed standard output (`| head -1`) ends the watch at once, with
    /// exit status 0.
    #[arg(long)]
    pub watch: bool,

    /// Seconds between readings of a watch (`--watch`, `--repin`).
    #[arg(long, value_name = "SECONDS", value_parser = seconds, requires = "watching")]
    pub interval: Option<f64>,

    /// Readings after the first of a watch (`--watch`, `--repin`; default: until every rank
    /// has exited; 0: the first reading only).
    #[arg(long, value_name = "N", requires = "watching")]
    pub count: Option<u64>,

    /// Watch (as `--watch`), and put a thread that left its rank's CPUs back on them, saying
    /// so (threads on a subset of them, as OpenMP places bind them, are left alone). Off by
    /// default: a runtime may have had its reasons.
    #[arg(long)]
    pub repin: bool,
}

/// A duration in seconds: positive and at most a day.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86400.0 => Ok(v),
        Ok(_) => Err("must be more than 0 and at most 86400 seconds".into()),
        Err(_) => Err(format!("`{s}` is not a number of seconds")),
    }
}

/// A percentage from 0 to 100, as a share from 0 to 1.
fn percent(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v / 100.0),
        Ok(_) => Err("must be between 0 and 100".into()),
        Err(_) => Err(format!("`{s}` is not a percentage")),
    }
}
