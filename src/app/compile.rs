//! `numaplan compile`: a job spec planned (`planned.rs`) and written as its plan (YAML or
//! JSON) or launch script (`--emit`), to standard output or a file (`-o`), or compared with the
//! file on disk (`--check`). A spec with `groups:` is written as a plan of several groups.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::planned::{Compiled, PlannedGroups, compile_loaded, plan_groups};
use super::shown::{plan_dir, regenerate_words, relative_to, spec_shown};
use super::write::emit_as;
use crate::cli::{CompileArgs, PlanFormat};
use crate::diag::report::Reporter;
use crate::emit::{self, EmitKind};
use crate::error::Error;
use crate::output::FileMode;
use crate::plan_file::groups::{GroupProvenance, render_grouped_json, render_grouped_yaml};
use crate::plan_file::{self, Provenance};
use crate::provenance;
use crate::shell;
use crate::spec::SpecError;
use crate::spec::load::{LoadedSpec, load_with};
use crate::text::TextError;
use crate::topology::{Source, fixture};

pub(super) fn compile(
    args: &CompileArgs,
    stdout: &mut dyn Write,
    warnings: &mut Reporter,
) -> Result<(), Error> {
    let (spec_file, text, spec_dir) = read_spec(&args.spec)?;
    let loaded = load_with(&spec_file, &text, &args.overrides.set)?;
    if !loaded.spec.groups.is_empty() {
        return compile_grouped(args, &loaded, &spec_file, &spec_dir, stdout, warnings);
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

/// `compile` of a spec with `groups:`.
fn compile_grouped(
    args: &CompileArgs,
    loaded: &LoadedSpec,
    spec_file: &str,
    spec_dir: &Path,
    stdout: &mut dyn Write,
    warnings: &mut Reporter,
) -> Result<(), Error> {
    let plan_dir = plan_dir(args);
    let regenerate = regenerate_words(args, plan_dir);
    let spec_file = spec_shown(args, spec_file, plan_dir);
    let relative = |t: &Path| relative_to(t, plan_dir.unwrap_or(Path::new("")));
    let script = match &args.output {
        Some(o) if o != Path::new("-") => o.file_name().and_then(|n| n.to_str()),
        _ => None,
    };
    let shown = Shown {
        regenerate: &regenerate,
        spec_file: &spec_file,
        relative: &relative,
        emit: args.emit,
        format: args.format,
        script,
    };
    let (text, from_files) =
        compile_groups(loaded, spec_dir, args.topology.as_ref(), &shown, warnings)?;
    write_compiled(args, stdout, &text, from_files)
}

/// What `compile` says of the plan's header and files.
struct Shown<'a> {
    pub regenerate: &'a [String],
    pub spec_file: &'a str,
    /// Each group's topology file as the plan names it (relative to the plan), from its path.
    pub relative: &'a dyn Fn(&Path) -> String,
    /// What to write: a launch script (`--emit`), else the plan in `format`.
    pub emit: Option<EmitKind>,
    pub format: PlanFormat,
    /// The script's file name (`-o`), for its usage line.
    pub script: Option<&'a str>,
}

/// The plan of several groups, as text; the second value says whether every machine was read
/// from a file (else one was discovered).
fn compile_groups(
    loaded: &LoadedSpec,
    spec_dir: &Path,
    topology: Option<&Source>,
    shown: &Shown,
    warnings: &mut Reporter,
) -> Result<(String, bool), Error> {
    let PlannedGroups {
        plan,
        machines,
        files,
    } = plan_groups(loaded, spec_dir, topology)?;
    for (place, g) in plan.places() {
        // Printed with the group's name; the plan keeps them in the group's entry.
        let named: Vec<_> = g
            .warnings
            .iter()
            .map(|w| {
                crate::diag::Warning::new(w.code, format!("group `{}`: {}", place.name, w.message))
            })
            .collect();
        warnings.plan_warnings(shown.spec_file, &named, &g.allowed_warnings)?;
    }
    let fingerprints: Vec<String> = machines.iter().map(fixture::fingerprint).collect();
    let relative: Vec<Option<String>> = files
        .iter()
        .map(|f| f.as_deref().map(shown.relative))
        .collect();
    let provenances: Vec<GroupProvenance> = fingerprints
        .iter()
        .zip(&relative)
        .map(|(fingerprint, file)| GroupProvenance {
            topology_file: file.as_deref(),
            fingerprint,
        })
        .collect();
    let names: Vec<String> = plan.groups.iter().map(|g| g.topology.clone()).collect();
    let topology_line = names.join(", ");
    let fingerprint_line = fingerprints.join(", ");
    let header = provenance::Header {
        regenerate: shown.regenerate,
        spec_file: shown.spec_file,
        topology: &topology_line,
        fingerprint: &fingerprint_line,
    };
    let plan_yaml = || render_grouped_yaml(&plan, &header, &provenances);
    let text = match (shown.emit, shown.format) {
        (Some(kind), _) => {
            let plan_file = plan_yaml();
            let plan_ids: Vec<String> = plan
                .groups
                .iter()
                .map(|g| plan_file::id(g).to_string())
                .collect();
            let origin = emit::Origin {
                header,
                plan_file: &plan_file,
                script: shown.script,
                plan_id: "",
            };
            emit::render_groups(&plan, kind, &origin, &plan_ids)?
        }
        (None, PlanFormat::Json) => render_grouped_json(&plan, &provenances),
        (None, PlanFormat::Yaml) => plan_yaml(),
    };
    Ok((text, files.iter().all(Option::is_some)))
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
