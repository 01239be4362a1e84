//! A plan file's groups (one for a job of one group), each with its topology where the command
//! wants one: `--topology`, else the file the plan names (relative to the plan), else this
//! machine when the plan was discovered here; on the plan's own machine, what only the machine
//! knows is checked against the plan (`resolve::on_machine`).

use std::path::Path;

use super::subject::{PlanMachine, Subject, label};
use crate::error::Error;
use crate::plan_file;
use crate::resolve::on_machine::check_on_machine;
use crate::topology::{Source, Topology, fixture};

/// A plan file as given: its name (`arg`) and text, for errors located in it.
pub(super) struct PlanText<'a> {
    pub arg: &'a str,
    pub text: &'a str,
}

/// Every group of a plan file, each with its topology where the command wants it.
pub(super) fn plan_subjects(
    file: &PlanText,
    input_dir: &Path,
    topology: Option<&Source>,
    machine: PlanMachine,
) -> Result<Vec<Subject>, Error> {
    plan_file::job::load_job(file.arg, file.text)?
        .into_iter()
        .map(|l| plan_subject(file, l, input_dir, topology, machine))
        .collect()
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
        Some(source) => Some(plan_topology(file, &loaded, source, machine, &mut notes)?),
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
    file: &PlanText,
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
            plan_file::located(file.arg, file.text, &loaded.plan, &path, message)
        })?;
    } else {
        if machine == PlanMachine::Strict {
            return Err(Error::TopologyMismatch {
                input: file.arg.to_string(),
                expected: loaded.fingerprint.clone(),
                topology: source.to_string(),
                found: fp,
            });
        }
        notes.push(format!(
            "`{}` was made for topology fingerprint {}; `{}` has {fp}",
            file.arg,
            loaded.fingerprint,
            t.name()
        ));
    }
    Ok(t)
}
