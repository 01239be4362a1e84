//! What `exec`, `bind`, `verify`, `diff` and `explain` are given, read in one call: its text
//! (`text.rs`: a path, `-`, `git:REV:PATH` or `env:VAR`), told a plan or a job spec by content,
//! then a spec planned on its machines (`spec.rs`, through which `compile` plans too) or a plan
//! file's groups read back with their topologies (`plan.rs`), and of a job of several groups
//! the one this node runs (`group.rs`); `subject.rs` is what each hands back. A command enters
//! here once and gets back all it reads of its input: `exec`, `bind` and `verify` by
//! [`this_nodes`] (the group this node runs), `diff` and `explain` by [`every_group`],
//! `compile` by `spec::plan_job`.

mod group;
mod plan;
pub(super) mod spec;
mod subject;
mod text;

use std::path::PathBuf;

pub(crate) use group::group_shapes;
pub(crate) use subject::{PlanMachine, Subject};

use crate::error::Error;
use crate::exec::{ExecError, Input};
use crate::plan_file;
use crate::spec::Groups;
use crate::spec::load::load_with;
use crate::topology::Source;
use crate::yaml::Override;

/// What a command is given and wants of it.
pub(crate) struct Request<'a> {
    /// A path, `git:REV:PATH` or `env:VAR`; `None` (`exec` alone): the default spec.
    pub arg: Option<&'a str>,
    /// `--topology`: a spec's machine, or the one a plan is drawn on.
    pub topology: Option<&'a Source>,
    pub machine: PlanMachine,
    /// `--set`: applied to a spec, an error for a plan, which is not compiled again.
    pub overrides: &'a [Override],
    /// The command runs the job's program and has none of its own (`exec` without words
    /// after `--`): a spec whose every group lacks a `command` is refused before it is
    /// planned, which costs what its ranks cost.
    pub needs_command: bool,
}

/// The group this node runs (`--group`, `group`, else found: `rank::group`) of what `req`
/// gives: the only group of a job of one.
pub(crate) fn this_nodes(req: &Request, group: Option<&str>) -> Result<Subject, Error> {
    let mut subjects = every_group(req)?;
    let index = match (subjects.len(), group) {
        (1, None) => 0,
        _ => group::this_nodes_group(&subjects, group)?,
    };
    Ok(subjects.swap_remove(index))
}

/// Every group of what `req` gives (one for a job of one group), each with its topology: its
/// text read, told a plan or a spec; a spec planned on its own machines (or `--topology`); a
/// plan read, on `--topology`, else on the topology file the plan names (relative to the
/// plan), when it is there.
pub(crate) fn every_group(req: &Request) -> Result<Vec<Subject>, Error> {
    let (arg, text, input_dir) = match req.arg {
        Some(arg) => {
            let (text, dir) = text::read_input(arg)?;
            (arg, text, dir)
        }
        None => ("(command line)", String::new(), PathBuf::new()),
    };
    if !plan_file::looks_like_plan(&text) {
        let loaded = load_with(arg, &text, req.overrides)?;
        if req.needs_command && loaded.spec.lacks_command(Groups::All) {
            let input = match req.arg {
                Some(_) => Input::Given,
                None => Input::None,
            };
            return Err(ExecError::NoCommand { input }.into());
        }
        return spec::compiled_subjects(arg, &loaded, &input_dir, req.topology);
    }
    if let Some(o) = req.overrides.first() {
        return Err(Error::SetOnPlan {
            input: arg.to_string(),
            set: o.typed(),
        });
    }
    let file = plan::PlanText { arg, text: &text };
    plan::plan_subjects(&file, &input_dir, req.topology, req.machine)
}
