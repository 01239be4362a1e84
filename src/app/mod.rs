//! One function per subcommand: load, then print or write. Returns data to `main`, never prints
//! errors itself. `review` holds `diff` and `explain`.

mod bind;
mod docs;
mod exec;
mod groups;
mod input;
mod memory;
mod node;
mod review;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::{
    Cli, Command, CompileArgs, PlanFormat, ReportFormat, SchemaKind, TopoArgs, TopoFormat,
};
use crate::diag::codes;
use crate::diag::report::Reporter;
use crate::emit;
use crate::error::Error;
use crate::output::{FileMode, write_atomic};
use crate::plan::Plan;
use crate::plan_file::{self, Provenance};
use crate::provenance;
use crate::resolve::resolve;
use crate::shell;
use crate::spec::SpecError;
use crate::spec::load::{LoadedSpec, load_with};
use crate::text::TextError;
use crate::topology::{self, Source, Topology, fixture, summary};

/// Runs a command: its data goes to `stdout`, the plan's warnings to `warnings`.
pub fn run(cli: Cli, stdout: &mut dyn Write, warnings: &mut Reporter) -> Result<(), Error> {
    let command = match cli.command {
        Some(command) if !cli.version => command,
        // `--version` (main refuses no subcommand without it).
        _ => return emit(stdout, None, &version(cli.verbose)),
    };
    match command {
        Command::Version => emit(stdout, None, &version(true)),
        Command::Completions { shell } => emit(stdout, None, &docs::completions(shell)),
        Command::Man { output } => emit(stdout, output.as_deref(), &docs::man()),
        Command::Compile(args) => compile(&args, stdout, warnings),
        Command::Exec(args) => exec::exec(&args, stdout, warnings),
        Command::Bind(args) => bind::bind(&args, stdout, warnings),
        Command::Verify(args) => verify::verify(&args, stdout),
        Command::Diff(args) => review::diff(&args, stdout),
        Command::Explain(args) => review::explain(&args, stdout),
        Command::Topo(args) => topo(&args, stdout),
        Command::Schema { which, output } => emit(stdout, output.as_deref(), &schema(which)),
        Command::Codes { code, format } => codes_cmd(code.as_deref(), format, stdout),
    }
}

/// `numaplan 0.1.0`; verbose, a second line with what numaplan runs with, for bug reports:
/// `hwloc 2.9.0 (static, API 2.8.0); NVML: not found (...); features: static-hwloc`.
fn version(verbose: bool) -> String {
    let mut text = format!("numaplan {}\n", env!("CARGO_PKG_VERSION"));
    if verbose {
        let nvml = match topology::nvml::driver() {
            Ok(driver) => format!("found ({driver})"),
            Err(why) => format!("not found ({why})"),
        };
        let features = if cfg!(feature = "dynamic-hwloc") {
            "dynamic-hwloc"
        } else {
            "static-hwloc"
        };
        text += &format!(
            "{}; NVML: {nvml}; features: {features}; target: {}-{}\n",
            topology::hwloc::library(),
            std::env::consts::ARCH,
            std::env::consts::OS,
        );
    }
    text
}

/// A spec compiled: the plan, the topology it is for, that topology's fingerprint, and the file
/// it was read from (`None`: this machine, discovered).
pub(crate) struct Compiled {
    pub plan: Plan,
    pub topology: Topology,
    pub fingerprint: String,
    pub topology_file: Option<PathBuf>,
}

/// Loads the topology (`--topology`, else the spec's `topology:` relative to `spec_dir`, else
/// this machine) and resolves the spec on it.
pub(crate) fn compile_loaded(
    loaded: &LoadedSpec,
    spec_dir: &Path,
    topology: Option<&Source>,
) -> Result<Compiled, Error> {
    let source = match (topology, &loaded.spec.topology) {
        (Some(t), _) => t.clone(),
        // Relative to the spec file, as users write it next to their job.
        (None, Some(t)) => t.relative_to(spec_dir),
        (None, None) => Source::Discover,
    };
    let t = source.load()?;
    let mut spec = loaded.spec.clone();
    node::fill_visible_gpus(&mut spec);
    let plan = resolve(&spec, &t).map_err(|error| Error::Resolve {
        map: Box::new(loaded.map.for_path(&error.path).clone()),
        error: Box::new(error),
    })?;
    Ok(Compiled {
        fingerprint: fixture::fingerprint(&t),
        plan,
        topology: t,
        topology_file: source.file().map(Path::to_path_buf),
    })
}

fn compile(
    args: &CompileArgs,
    stdout: &mut dyn Write,
    warnings: &mut Reporter,
) -> Result<(), Error> {
    let (spec_file, text, spec_dir) = read_spec(&args.spec)?;
    let loaded = load_with(&spec_file, &text, &args.overrides.set)?;
    if !loaded.spec.groups.is_empty() {
        return groups::compile(args, &loaded, &spec_file, &spec_dir, stdout, warnings);
    }
    let Compiled {
        plan,
        fingerprint,
        topology_file,
        ..
    } = compile_loaded(&loaded, &spec_dir, args.topology.as_ref())?;
    warnings.plan_warnings(&spec_file, &plan.warnings, &plan.allowed_warnings)?;
    let plan_dir = plan_dir(args);
    let regenerate = regenerate_words(args, plan_dir);
    let spec_shown = spec_shown(args, &spec_file, plan_dir);
    let spec_file = &spec_shown;
    let topology_file = topology_file.map(|t| relative_to(&t, plan_dir.unwrap_or(Path::new(""))));
    let header = provenance::Header {
        regenerate: &regenerate,
        spec_file,
        topology: &plan.topology,
        fingerprint: &fingerprint,
    };
    let provenance = Provenance {
        header,
        topology_file: topology_file.as_deref(),
        schema_ref: args.schema_ref.as_deref(),
    };
    let plan_yaml = || plan_file::render_yaml(&plan, &provenance);
    let text = match (args.emit, args.format) {
        (Some(kind), _) => {
            let plan_file = plan_yaml();
            let script = match &args.output {
                Some(o) if o != Path::new("-") => o.file_name().and_then(|n| n.to_str()),
                _ => None,
            };
            let plan_id = plan_file::id(&plan).to_string();
            let origin = emit::Origin {
                header,
                plan_file: &plan_file,
                script,
                plan_id: &plan_id,
            };
            emit::render(&plan, kind, &origin)?
        }
        (None, PlanFormat::Json) => plan_file::render_json(&plan, &provenance),
        (None, PlanFormat::Yaml) => plan_yaml(),
    };
    write_compiled(args, stdout, &text, topology_file.is_some())
}

/// The directory of the file `compile` writes (`None`: standard output). Readers of the plan
/// find its topology relative to the plan file, and so are the paths of its header: the same
/// plan compiled from another directory, or with `./` or an absolute `-o`, is the same file.
fn plan_dir(args: &CompileArgs) -> Option<&Path> {
    match &args.output {
        Some(o) if o != Path::new("-") => Some(o.parent().unwrap_or(Path::new(""))),
        _ => None,
    }
}

/// The spec as the header names it: `seen_from` the plan's directory, or the name standard
/// input was read under (`spec_file`).
fn spec_shown(args: &CompileArgs, spec_file: &str, plan_dir: Option<&Path>) -> String {
    match args.spec.as_path() == Path::new("-") {
        true => spec_file.to_string(),
        false => seen_from(&args.spec, plan_dir),
    }
}

/// A compiled file written (`-o`, or standard output), or compared with the file on disk
/// (`--check`): a machine read from a file by its name, a discovered one by its shape.
fn write_compiled(
    args: &CompileArgs,
    stdout: &mut dyn Write,
    text: &str,
    from_file: bool,
) -> Result<(), Error> {
    match (args.check, &args.output) {
        (true, Some(path)) => {
            let regenerate = shell::command(&regenerate_words(args, None));
            // A discovered machine is known by its shape: its name is a hostname, which in a
            // container is random and on a cluster differs from node to node.
            let named = match from_file {
                true => Machine::ByName,
                false => Machine::ByShape,
            };
            check(stdout, path, text, named, regenerate)
        }
        _ => {
            let mode = match args.emit {
                Some(_) => FileMode::Executable,
                None => FileMode::Data,
            };
            emit_as(stdout, args.output.as_deref(), text, mode)
        }
    }
}

/// A path as a generated file names it: relative to the file's directory `dir` when it has
/// one, else as typed (without a leading `./`).
fn seen_from(p: &Path, dir: Option<&Path>) -> String {
    match dir {
        Some(dir) => relative_to(p, dir),
        None => p.to_string_lossy().trim_start_matches("./").to_string(),
    }
}

/// The `numaplan compile` command that writes this output, as words (each is quoted where it
/// is shown), every path `seen_from` `dir` (the plan's directory for its header; `None` for
/// standard output and for a message, as typed): every option that changes the output, none
/// that does not (`--check`, `-q`).
fn regenerate_words(args: &CompileArgs, dir: Option<&Path>) -> Vec<String> {
    let path = |p: &Path| match p == Path::new("-") {
        true => "-".to_string(),
        false => seen_from(p, dir),
    };
    let mut words = vec!["numaplan".to_string(), "compile".into(), path(&args.spec)];
    let mut option = |flag: &str, value: String| words.extend([flag.to_string(), value]);
    for o in &args.overrides.set {
        option("--set", o.text());
    }
    match &args.topology {
        Some(t @ Source::Discover) => option("--topology", t.to_string()),
        Some(Source::File(file)) => option("--topology", path(file)),
        None => {}
    }
    if let Some(kind) = args.emit {
        option("--emit", kind.name().to_string());
    }
    if args.format == PlanFormat::Json {
        option("--format", "json".into());
    }
    if let Some(r) = &args.schema_ref {
        option("--schema-ref", r.clone());
    }
    if let Some(o) = args.output.as_deref().filter(|o| *o != Path::new("-")) {
        option("-o", path(o));
    }
    words
}

/// A job spec's name (for messages), text and directory (for its relative `topology:`); `-` is
/// standard input.
fn read_spec(path: &Path) -> Result<(String, String, PathBuf), Error> {
    if path == Path::new("-") {
        let text = crate::text::read_stdin().map_err(|e| match e {
            TextError::Io(source) => SpecError::Read {
                path: path.to_path_buf(),
                source,
            },
            TextError::NotUtf8(at) => SpecError::NotUtf8 {
                path: "<stdin>".into(),
                at,
            },
            TextError::TooLarge { limit } => SpecError::TooLarge {
                path: "<stdin>".into(),
                limit,
            },
        })?;
        return Ok(("<stdin>".into(), text, PathBuf::new()));
    }
    let text = crate::spec::load::read(path)?;
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    Ok((path.display().to_string(), text, dir))
}

/// `target` as seen from the directory `dir` (both relative to the current directory, or
/// absolute), in `/`-separated form: `../machines/dgx.yaml`.
fn relative_to(target: &Path, dir: &Path) -> String {
    let absolute = |p: &Path| -> Vec<String> {
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut parts: Vec<String> = Vec::new();
        for c in full.components() {
            match c {
                std::path::Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
                std::path::Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (t, d) = (absolute(target), absolute(dir));
    let common = t.iter().zip(&d).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".to_string(); d.len() - common];
    out.extend(t[common..].iter().cloned());
    out.join("/")
}

/// `--check`: compares `text` with the file at `path`, writing nothing; prints a unified diff
/// (old file -> what would be written) on a difference.
/// How `compile --check` tells whether a file is for the same machine.
#[derive(Clone, Copy)]
enum Machine {
    /// A topology file's: its name is part of the file.
    ByName,
    /// A discovered one's: by its fingerprint alone.
    ByShape,
}

fn check(
    stdout: &mut dyn Write,
    path: &Path,
    text: &str,
    machine: Machine,
    regenerate: String,
) -> Result<(), Error> {
    let compared = |t: &str| match machine {
        Machine::ByName => provenance::content(t),
        Machine::ByShape => provenance::unnamed(&provenance::content(t)),
    };
    let on_disk = match std::fs::read_to_string(path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(Error::Output {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if let Some(old) = &on_disk {
        if compared(old) == compared(text) {
            return Ok(());
        }
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(old.as_str(), text)
            .unified_diff()
            .context_radius(3)
            .header(
                &format!("{name} (on disk)"),
                &format!("{name} (compiled now)"),
            )
            .to_string();
        stdout.write_all(diff.as_bytes()).map_err(Error::Stdout)?;
    }
    Err(Error::Stale {
        path: path.to_path_buf(),
        missing: on_disk.is_none(),
        regenerate,
    })
}

fn topo(args: &TopoArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let t = args.topology.load()?;
    let text = match args.format {
        _ if args.matrix => topology::matrix::render(&t),
        TopoFormat::Text => summary::render(&t),
        TopoFormat::Yaml => fixture::dump(&t),
        TopoFormat::Json => fixture::dump_json(&t),
    };
    emit(stdout, args.output.as_deref(), &text)
}

/// The JSON schema of a file format, as committed under `schemas/`.
pub fn schema(which: SchemaKind) -> String {
    let schema = match which {
        SchemaKind::Topology => schemars::schema_for!(fixture::FixtureFile),
        SchemaKind::Job => schemars::schema_for!(crate::spec::raw::JobSpec),
        SchemaKind::Plan => schemars::schema_for!(plan_file::groups::AnyPlanFile),
        SchemaKind::Explain => schemars::schema_for!(crate::review::groups::AnyExplain),
        SchemaKind::Diff => schemars::schema_for!(crate::review::groups::AnyDiff),
        SchemaKind::Bind => schemars::schema_for!(bind::Report),
        SchemaKind::Exec => schemars::schema_for!(exec::DryRun),
        SchemaKind::Verify => schemars::schema_for!(verify::VerifyReport),
        SchemaKind::Watch => schemars::schema_for!(verify::WatchLine),
        SchemaKind::Codes => schemars::schema_for!(CodesReport),
    };
    let mut s = serde_json::to_string_pretty(&schema).expect("invariant: schemas serialize");
    s.push('\n');
    s
}

fn codes_cmd(
    code: Option<&str>,
    format: ReportFormat,
    stdout: &mut dyn Write,
) -> Result<(), Error> {
    let chosen: Vec<(codes::Code, &str)> = match code {
        Some(c) => vec![codes::find(c).ok_or_else(|| Error::UnknownCode(c.to_string()))?],
        None => codes::ALL.to_vec(),
    };
    let text = match (format, code) {
        (ReportFormat::Json, _) => json(&CodesReport {
            numaplan_codes: 1,
            codes: chosen
                .iter()
                .map(|(c, text)| CodeEntry {
                    code: c.0.to_string(),
                    summary: summary(text),
                    explanation: text.split_whitespace().collect::<Vec<_>>().join(" "),
                    formerly: codes::formerly(*c).map(String::from),
                })
                .collect(),
        }),
        (ReportFormat::Text, Some(_)) => {
            let (c, text) = chosen[0];
            match codes::formerly(c) {
                Some(old) => format!("{}: {text}\n(formerly part of {old})\n", c.0),
                None => format!("{}: {text}\n", c.0),
            }
        }
        // One line per code: its first sentence, with the text's line breaks folded.
        (ReportFormat::Text, None) => chosen
            .iter()
            .map(|(c, text)| format!("{c}  {}\n", summary(text)))
            .collect(),
    };
    emit(stdout, None, &text)
}

/// A code's explanation's first sentence, line breaks folded.
fn summary(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = text.split(". ").next().unwrap_or(&text);
    first.trim_end_matches('.').to_string()
}

/// `codes --format json` (`"numaplan_codes": 1`, schemas/codes.schema.json).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct CodesReport {
    numaplan_codes: u32,
    codes: Vec<CodeEntry>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct CodeEntry {
    /// `E0302`, or `W0203` for a kind of plan warning.
    code: String,
    /// The explanation's first sentence (what `numaplan codes` lists).
    summary: String,
    /// The whole explanation (what `numaplan codes CODE` prints), with the exit code where it
    /// is not 1.
    explanation: String,
    /// The code that covered this problem before it had a code of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    formerly: Option<String>,
}

/// A report as pretty JSON with a final newline.
pub(crate) fn json(report: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(report).expect("invariant: reports serialize") + "\n"
}

pub(crate) fn emit(stdout: &mut dyn Write, output: Option<&Path>, text: &str) -> Result<(), Error> {
    emit_as(stdout, output, text, FileMode::Data)
}

fn emit_as(
    stdout: &mut dyn Write,
    output: Option<&Path>,
    text: &str,
    mode: FileMode,
) -> Result<(), Error> {
    // `-o -` is standard output, as for most command-line tools.
    match output.filter(|path| *path != Path::new("-")) {
        Some(path) => write_atomic(path, text.as_bytes(), mode).map_err(|source| Error::Output {
            path: PathBuf::from(path),
            source,
        }),
        None => stdout.write_all(text.as_bytes()).map_err(Error::Stdout),
    }
}
