//! `compile` of a job spec with `groups:`: every group's machine loaded (its own `topology:`,
//! relative to the spec, else `--topology`, else the top level's, else this machine), the
//! groups resolved as one world, and the plan of several groups rendered, or its launch
//! script (`--emit`: `emit::groups`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{plan_dir, regenerate_words, relative_to, spec_shown, write_compiled};

use crate::cli::{CompileArgs, PlanFormat};
use crate::diag::report::Reporter;
use crate::emit::{self, EmitKind};
use crate::error::Error;
use crate::plan::groups::GroupedPlan;
use crate::plan_file;
use crate::plan_file::groups::{GroupProvenance, render_grouped_json, render_grouped_yaml};
use crate::provenance;
use crate::resolve::groups::resolve_groups;
use crate::spec::load::LoadedSpec;
use crate::topology::{Source, Topology, fixture};

/// `compile` of a spec with `groups:`.
pub(super) fn compile(
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

/// A job spec's groups planned, each on its machine.
pub(crate) struct PlannedGroups {
    pub plan: GroupedPlan,
    pub machines: Vec<Topology>,
    /// Each machine's file; `None` where it was discovered.
    pub files: Vec<Option<PathBuf>>,
}

/// Plans every group of a spec with `groups:` on its machine: the group's own `topology:`
/// (relative to the spec), else `topology` (`--topology`), else the top level's, else this
/// machine. A group's error points at its key (`groups[1].cpu.policy`) where the group wrote
/// it, and names the group.
pub(crate) fn plan_groups(
    loaded: &LoadedSpec,
    spec_dir: &Path,
    topology: Option<&Source>,
) -> Result<PlannedGroups, Error> {
    let spec = &loaded.spec;
    let mut machines: Vec<Topology> = Vec::new();
    let mut files: Vec<Option<PathBuf>> = Vec::new();
    for group in &spec.groups {
        let source = match (&group.topology, topology, &spec.topology) {
            (Some(own), _, _) => own.relative_to(spec_dir),
            (None, Some(t), _) => t.clone(),
            (None, None, Some(top)) => top.relative_to(spec_dir),
            (None, None, None) => Source::Discover,
        };
        machines.push(source.load()?);
        files.push(source.file().map(Path::to_path_buf));
    }
    // Each group's `gpus: visible` from this process's variables, as for a job of one group.
    let mut spec = spec.clone();
    for group in &mut spec.groups {
        super::node::fill_visible_gpus(&mut group.spec);
    }
    let plan = resolve_groups(&spec, &machines).map_err(|(i, error)| {
        let name = &spec.groups[i].name;
        let in_group = format!("groups[{i}].{}", error.path);
        let mut error = error.note(format!("in group `{name}`"));
        if loaded.map.file.exact(&in_group).is_some() {
            error.path = in_group;
        }
        Error::Resolve {
            map: Box::new(loaded.map.for_path(&error.path).clone()),
            error: Box::new(error),
        }
    })?;
    Ok(PlannedGroups {
        plan,
        machines,
        files,
    })
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
