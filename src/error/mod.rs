//! `Error`: every failure of a command, and the one place each becomes a `Diagnostic` with an
//! exit code (1 bad input, 3 environment; clap's usage errors exit 2 on their own). The
//! diagnostics of `exec`, topology and YAML errors are in files of their own.

use std::path::PathBuf;

use crate::diag::codes::*;
use crate::diag::suggest::did_you_mean;
use crate::diag::{Diagnostic, SourceMap};
use crate::emit::EmitError;
use crate::exec::ExecError;
use crate::plan_file::PlanFileError;
use crate::rank::RankError;
use crate::resolve::{ResolveError, ResolveErrorKind};
use crate::spec::SpecError;
use crate::topology::TopologyError;

mod exec;
mod observe;
mod rank;
mod topology;
mod yaml;

use exec::exec;
use rank::rank;
use topology::topology;
use yaml::{PLAN_CODES, SPEC_CODES, file_error, not_utf8, wrong_kind};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Emit(#[from] EmitError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A topology the spec names (`topology:`, a group's `topology:`) that cannot be loaded;
    /// `key` is where the spec names it (`groups[1].topology`), in `map`.
    #[error("{error}")]
    SpecTopology {
        error: Box<TopologyError>,
        map: Box<SourceMap>,
        key: String,
        group: Option<String>,
    },
    /// The plan cannot be met; `map` locates the spec keys involved.
    #[error("{error}")]
    Resolve {
        error: Box<ResolveError>,
        map: Box<SourceMap>,
    },
    /// The output file could not be written.
    #[error("cannot write `{}`: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Standard output could not be written (e.g. a closed pipe).
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),
    /// `compile --check`: the file on disk differs from what would be written.
    #[error("`{}` is {}", path.display(), if *missing { "missing" } else { "out of date" })]
    Stale {
        path: PathBuf,
        missing: bool,
        regenerate: String,
    },
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error(transparent)]
    Rank(#[from] RankError),
    #[error(transparent)]
    Observe(#[from] crate::observe::ObserveError),
    /// A plan file that cannot be read back.
    #[error(transparent)]
    PlanFile(#[from] PlanFileError),
    /// An input of `diff` or `explain` could not be read.
    #[error("cannot read `{}`: {source}", path.display())]
    InputRead {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An input of `diff`, `explain`, `exec` or `bind` that is not UTF-8 text.
    #[error("`{}` is not UTF-8 text: {at}", path.display())]
    NotUtf8 {
        path: PathBuf,
        at: crate::text::BadByte,
    },
    /// An input of `diff`, `explain`, `exec` or `bind` larger than any of numaplan's files.
    #[error("`{}` is larger than {}, more than any plan or job spec", path.display(), crate::phrase::mib(*limit >> 20))]
    TooLarge { path: PathBuf, limit: u64 },
    /// `git:REV:PATH` that git cannot show.
    #[error("cannot read `{arg}` from git: {detail}")]
    Git { arg: String, detail: String },
    /// `explain` of a plan file whose machine is not known.
    #[error("`{input}` is a plan, and its machine is not known here")]
    NeedsTopology { input: String, notes: Vec<String> },
    /// `explain` of a plan on a topology of another fingerprint than the plan's.
    #[error("`{input}` was made for topology fingerprint {expected}, and `{topology}` has {found}")]
    TopologyMismatch {
        input: String,
        expected: String,
        topology: String,
        found: String,
    },
    /// `numaplan codes X` with an unknown X.
    #[error("unknown error code `{0}`")]
    UnknownCode(String),
    /// `--set` (or `--nproc-per-node`) given with a plan, which is not compiled again.
    #[error("`{set}` changes a job spec, but `{input}` is a plan")]
    SetOnPlan { input: String, set: String },
    /// `diff --exit-code` and plans that differ: exit 1, the diff itself is the message.
    #[error("the plans differ")]
    Differs,
    /// Flags that do not go together, which clap's rules cannot say.
    #[error("{message}")]
    Usage { message: String, help: String },
    /// `--deny-warnings` and a plan with warnings.
    #[error("{count} warning(s) denied by `--deny-warnings`")]
    WarningsDenied { count: usize },
}

impl From<crate::diag::report::Denied> for Error {
    fn from(d: crate::diag::report::Denied) -> Self {
        Error::WarningsDenied { count: d.0 }
    }
}

/// How many of a spec's problems are shown, each with its snippet; the rest are counted.
const SHOWN_PROBLEMS: usize = 20;

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Exec(e) => e.exit_code(),
            Error::Topology(e) => topology_exit_code(e),
            Error::SpecTopology { error, .. } => topology_exit_code(error),
            Error::Spec(SpecError::Read { .. })
            | Error::Output { .. }
            | Error::InputRead { .. }
            | Error::Stdout(_)
            | Error::Observe(crate::observe::ObserveError::Unknown { .. }) => 3,
            Error::Usage { .. } | Error::Observe(crate::observe::ObserveError::PidTwice { .. }) => {
                2
            }
            _ => 1,
        }
    }

    /// Every diagnostic of the error (a spec can have several problems; `diff --exit-code`
    /// has none: the diff on stdout says it all).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            Error::Differs => Vec::new(),
            Error::Spec(SpecError::Invalid { map, problems }) => {
                let mut shown: Vec<Diagnostic> = problems
                    .iter()
                    .take(SHOWN_PROBLEMS)
                    .map(|p| {
                        let map = map.for_path(&p.path);
                        Diagnostic::error(E0103_SPEC_INVALID, p.message.clone())
                            .at(map, map.value(&p.path), p.label.clone())
                            .help(p.help.clone())
                    })
                    .collect();
                if let Some(more) = problems
                    .len()
                    .checked_sub(SHOWN_PROBLEMS)
                    .filter(|n| *n > 0)
                {
                    shown.push(
                        Diagnostic::error(
                            E0103_SPEC_INVALID,
                            format!("{more} more problems in the job spec"),
                        )
                        .help("fix the ones above, then check the spec again"),
                    );
                }
                shown
            }
            other => vec![other.diagnostic()],
        }
    }

    fn diagnostic(&self) -> Diagnostic {
        match self {
            Error::Spec(SpecError::Read { path, source }) => Diagnostic::error(
                E0100_SPEC_READ,
                format!("cannot read job spec `{}`: {source}", path.display()),
            )
            .help("check the path of the job spec"),
            Error::Spec(SpecError::File(e)) => file_error(e, SPEC_CODES),
            Error::Spec(SpecError::WrongKind(e)) => wrong_kind(e),
            Error::Spec(SpecError::Invalid { .. }) => {
                Diagnostic::error(E0103_SPEC_INVALID, self.to_string())
            }
            Error::Resolve { error, map } => resolve(error, map),
            Error::Emit(e) => emit(e),
            Error::Topology(e) => topology(e),
            Error::SpecTopology {
                error,
                map,
                key,
                group,
            } => spec_topology(topology(error), map, key, group.as_deref()),
            Error::Output { path, source } => Diagnostic::error(
                E0400_OUTPUT_WRITE,
                format!("cannot write `{}`: {source}", path.display()),
            )
            .note("nothing was written: the previous file, if any, is unchanged")
            .help("check that the directory exists and is writable"),
            Error::Stdout(e) => Diagnostic::error(
                E0400_OUTPUT_WRITE,
                format!("cannot write to standard output: {e}"),
            ),
            Error::Exec(e) => exec(e),
            Error::Rank(e) => rank(e),
            Error::Observe(e) => observe::observe(e),
            Error::PlanFile(e) => file_error(e, PLAN_CODES),
            Error::NotUtf8 { path, at } | Error::Spec(SpecError::NotUtf8 { path, at }) => {
                not_utf8(self.to_string(), path, *at)
            }
            Error::TooLarge { .. } | Error::Spec(SpecError::TooLarge { .. }) => {
                too_large(self.to_string())
            }
            Error::InputRead { .. } => Diagnostic::error(E0407_INPUT_READ, self.to_string())
                .help("check the path; `git:REV:PATH` reads a file from git history, `env:VAR` an environment variable"),
            Error::Git { .. } => Diagnostic::error(E0408_GIT, self.to_string()).help(
                "write `git:REV:PATH` with PATH from the repository root, or `./PATH` from the current directory",
            ),
            Error::NeedsTopology { input, notes } => notes
                .iter()
                .fold(Diagnostic::error(E0409_NEEDS_TOPOLOGY, self.to_string()), |d, n| d.note(n.clone()))
                .help(format!("pass the machine's fixture: `--topology FILE`, or explain the job spec that `{input}` was compiled from")),
            Error::TopologyMismatch { .. } => Diagnostic::error(E0418_TOPOLOGY_MISMATCH, self.to_string())
                .note("a plan drawn on another machine would show cores and reasons that are not the plan's")
                .help("pass the topology the plan was compiled for, recompile the plan for this one, or add `--force` to draw it anyway"),
            Error::Stale { regenerate, .. } => Diagnostic::error(E0404_STALE, self.to_string())
                .help(format!("regenerate it with `{regenerate}`")),
            Error::SetOnPlan { .. } => Diagnostic::error(E0104_SET_ON_PLAN, self.to_string())
                .note("a plan is what was reviewed: numaplan runs it as written")
                .help("give the job spec the plan was compiled from, or recompile the plan with the change"),
            Error::Differs => unreachable!("`diagnostics` renders no diagnostic for it"),
            Error::WarningsDenied { .. } => Diagnostic::error(E0214_WARNINGS_DENIED, self.to_string())
                .note("nothing was written or started")
                .help("fix what the warnings above say, accept a kind that was reviewed with `--allow CODE` (or the spec's `allow_warnings:`), or drop `--deny-warnings`"),
            Error::UnknownCode(code) => unknown_code(code),
            Error::Usage { help, .. } => {
                Diagnostic::error(E0423_USAGE, self.to_string()).help(help.clone())
            }
        }
    }
}

/// An emitter's error: a script needs a command, a layout it cannot say, a template's bug.
fn emit(e: &EmitError) -> Diagnostic {
    match e {
        EmitError::MissingCommand => Diagnostic::error(
            E0402_MISSING_COMMAND,
            "the job spec has no `command`, which a launch script needs",
        )
        .help("add the program each rank runs, e.g. `command: [python, train.py]`"),
        e @ EmitError::GroupsNotOneNode { .. } => Diagnostic::error(
            E0221_GROUPS_NOT_ONE_NODE,
            e.to_string(),
        )
        .help("emit `sbatch`, `sbatch-exec`, `torchrun` or `mpirun`, or run `numaplan exec` on each node (it finds the node's group)"),
        e @ EmitError::EngineRankGpus { .. } => Diagnostic::error(E0445_ENGINE_RANK_GPUS, e.to_string())
            .help("plan one GPU per rank (`gpus_per_rank: 1`), or launch with `numaplan exec` or `--emit torchrun`"),
        e @ EmitError::OtherEngine { .. } => Diagnostic::error(E0446_OTHER_ENGINE, e.to_string())
            .help("set `engine:` to the engine the script starts, or emit the spec's engine's launch"),
        e @ EmitError::KubernetesMissing { key, .. } => {
            Diagnostic::error(E0451_KUBERNETES_KEY_MISSING, e.to_string()).help(match *key {
                "kubernetes.image" => "name the image the ranks run in, with numaplan on its PATH: `kubernetes: {image: registry.example.com/team/train:1.4}`",
                "kubernetes.memory" => "give the pod's memory, a Kubernetes quantity: `kubernetes: {memory: 1800Gi}` (its request and limit alike)",
                _ => "give the model and the engine's arguments: `kubernetes: {args: [MODEL, --tensor-parallel-size, \"8\"]}`",
            })
        }
        e @ EmitError::KubernetesNoSystemCpus { .. } => Diagnostic::error(E0452_KUBERNETES_NO_SYSTEM_CPUS, e.to_string())
            .help("reserve CPUs for the system in the spec: `cpu: {reserve_cores: 2}`"),
        e @ EmitError::KubernetesTooManyCpus { .. } => Diagnostic::error(E0453_KUBERNETES_TOO_MANY_CPUS, e.to_string())
            .help("claim the plan's CPU count per NUMA node instead: `kubernetes: {cpus: grouped}`"),
        e @ EmitError::KubernetesShape { help, .. } => Diagnostic::error(E0454_KUBERNETES_SHAPE, e.to_string())
            .help(*help),
        e @ EmitError::KubernetesName { .. } => Diagnostic::error(E0455_KUBERNETES_NAME, e.to_string())
            .help("set a short lowercase name: `kubernetes: {name: llama-train}`"),
        e @ EmitError::KubernetesMemoryPolicy { .. } => Diagnostic::error(E0456_KUBERNETES_MEMORY_POLICY, e.to_string())
            .help("run in a namespace whose Pod Security is `privileged` (drop `kubernetes.pod_security`), or let the policy yield: `memory: {required: false}`"),
        e @ EmitError::Template { .. } => Diagnostic::error(
            E0403_INTERNAL,
            e.to_string(),
        )
        .help("this is a bug in numaplan; please file an issue with the job spec and topology"),
    }
}

/// 3 for a topology that cannot be read or discovered (the environment), else 1.
fn topology_exit_code(e: &TopologyError) -> i32 {
    match e {
        TopologyError::Read { .. } | TopologyError::Discover { .. } => 3,
        _ => 1,
    }
}

/// A topology the spec names that cannot be loaded: the diagnostic points at the spec's key
/// unless it points inside the topology file, and names the group.
fn spec_topology(d: Diagnostic, map: &SourceMap, key: &str, group: Option<&str>) -> Diagnostic {
    let inside = d.location.as_ref().is_some_and(|l| l.spot.is_some());
    let d = match group {
        Some(name) => d.note(format!("the topology of group `{name}`, named by `{key}`")),
        None if inside => d.note(format!("named by the spec's `{key}`")),
        None => d,
    };
    match inside {
        true => d,
        false => d.at(map, map.value(key), "this file, relative to the spec"),
    }
}

/// `numaplan codes E302`: the nearest code, when one is near.
fn unknown_code(code: &str) -> Diagnostic {
    let known: Vec<&str> = ALL.iter().map(|(c, _)| c.0).collect();
    let d = Diagnostic::error(E0401_UNKNOWN_CODE, format!("unknown error code `{code}`"));
    match did_you_mean(&code.to_ascii_uppercase(), known.iter().copied()) {
        Some(s) => d.help(format!(
            "did you mean `{s}`? `numaplan codes` lists every code"
        )),
        None => d.help("`numaplan codes` lists every code"),
    }
}

/// A constraint the plan cannot meet, pointed at the spec key it concerns when the spec has it.
fn resolve(e: &ResolveError, map: &SourceMap) -> Diagnostic {
    let code = match e.kind {
        ResolveErrorKind::NotEnoughGpus { .. } | ResolveErrorKind::TooManyGpus { .. } => {
            E0201_NOT_ENOUGH_GPUS
        }
        ResolveErrorKind::UnknownGpu { .. } => E0202_UNKNOWN_GPU,
        ResolveErrorKind::NodeWithoutCpus { .. } => E0203_NODE_WITHOUT_CPUS,
        ResolveErrorKind::ExclusiveTooFew { .. } => E0204_EXCLUSIVE_TOO_FEW,
        ResolveErrorKind::MinCores { .. } => E0205_MIN_CORES,
        ResolveErrorKind::NoUniqueCore { .. } => E0206_NO_UNIQUE_CORE,
        ResolveErrorKind::OverlappingNodeSets { .. } => E0207_OVERLAPPING_NODE_SETS,
        ResolveErrorKind::NothingAllowed { .. } => E0208_NOTHING_ALLOWED,
        ResolveErrorKind::UnknownMemoryNode { .. } => E0209_UNKNOWN_MEMORY_NODE,
        ResolveErrorKind::PreferredManyNodes { .. } => E0210_PREFERRED_MANY_NODES,
        ResolveErrorKind::UnplacedGpu { .. } => E0211_UNPLACED_GPU,
        ResolveErrorKind::VisibleDevices { .. } => E0212_VISIBLE_DEVICES,
        ResolveErrorKind::NoGpus { .. } => E0201_NOT_ENOUGH_GPUS,
        ResolveErrorKind::UnknownLocality { .. } => E0213_UNKNOWN_LOCALITY,
        ResolveErrorKind::TooManyRanks { .. } => E0215_TOO_MANY_RANKS,
        ResolveErrorKind::HelpersTakeAllCores { .. } => E0216_HELPERS_TAKE_ALL,
        ResolveErrorKind::VariableTooLong { .. } => E0217_VARIABLE_TOO_LONG,
        ResolveErrorKind::MpibindSmt { .. } => E0218_MPIBIND_SMT,
        ResolveErrorKind::MpibindRestriction(_) => E0219_MPIBIND_RESTRICTION,
        ResolveErrorKind::MpibindSlotTooSmall { .. } => E0220_MPIBIND_SLOT,
        ResolveErrorKind::TreeNotRead { .. } => E0403_INTERNAL,
    };
    let path = e.path.to_string();
    let spot = map.exact(&path);
    let label = if spot.is_some() {
        format!("`{path}`")
    } else {
        String::new()
    };
    let mut d = match spot {
        Some(_) => Diagnostic::error(code, e.kind.to_string()).at(map, spot, label),
        None => Diagnostic::error(code, e.kind.to_string())
            .in_file(map.file())
            .note(format!(
                "from `{}` (not set in the spec: its default applies)",
                e.path
            )),
    };
    for n in &e.notes {
        d = d.note(n.clone());
    }
    d.help(e.help.clone())
}

/// An input larger than any of numaplan's files: refused after reading as much, not kept
/// reading into memory.
fn too_large(message: String) -> Diagnostic {
    Diagnostic::error(E0441_TOO_LARGE, message)
        .note("numaplan stopped reading there: it holds its inputs in memory")
        .help(
            "give the job spec or plan file itself (a device or a stream that never ends is none)",
        )
}
