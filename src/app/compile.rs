//! `numaplan compile`: a job spec planned (`input/spec.rs`) and written as its plan (YAML or
//! JSON) or launch script (`--emit`), to standard output or a file (`-o`), or compared with the
//! file on disk (`--check`). A job of one group and one of several take the same path; the
//! plan file and the emitters write each in its shape.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::header::{plan_dir, regenerate_words, relative_to, spec_shown};
use super::input::spec::{PlannedJob, plan_job};
use super::write::emit_as;
use crate::cli::{CompileArgs, PlanFormat};
use crate::diag::report::Reporter;
use crate::emit::{self, EmitKind};
use crate::error::Error;
use crate::output::FileMode;
use crate::plan::job::JobPlan;
use crate::plan_file;
use crate::plan_file::job::{GroupProvenance, JobProvenance, render_job_json, render_job_yaml};
use crate::provenance;
use crate::shell;
use crate::spec::SpecError;
use crate::spec::load::load_with;
use crate::text::TextError;
use crate::topology::fixture;

pub(super) fn compile(
    args: &CompileArgs,
    stdout: &mut dyn Write,
    warnings: &mut Reporter,
) -> Result<(), Error> {
    let (spec_file, text, spec_dir) = read_spec(&args.spec)?;
    let loaded = load_with(&spec_file, &text, &args.overrides.set)?;
    if let Some(kind) = args.emit {
        emit::command_given(kind, &loaded.spec)?;
    }
    let PlannedJob {
        job,
        machines,
        files,
    } = plan_job(&loaded, &spec_dir, args.topology.as_ref())?;
    for plan in &job.groups {
        warnings.plan_warnings(&spec_file, &plan.shown_warnings(), &plan.allowed_warnings)?;
    }
    let plan_dir = plan_dir(args);
    let regenerate = regenerate_words(args, plan_dir);
    let spec_shown = spec_shown(args, &spec_file, plan_dir);
    let fingerprints: Vec<String> = machines.iter().map(fixture::fingerprint).collect();
    let topology_files: Vec<Option<String>> = files
        .iter()
        .map(|f| {
            let f = f.as_deref()?;
            Some(relative_to(f, plan_dir.unwrap_or(Path::new(""))))
        })
        .collect();
    // One topology and fingerprint per group, in the header's one line each.
    let topologies = job
        .groups
        .iter()
        .map(|g| g.topology.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let fingerprint_line = fingerprints.join(", ");
    let provenance = JobProvenance {
        header: provenance::Header {
            regenerate: &regenerate,
            spec_file: &spec_shown,
            topology: &topologies,
            fingerprint: &fingerprint_line,
        },
        schema_ref: args.schema_ref.as_deref(),
        groups: fingerprints
            .iter()
            .zip(&topology_files)
            .map(|(fingerprint, file)| GroupProvenance {
                topology_file: file.as_deref(),
                fingerprint,
            })
            .collect(),
    };
    let text = match (args.emit, args.format) {
        (Some(kind), _) => {
            let launch = launch_script(args, &job, &machines, kind, &provenance)?;
            warnings.plan_warnings(&spec_file, &launch.warnings, &job.allowed_warnings())?;
            launch.script
        }
        (None, PlanFormat::Json) => render_job_json(&job, &provenance),
        (None, PlanFormat::Yaml) => render_job_yaml(&job, &provenance),
    };
    write_compiled(args, stdout, &text, files.iter().all(Option::is_some))
}

/// `--emit KIND`: the job's launch script, the plan file embedded.
fn launch_script(
    args: &CompileArgs,
    job: &JobPlan,
    machines: &[crate::topology::Topology],
    kind: EmitKind,
    provenance: &JobProvenance,
) -> Result<emit::Launch, Error> {
    let plan_file = render_job_yaml(job, provenance);
    let plan_ids: Vec<String> = job
        .groups
        .iter()
        .map(|g| plan_file::id(g).to_string())
        .collect();
    let script = match &args.output {
        Some(o) if o != Path::new("-") => o.file_name().and_then(|n| n.to_str()),
        _ => None,
    };
    let origin = emit::Origin {
        header: provenance.header,
        plan_file: &plan_file,
        script,
        plan_ids: &plan_ids,
    };
    Ok(emit::launch(job, machines, kind, &origin)?)
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
