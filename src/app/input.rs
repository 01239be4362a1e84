//! Reading what `diff`, `explain`, `exec` and `verify` are given: a plan file, or a job spec
//! compiled on the fly, from a path, from git history (`git:REV:PATH`) or from an environment
//! variable (`env:VAR`, how `--emit sbatch-exec` hands the plan to every node).

use std::path::{Path, PathBuf};

use super::planned::{PlannedJob, plan_job};
use crate::error::Error;
use crate::plan::Plan;
use crate::plan_file;
use crate::rank::group::{GroupShape, ThisNode, find_group};
use crate::resolve::on_machine::check_on_machine;
use crate::spec::load::load_with;
use crate::sys::node::environment;
use crate::text::TextError;
use crate::topology::pci_gpus;
use crate::topology::{Source, Topology, fixture};
use crate::yaml::Override;

/// A plan under review, with the topology it is drawn on when known.
pub(crate) struct Subject {
    /// The input as given (`plan.yaml`, `env:NUMAPLAN_PLAN`, `(command line)`), for messages.
    pub input: String,
    pub label: String,
    pub plan: Plan,
    pub fingerprint: String,
    pub topology: Option<Topology>,
    /// Facts to tell the reader (a fingerprint that differs from the topology given).
    pub notes: Vec<String>,
}

/// `plan.yaml on nvidia-dgx-a100`: diffs across machines say which side is on which.
fn label(arg: &str, topology: Option<&Topology>) -> String {
    match topology {
        Some(t) => format!("{arg} on {}", t.name()),
        None => arg.to_string(),
    }
}

/// Whether a plan's machine is wanted, and what to do when its topology (given, or named by the
/// plan) has another fingerprint than the machine the plan was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlanMachine {
    /// Not wanted (`exec`, `verify` run from the plan alone).
    NotNeeded,
    /// A mismatch is an error (`explain`: reasons drawn on the wrong machine would be invented).
    Strict,
    /// A mismatch is noted (`diff`, `explain --force`).
    Lenient,
}

/// The value of the variable `var`; when it is not set, the parts `var_1`, `var_2`... joined,
/// each without the newline that ends it (how launch scripts hand over a plan larger than one
/// variable may hold: `templates/embedded-plan.sh.j2`).
fn read_variable(var: &str) -> Result<String, std::env::VarError> {
    let whole = std::env::var(var);
    if !matches!(whole, Err(std::env::VarError::NotPresent)) {
        return whole;
    }
    let mut text = String::new();
    let mut i = 1;
    loop {
        match std::env::var(format!("{var}_{i}")) {
            Ok(part) => text.push_str(part.strip_suffix('\n').unwrap_or(&part)),
            Err(std::env::VarError::NotPresent) if i > 1 => return Ok(text),
            Err(e) => return Err(e),
        }
        i += 1;
    }
}

/// Reads `arg` (a path, `git:REV:PATH` or `env:VAR`), tells a plan from a job spec by content,
/// and loads it with its topology: a spec's own (or `topology`); a plan's from `topology`, else
/// from the topology file the plan names (relative to the plan), when it is there. Of a job of
/// several groups, the group this node runs (`--group`, `group`, else found: `rank::group`).
///
/// No `arg` (`exec` alone) is the default spec; `overrides` (`--set`) apply to a spec, and are
/// an error for a plan, which is not compiled again.
pub(crate) fn load_subject(
    arg: Option<&str>,
    topology: Option<&Source>,
    machine: PlanMachine,
    overrides: &[Override],
    group: Option<&str>,
) -> Result<Subject, Error> {
    let mut subjects = load_subjects(arg, topology, machine, overrides)?;
    let index = match subjects.len() {
        1 if group.is_none() => 0,
        _ => this_nodes_group(&subjects, group)?,
    };
    Ok(subjects.swap_remove(index))
}

/// The group of `subjects` (a job's groups) this node runs; `--group` of a plan of one group
/// names none of its groups.
fn this_nodes_group(subjects: &[Subject], flag: Option<&str>) -> Result<usize, Error> {
    let groups = group_shapes(subjects);
    let env = environment();
    let host = env
        .get("SLURMD_NODENAME")
        .cloned()
        .unwrap_or_else(crate::sys::proc::hostname);
    let node = ThisNode {
        flag,
        env: &env,
        host: &host,
        shape: &|| crate::exec::machine_shape(pci_gpus::count()),
    };
    Ok(find_group(&groups, &node)?)
}

/// The groups of `subjects`, as the group finder and its errors show them.
pub(crate) fn group_shapes(subjects: &[Subject]) -> Vec<GroupShape> {
    subjects
        .iter()
        .filter_map(|s| {
            let place = s.plan.group()?;
            Some(GroupShape {
                name: place.name.clone(),
                nodes: s.plan.nodes,
                topology: s.plan.topology.clone(),
                shape: s.plan.machine,
            })
        })
        .collect()
}

/// Every group of `arg` (one for a job of one group), each with its topology: see
/// `load_subject`.
pub(crate) fn load_subjects(
    arg: Option<&str>,
    topology: Option<&Source>,
    machine: PlanMachine,
    overrides: &[Override],
) -> Result<Vec<Subject>, Error> {
    let (arg, text, input_dir) = match arg {
        Some(arg) => {
            let (text, dir) = read_input(arg)?;
            (arg, text, dir)
        }
        None => ("(command line)", String::new(), PathBuf::new()),
    };
    if !plan_file::looks_like_plan(&text) {
        let loaded = load_with(arg, &text, overrides)?;
        let PlannedJob { job, machines, .. } = plan_job(&loaded, &input_dir, topology)?;
        return Ok(job
            .groups
            .into_iter()
            .zip(machines)
            .map(|(plan, topology)| compiled_subject(arg, plan, topology))
            .collect());
    }
    if let Some(o) = overrides.first() {
        return Err(Error::SetOnPlan {
            input: arg.to_string(),
            set: o.typed(),
        });
    }
    let loaded = plan_file::job::load_job(arg, &text)?;
    let plan_file = PlanText { arg, text: &text };
    loaded
        .into_iter()
        .map(|l| plan_subject(&plan_file, l, &input_dir, topology, machine))
        .collect()
}

/// A plan compiled from a job spec, on `topology`.
fn compiled_subject(arg: &str, plan: Plan, topology: Topology) -> Subject {
    Subject {
        input: arg.to_string(),
        label: label(arg, Some(&topology)),
        fingerprint: fixture::fingerprint(&topology),
        plan,
        topology: Some(topology),
        notes: Vec::new(),
    }
}

/// A plan file as given: its name (`arg`) and text, for errors located in it.
struct PlanText<'a> {
    arg: &'a str,
    text: &'a str,
}

/// A plan read from a file (one group's, of a plan of several), with its topology where the
/// command wants it.
fn plan_subject(
    file: &PlanText,
    loaded: plan_file::LoadedPlan,
    input_dir: &Path,
    topology: Option<&Source>,
    machine: PlanMachine,
) -> Result<Subject, Error> {
    let mut notes = Vec::new();
    let topology = match plan_topology_source(&loaded, input_dir, topology, machine, &mut notes) {
        Some(source) => Some(plan_topology(
            file.arg, file.text, &loaded, source, machine, &mut notes,
        )?),
        None => None,
    };
    Ok(Subject {
        input: file.arg.to_string(),
        label: label(file.arg, topology.as_ref()),
        plan: loaded.plan,
        fingerprint: loaded.fingerprint,
        topology,
        notes,
    })
}

/// Where a plan's topology comes from: `--topology`, else the file the plan names (relative to
/// the plan), when it is there (a note when it is not), else this machine when the plan was
/// discovered here (it names no file and bears this host's name); none when the command does
/// not need it.
fn plan_topology_source(
    loaded: &plan_file::LoadedPlan,
    input_dir: &Path,
    topology: Option<&Source>,
    machine: PlanMachine,
    notes: &mut Vec<String>,
) -> Option<Source> {
    let named = loaded
        .topology_file
        .as_ref()
        .map(|f| input_dir.join(f))
        .filter(|p| p.exists());
    match (machine, topology, &named) {
        (PlanMachine::NotNeeded, _, _) => None,
        (_, Some(t), _) => Some(t.clone()),
        (_, None, Some(p)) => Some(Source::File(p.clone())),
        (_, None, None) => {
            if let Some(f) = &loaded.topology_file {
                notes.push(format!(
                    "the plan names topology file `{f}`, which is not at `{}`",
                    input_dir.join(f).display()
                ));
                return None;
            }
            // Made on this machine (discovered, named after this host): this machine it is;
            // its fingerprint is checked like a file's.
            (loaded.plan.topology == crate::sys::proc::hostname()).then_some(Source::Discover)
        }
    }
}

/// Loads a plan's topology; a fingerprint other than the plan's is an error when `machine` is
/// strict, a note otherwise.
fn plan_topology(
    arg: &str,
    text: &str,
    loaded: &plan_file::LoadedPlan,
    source: Source,
    machine: PlanMachine,
    notes: &mut Vec<String>,
) -> Result<Topology, Error> {
    let t = source.load_for(loaded.plan.policy.reading())?;
    let fp = fixture::fingerprint(&t);
    if fp == loaded.fingerprint {
        // The plan's own machine: what only the machine knows must agree with the plan.
        check_on_machine(&loaded.plan, &t).map_err(|(path, message)| {
            plan_file::located(arg, text, &loaded.plan, &path, message)
        })?;
    } else {
        if machine == PlanMachine::Strict {
            return Err(Error::TopologyMismatch {
                input: arg.to_string(),
                expected: loaded.fingerprint.clone(),
                topology: source.to_string(),
                found: fp,
            });
        }
        notes.push(format!(
            "`{arg}` was made for topology fingerprint {}; `{}` has {fp}",
            loaded.fingerprint,
            t.name()
        ));
    }
    Ok(t)
}

/// The text of `arg` and the directory a spec's relative `topology:` is taken from (for a file
/// from git history: its directory in the working tree; for standard input, `-`, and an
/// environment variable: the current directory).
pub(crate) fn read_input(arg: &str) -> Result<(String, PathBuf), Error> {
    let unreadable = |e| match e {
        TextError::Io(source) => Error::InputRead {
            path: PathBuf::from(arg),
            source,
        },
        TextError::NotUtf8(at) => Error::NotUtf8 {
            path: PathBuf::from(arg),
            at,
        },
        TextError::TooLarge { limit } => Error::TooLarge {
            path: PathBuf::from(arg),
            limit,
        },
    };
    if arg == "-" {
        return Ok((
            crate::text::read_stdin().map_err(unreadable)?,
            PathBuf::new(),
        ));
    }
    if let Some(var) = arg.strip_prefix("env:") {
        let text = read_variable(var).map_err(|e| Error::InputRead {
            path: PathBuf::from(arg),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, format!("`{var}`: {e}")),
        })?;
        return Ok((text, PathBuf::new()));
    }
    let Some(rest) = arg.strip_prefix("git:") else {
        let text = crate::text::read(Path::new(arg)).map_err(unreadable)?;
        return Ok((text, parent(Path::new(arg))));
    };
    let git_err = |detail: String| Error::Git {
        arg: arg.to_string(),
        detail,
    };
    let (rev, path) = rest
        .split_once(':')
        .ok_or_else(|| git_err("expected `git:REV:PATH`".into()))?;
    let git = |args: &[&str]| -> Result<String, Error> {
        let out = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(|e| git_err(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(git_err(msg));
        }
        String::from_utf8(out.stdout).map_err(|_| git_err("the file is not UTF-8 text".into()))
    };
    let text = git(&["show", &format!("{rev}:{path}")])?;
    let dir = if path.starts_with("./") || path.starts_with("../") {
        parent(Path::new(path))
    } else {
        let top = git(&["rev-parse", "--show-toplevel"])?;
        parent(&Path::new(top.trim()).join(path))
    };
    Ok((text, dir))
}

fn parent(p: &Path) -> PathBuf {
    p.parent().map(Path::to_path_buf).unwrap_or_default()
}
