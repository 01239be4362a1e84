//! Command-line syntax (clap). Doc comments are the help text; no logic lives here.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diag::Code;
use crate::diag::codes::warning_code;
use crate::diag::render::MessageFormat;
use crate::yaml::Override;

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
        "NUMAPLAN_LOCAL_RANK",
        "Read by `bind` before the launchers' variables (a number, or `gpu`); set by `exec`, \
         `bind` and `numaplan.bind()` in every rank, which `verify --match` uses to know the \
         plan's processes.",
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
        "The `--emit mpirun` script's hostfile for a multi-node job outside Slurm.",
    ),
    (
        "NUMAPLAN_VALUE_N",
        "Set by `--emit sbatch` for values too long for its per-task function; unset before the \
         rank starts.",
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

/// `--set KEY=VALUE`, shared by the commands that read a job spec.
#[derive(Debug, Default, clap::Args)]
pub struct SpecOverrides {
    /// Override a key of the job spec (repeatable; dotted keys: `cpu.policy=exclusive`,
    /// `memory.policy=bind`, `gpus=4`, `env.NCCL_DEBUG=INFO`); the value is YAML.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<Override>,
}

pub fn key_value(arg: &str) -> Result<Override, String> {
    match arg.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok(Override::set(key, value)),
        _ => Err(format!(
            "`{arg}` is not KEY=VALUE (e.g. `cpu.policy=exclusive`)"
        )),
    }
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
    pub topology: Option<String>,

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
    pub topology: Option<String>,

    /// This node's index in a multi-node job (default: `SLURM_NODEID`).
    #[arg(long, value_name = "K")]
    pub node_rank: Option<u32>,

    /// Nodes in the job (default: `SLURM_NNODES`, else the plan's).
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

    /// Right after start, read every rank's CPUs (all threads), memory policy and where its
    /// memory is from /proc, and stop the job if they differ from the plan.
    #[arg(long)]
    pub verify: bool,

    /// With `--verify`: `--watch` keeps reading while the ranks run and prints each change and
    /// a summary at the end; `--repin` (which implies `--verify --watch`) puts threads that
    /// leave their rank's CPUs back.
    #[command(flatten)]
    pub watch: WatchArgs,

    /// Print each rank's binding, environment and exact argv; start nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// With `--dry-run`: text, or JSON (`"numaplan_exec": 1`, schemas/exec.schema.json).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text, requires = "dry_run")]
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

/// `--nproc-per-node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NprocPerNode {
    Count(u32),
    /// One rank per GPU.
    Gpu,
}

fn nproc_per_node(arg: &str) -> Result<NprocPerNode, String> {
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
    pub local_rank: Option<crate::exec::launcher::LocalRankChoice>,

    /// The machine a job spec is compiled for (default: the spec's, else this machine).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<String>,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Bind even if this node's CPU, NUMA node or GPU count differs from the plan's topology
    /// (also `NUMAPLAN_FORCE=1`, for a process that someone else's code starts).
    #[arg(long)]
    pub force: bool,

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
#[command(group = clap::ArgGroup::new("which").required(true).args(["pids", "match_name"]))]
pub struct VerifyArgs {
    /// The plan the ranks were started from (a plan file, a job spec, or `git:REV:PATH`).
    #[arg(value_name = "PLAN.yaml|JOB.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: String,

    /// The machine a job spec is compiled for.
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<String>,

    /// The ranks' process ids; each one's `LOCAL_RANK` (from /proc/PID/environ) says which rank
    /// it is, else the order given.
    #[arg(long, num_args = 1.., value_name = "PID")]
    pub pids: Vec<u32>,

    /// Find the ranks by name: processes whose command line contains NAME.
    #[arg(long = "match", value_name = "NAME")]
    pub match_name: Option<String>,

    /// Text for people, or JSON (`"numaplan_verify": 1`, schemas/verify.schema.json); with
    /// `--watch`, JSON Lines: the report on one line, then one `"numaplan_watch": 1` object per
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
pub struct WatchArgs {
    /// The share of a rank's memory (in percent) that must be on its planned nodes; a rank
    /// under it is a mismatch. Default: 90 under `memory.policy: bind`, none for `preferred`
    /// and `interleave` (the report shows the spread).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub min_local: Option<f64>,

    /// Keep reading until the ranks exit (or `--count` readings), one line per change: a thread
    /// that leaves its rank's CPUs or returns, a rank whose memory falls under `--min-local`, a
    /// rank that exits.
    #[arg(long)]
    pub watch: bool,

    /// Seconds between readings with `--watch`.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, value_parser = seconds)]
    pub interval: f64,

    /// Readings after the first with `--watch` (default: until every rank has exited).
    #[arg(long, value_name = "N", requires = "watch")]
    pub count: Option<u64>,

    /// Put a thread that left its rank's CPUs back on them and say so (threads on a subset of
    /// them, as OpenMP places bind them, are left alone). Off by default.
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

/// Where a plan comes from: a plan file, a job spec (compiled on the fly), or `git:REV:PATH`
/// for either one in git history.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The plan before: a plan file, a job spec, or `git:REV:PATH` (e.g. `git:HEAD:plan.yaml`).
    #[arg(value_name = "OLD", value_hint = clap::ValueHint::FilePath)]
    pub old: String,

    /// The plan after, in the same forms.
    #[arg(value_name = "NEW", value_hint = clap::ValueHint::FilePath)]
    pub new: String,

    /// The machine of both sides, for cores, L3 groups and quality figures (a job spec names its
    /// own; a plan file does not).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<String>,

    /// The machine of OLD only (overrides `--topology`).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub old_topology: Option<String>,

    /// The machine of NEW only (overrides `--topology`).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub new_topology: Option<String>,

    /// `--set KEY=VALUE` applies to NEW when it is a job spec: `diff job.yaml job.yaml --set
    /// cpu.policy=exclusive` shows what the change would do.
    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Text for people, or JSON for bots (`"numaplan_diff": 1`, schemas/diff.schema.json).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,

    /// Exit 1 when the plans differ, 0 when they do not (as `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// A job spec, a plan file (its machine: `--topology`, else the topology file the plan
    /// names), or `git:REV:PATH`.
    #[arg(value_name = "JOB.yaml|PLAN.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: String,

    /// The machine (a job spec names its own; a plan file needs this).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<String>,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Text for the terminal, an SVG picture for a pull request or docs, or JSON for scripts
    /// (`"numaplan_explain": 1`, schemas/explain.schema.json).
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,

    /// Colour the text: `auto` colours a terminal unless `NO_COLOR` is set.
    #[arg(long, value_enum, default_value_t = ColourChoice::Auto)]
    pub color: ColourChoice,

    /// Write to FILE (atomically) instead of standard output (`-`).
    #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub output: Option<PathBuf>,

    /// Draw a plan on a topology whose fingerprint differs from the plan's, under a banner.
    #[arg(long)]
    pub force: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Text,
    Svg,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColourChoice {
    Auto,
    Always,
    Never,
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
    pub topology: String,

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
