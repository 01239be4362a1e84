//! `Error`: every failure of a command, and the one place each becomes a `Diagnostic` with an
//! exit code (1 bad input, 3 environment; clap's usage errors exit 2 on their own).

use std::path::PathBuf;

use crate::diag::codes::*;
use crate::diag::schema_words::words_at;
use crate::diag::suggest::did_you_mean;
use crate::diag::{Diagnostic, SourceMap};
use crate::emit::EmitError;
use crate::exec::{ExecError, NodeMismatch};
use crate::plan_file::PlanFileError;
use crate::resolve::{ResolveError, ResolveErrorKind};
use crate::spec::SpecError;
use crate::topology::TopologyError;
use crate::yaml::{YamlError, YamlErrorKind};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Emit(#[from] EmitError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
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
    /// `--deny-warnings` and a plan with warnings.
    #[error("{count} warning(s) denied by `--deny-warnings`")]
    WarningsDenied { count: usize },
}

impl From<crate::diag::report::Denied> for Error {
    fn from(d: crate::diag::report::Denied) -> Self {
        Error::WarningsDenied { count: d.0 }
    }
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Exec(e) => e.exit_code(),
            Error::Spec(SpecError::Read { .. })
            | Error::Topology(TopologyError::Read { .. } | TopologyError::Discover { .. })
            | Error::Output { .. }
            | Error::InputRead { .. }
            | Error::Stdout(_) => 3,
            _ => 1,
        }
    }

    /// Every diagnostic of the error (a spec can have several problems; `diff --exit-code`
    /// has none: the diff on stdout says it all).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            Error::Differs => Vec::new(),
            Error::Spec(SpecError::Invalid { map, problems }) => problems
                .iter()
                .map(|p| {
                    let map = map.for_path(&p.path);
                    Diagnostic::error(E0103_SPEC_INVALID, p.message.clone())
                        .at(map, map.value(&p.path), p.label.clone())
                        .help(p.help.clone())
                })
                .collect(),
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
            Error::Spec(SpecError::Yaml { map, error }) => {
                yaml_error(map, error, "job spec", SPEC_CODES)
            }
            Error::Spec(SpecError::Invalid { .. }) => {
                Diagnostic::error(E0103_SPEC_INVALID, self.to_string())
            }
            Error::Resolve { error, map } => resolve(error, map),
            Error::Emit(EmitError::MissingCommand) => Diagnostic::error(
                E0402_MISSING_COMMAND,
                "the job spec has no `command`, which a launch script needs",
            )
            .help("add the program each rank runs, e.g. `command: [python, train.py]`"),
            Error::Emit(e @ EmitError::Template { .. }) => Diagnostic::error(
                E0403_INTERNAL,
                e.to_string(),
            )
            .help("this is a bug in numaplan; please file an issue with the job spec and topology"),
            Error::Topology(e) => topology(e),
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
            Error::PlanFile(PlanFileError::Yaml { map, error }) => {
                yaml_error(map, error, "plan", PLAN_CODES)
            }
            Error::PlanFile(PlanFileError::Invalid { map, path, message }) => {
                Diagnostic::error(E0406_PLAN_INVALID, format!("invalid plan: {message}"))
                    .at(map, map.value(path), format!("in `{path}`"))
                    .help("regenerate the plan with the command in its header")
            }
            Error::NotUtf8 { path, at } | Error::Spec(SpecError::NotUtf8 { path, at }) => {
                not_utf8(self.to_string(), path, *at)
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
        }
    }
}

fn exec(e: &ExecError) -> Diagnostic {
    let message = e.to_string();
    match e {
        ExecError::NoCommand { spec: true } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("add the program each rank runs to the job spec, e.g. `command: [python, train.py]`, or give it after `--`"),
        ExecError::NoCommand { spec: false } => Diagnostic::error(E0402_MISSING_COMMAND, message)
            .help("give the program each rank runs after `--`, e.g. `numaplan exec --nproc-per-node 2 -- python train.py`"),
        ExecError::NodeCount { .. } | ExecError::NodeRank { .. } | ExecError::NoNodePlace { .. } => {
            Diagnostic::error(E0410_NODE_PLACE, message).help(
                "run one `numaplan exec` per node under Slurm (`srun --ntasks-per-node=1`), or pass `--node-rank K --nodes N --master-addr HOST`",
            )
        }
        ExecError::NotThisNode { why, .. } => Diagnostic::error(E0411_NOT_THIS_NODE, message)
            .note("nothing was started")
            .help(match why {
                NodeMismatch::Shape => "compile the plan for this machine (`numaplan topo` shows it) or run it where it was made for; `--force` starts despite a different CPU, NUMA node or GPU count",
                NodeMismatch::CpusAbsent | NodeMismatch::MemoryNode => "this is another machine's plan: compile the job for this machine (`numaplan compile job.yaml` discovers it), or run the plan where it was made for",
                NodeMismatch::CpusNotAllowed => "run with those CPUs allowed (a wider taskset or cgroup, `srun --cpu-bind=none`, `mpirun --bind-to none`), or compile the job inside this allocation: discovery plans within this process's affinity",
            }),
        ExecError::Bind { .. } => Diagnostic::error(E0412_BIND, message)
            .note("no rank was left running")
            .help("check the plan's CPUs and memory nodes against `numaplan topo` on this node"),
        ExecError::Spawn { .. } | ExecError::LogDir { .. } | ExecError::Syscall { .. } => {
            Diagnostic::error(E0413_SPAWN, message).note("no rank was left running")
        }
        ExecError::RankFailed { .. } => Diagnostic::error(E0414_RANK_FAILED, message)
            .note("the other ranks were stopped (TERM, then KILL after the grace period)")
            .help("the rank's own output above says why"),
        ExecError::Interrupted { .. } => Diagnostic::error(E0415_INTERRUPTED, message)
            .note("the signal was forwarded to every rank's process group"),
        ExecError::NoProcesses { skipped, .. } => skipped
            .iter()
            .fold(Diagnostic::error(E0417_NO_PROCESSES, message), |d, line| {
                d.note(line.trim_end().to_string())
            })
            .help("`--match` looks for NAME in the command lines of processes that say which local rank they are (NUMAPLAN_LOCAL_RANK, set by exec and bind, or a launcher's variable); `--pids` names them"),
        ExecError::Verify { .. } => Diagnostic::error(E0416_VERIFY, message)
            .help("the table above shows planned and actual bindings per rank"),
        ExecError::NoLocalRank { looked } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note(format!("looked for {looked}"))
            .help("run under a launcher (torchrun, srun, mpirun), or pass `--local-rank N`"),
        ExecError::LocalRankDisagree { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("pass `--local-rank N`, or unset the variable of the launcher that does not start this process"),
        ExecError::TorchrunLocalRank { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note("under `torchrun --virtual-local-rank` every worker has LOCAL_RANK=0 and sees one GPU (CUDA_VISIBLE_DEVICES), which tells numaplan to take the rank RANK gives; here nothing says which is right")
            .help("run under torchrun as it sets them (a wrapper changed one), or pass `--local-rank N`"),
        ExecError::LauncherVariable { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("unset the variable, or pass `--local-rank N`"),
        ExecError::LocalRankPastSize { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .note("a launcher numbers its local ranks from 0 to the local size less one")
            .help("fix the launcher's variables (a wrapper that sets them by hand), or pass `--local-rank N`"),
        ExecError::LocalRankValue { .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help("set it to this process's local rank, or to `gpu` for the rank whose GPUs it sees"),
        ExecError::NoGpuVisible { .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .help("start the worker with its GPU visible (Ray's `num_gpus`, `CUDA_VISIBLE_DEVICES`), or pass `--local-rank N`"),
        ExecError::VisibleGpuUnknown { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("make one rank's GPUs visible to the worker, by index or UUID, or pass `--local-rank N`"),
        ExecError::NoRankForGpus { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("make each worker see exactly one rank's GPUs (one worker per GPU for one GPU per rank), or pass `--local-rank N`"),
        ExecError::RanksShareGpus { ranks, .. } => Diagnostic::error(E0422_VISIBLE_GPUS, message)
            .note(format!("the plan's ranks: {ranks}"))
            .help("give each rank its own GPUs in the job spec, or pass `--local-rank N` to say which rank this is"),
        ExecError::LocalRankPastPlan { ranks, .. } => Diagnostic::error(E0419_LOCAL_RANK, message)
            .help(format!("start {ranks} ranks per node, as the plan has, or recompile the plan for more")),
        ExecError::LocalSizeMismatch { launcher, plan, .. } => Diagnostic::error(E0420_LOCAL_SIZE, message)
            .help(format!("start the launcher with {plan} ranks per node (`--nproc-per-node {plan}`, `--ntasks-per-node={plan}`), or recompile the plan with `--set ranks_per_node={launcher}`")),
        ExecError::WorldSizeMismatch { launcher, nodes, ranks_per_node, .. } => Diagnostic::error(E0420_LOCAL_SIZE, message)
            .help(world_size_help(*launcher, *nodes, *ranks_per_node)),
        ExecError::BindExec { .. } => Diagnostic::error(E0413_SPAWN, message)
            .note("the binding was applied; the program could not replace numaplan"),
    }
}

/// What to do when the launcher's world size is not the plan's: start the plan's count, or
/// recompile for the launcher's, by the node count or the ranks per node that give it (never a
/// value the plan already has, never zero).
fn world_size_help(launcher: u64, nodes: u32, ranks_per_node: u32) -> String {
    let planned = u64::from(nodes) * u64::from(ranks_per_node);
    let fits = |total: u64, by: u32| {
        (by > 0 && total > 0 && total % u64::from(by) == 0).then(|| total / u64::from(by))
    };
    let recompile = match (fits(launcher, ranks_per_node), fits(launcher, nodes)) {
        (Some(n), _) if n != u64::from(nodes) => {
            format!(", or recompile the plan for the job with `--set nodes={n}`")
        }
        (_, Some(r)) if r != u64::from(ranks_per_node) => {
            format!(", or recompile the plan for the job with `--set ranks_per_node={r}`")
        }
        _ => String::new(),
    };
    format!("start {planned} ranks in all ({nodes} x {ranks_per_node}), as the plan has{recompile}")
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

/// A file that is not UTF-8 text, whichever kind of input it was.
fn not_utf8(message: String, path: &std::path::Path, at: crate::text::BadByte) -> Diagnostic {
    Diagnostic::error(E0105_NOT_UTF8, message)
        .at_position(path.display().to_string(), at.line, at.col)
        .help("save the file as UTF-8 (`iconv -f LATIN1 -t UTF-8`, for one)")
}

fn topology(e: &TopologyError) -> Diagnostic {
    match e {
        TopologyError::NotUtf8 { path, at } => not_utf8(e.to_string(), path, *at),
        TopologyError::Read { path, source } => Diagnostic::error(
            E0300_TOPOLOGY_READ,
            format!("cannot read topology file `{}`: {source}", path.display()),
        )
        .help("check the path given to `--topology` or the spec's `topology:` key"),
        TopologyError::Yaml { map, error } => yaml_error(map, error, "topology fixture", FIXTURE_CODES),
        TopologyError::Invalid {
            map,
            path,
            message,
            help,
        } => {
            let d = Diagnostic::error(E0302_FIXTURE_INVALID, message.clone()).at(
                map,
                map.value(path),
                if path.is_empty() { String::new() } else { format!("in `{path}`") },
            );
            match help {
                Some(h) => d.help(h.clone()),
                None => d.help("fix the value, or regenerate the fixture with `numaplan topo --format yaml`"),
            }
        }
        TopologyError::NotHwloc { file, found } => Diagnostic::error(
            E0303_XML_NOT_HWLOC,
            format!("`{file}` is {found}, not an hwloc topology export"),
        )
        .in_file(file)
        .help("export the machine with `lstopo --of xml machine.xml` on it, or write a numaplan fixture (see examples/topologies/)"),
        TopologyError::XmlVersion {
            file,
            version,
            linked,
        } => Diagnostic::error(
            E0304_XML_VERSION,
            format!("`{file}` is hwloc XML version {version}, which numaplan cannot import"),
        )
        .in_file(file)
        .note(format!("numaplan reads the hwloc 1.x, 2.x and 3.x XML formats (with hwloc {linked}, translating 3.x)"))
        .help("re-export with hwloc 2.x or 3.x (`lstopo --of xml`), or with `--export-xml-flags v2` where the newer lstopo offers it"),
        TopologyError::XmlObjectRefused { file, line, col, .. } => Diagnostic::error(E0305_XML_REJECTED, e.to_string())
            .at_position(file.clone(), *line, *col)
            .note("numaplan refuses such an object before hwloc reads it: hwloc would crash on it, or take minutes")
            .help("re-export the topology with `lstopo --of xml`"),
        TopologyError::XmlRejected { file, detail } => Diagnostic::error(
            E0305_XML_REJECTED,
            format!("hwloc cannot import `{file}`: {detail}"),
        )
        .in_file(file)
        .help("re-export the topology with `lstopo --of xml`"),
        TopologyError::Discover { detail } => Diagnostic::error(
            E0307_DISCOVER,
            format!("hwloc cannot discover this machine: {detail}"),
        )
        .help("pass a fixture with `--topology FILE`"),
        TopologyError::Inconsistent { file, error } => Diagnostic::error(
            E0306_TOPOLOGY_INCONSISTENT,
            format!("`{file}` describes an impossible machine: {error}"),
        )
        .in_file(file),
    }
}

/// The codes of one YAML format: (malformed, wrong shape) and the schema that documents it.
struct YamlCodes {
    syntax: crate::diag::Code,
    shape: crate::diag::Code,
    schema: &'static str,
    /// The schema itself, for the words a key takes.
    generated: fn() -> schemars::Schema,
}

const FIXTURE_CODES: YamlCodes = YamlCodes {
    syntax: E0301_YAML_SYNTAX,
    shape: E0302_FIXTURE_INVALID,
    schema: "schemas/topology.schema.json",
    generated: || schemars::schema_for!(crate::topology::fixture::FixtureFile),
};

const PLAN_CODES: YamlCodes = YamlCodes {
    syntax: E0405_PLAN_SYNTAX,
    shape: E0406_PLAN_INVALID,
    schema: "schemas/plan.schema.json",
    generated: || schemars::schema_for!(crate::plan_file::PlanFile),
};

const SPEC_CODES: YamlCodes = YamlCodes {
    syntax: E0101_SPEC_SYNTAX,
    shape: E0102_SPEC_SHAPE,
    schema: "schemas/job.schema.json",
    generated: || schemars::schema_for!(crate::spec::raw::JobSpec),
};

/// A YAML document that is malformed or of the wrong shape.
fn yaml_error(map: &SourceMap, error: &YamlError, what: &str, codes: YamlCodes) -> Diagnostic {
    match error.kind {
        YamlErrorKind::Syntax => Diagnostic::error(
            codes.syntax,
            format!("{what} is not well-formed YAML: {}", error.message),
        )
        .at(map, error.spot, "here")
        .help("fix the YAML syntax here; a truncated file fails at its end"),
        YamlErrorKind::JsonSyntax => Diagnostic::error(
            codes.syntax,
            format!("{what} is not well-formed JSON: {}", error.message),
        )
        .at(map, error.spot, "here")
        .help("fix the JSON here; a truncated file fails at its end"),
        YamlErrorKind::Shape => {
            let (path, detail) = match error.message.split_once(": ") {
                Some((p, rest)) if !p.contains(' ') => (Some(p), rest),
                _ => (None, error.message.as_str()),
            };
            let within = path.map(|p| format!(" in `{p}`")).unwrap_or_default();
            let spot = path.and_then(|p| map.value(p)).or(error.spot);
            for (marker, noun) in [("unknown field `", "key"), ("unknown variant `", "value")] {
                if let Some(rest) = detail.strip_prefix(marker) {
                    let typed = rest.split('`').next().unwrap_or_default();
                    let expected: Vec<&str> = rest
                        .split('`')
                        .skip(1)
                        .enumerate()
                        .filter(|(i, _)| i % 2 == 1)
                        .map(|(_, s)| s)
                        .collect();
                    let spot = if noun == "key" {
                        let key_path = path.map_or(typed.to_string(), |p| format!("{p}.{typed}"));
                        map.key(&key_path).or(error.spot)
                    } else {
                        spot
                    };
                    let d =
                        Diagnostic::error(codes.shape, format!("unknown {noun} `{typed}`{within}"))
                            .at(map, spot, format!("unknown {noun}"))
                            .note(expected_one_of(&expected));
                    return match did_you_mean(typed, expected.iter().copied()) {
                        Some(s) => d.help(format!("did you mean `{s}`?")),
                        None => d.help(format!("use one of the {noun}s listed above")),
                    };
                }
            }
            if let Some(key) = duplicated_key(detail) {
                // The map records a key's last occurrence: the one to remove or rename.
                let key_path = path.map_or(key.to_string(), |p| format!("{p}.{key}"));
                return Diagnostic::error(codes.shape, format!("`{key}` is given twice{within}"))
                    .at(map, map.key(&key_path).or(spot), "again here")
                    .help("keep one of them: numaplan does not pick one silently");
            }
            let detail = plain_expectation(detail);
            let d = Diagnostic::error(codes.shape, format!("invalid {what}{within}: {detail}"))
                .at(map, spot, "here");
            let words = match path {
                Some(p) if detail.ends_with("expected a single word") => {
                    words_at((codes.generated)().as_value(), p)
                }
                _ => Vec::new(),
            };
            if !words.is_empty() {
                return d
                    .note(expected_one_of(&words))
                    .help("write one of the words listed above, alone");
            }
            let d = if detail.starts_with("missing field") {
                d.note("a truncated file also ends before its required keys")
            } else {
                d
            };
            d.help(format!("`{}` documents every key", codes.schema))
        }
    }
}

/// The note that lists what a key takes: ``expected one of `a`, `b` ``.
fn expected_one_of<S: AsRef<str>>(words: &[S]) -> String {
    let listed: Vec<String> = words.iter().map(|w| format!("`{}`", w.as_ref())).collect();
    format!("expected one of {}", listed.join(", "))
}

/// serde's expectations in a user's words: `expected u32` is "a whole number", `expected struct
/// CpuOptions` "a mapping of keys".
fn plain_expectation(detail: &str) -> String {
    let Some((head, expected)) = detail.rsplit_once(", expected ") else {
        return detail.to_string();
    };
    let plain = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a map" => "a mapping (`key: value` lines or `{key: value}`)",
        s if s.starts_with("struct ") => "a mapping (`key: value` lines or `{key: value}`)",
        // serde_yaml's words for a mapping or list where a word (an enum's value) belongs.
        "a YAML tag starting with '!'" => "a single word",
        s => s,
    };
    format!("{head}, expected {plain}")
}

/// The key serde reports twice: ``duplicate field `env` `` (a struct's key) or `duplicate entry
/// with key "A"` (a map's).
fn duplicated_key(detail: &str) -> Option<&str> {
    let key = match detail.strip_prefix("duplicate field `") {
        Some(rest) => rest.split('`').next(),
        None => detail
            .strip_prefix("duplicate entry with key \"")
            .and_then(|rest| rest.split('"').next()),
    };
    key.filter(|k| !k.is_empty())
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
    };
    let spot = map.exact(&e.path);
    let label = if spot.is_some() {
        format!("`{}`", e.path)
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
