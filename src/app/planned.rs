//! A job spec planned: each group's machine loaded (`--topology`, else the spec's or the
//! group's `topology:` relative to the spec, else this machine) and resolved on it, with
//! `gpus: visible` read from this process's variables at this edge so that the resolver stays
//! pure. `compile` writes what this plans; `exec`, `bind`, `verify`, `diff` and `explain` plan
//! a spec they are given through it too.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::plan::Plan;
use crate::plan::groups::GroupedPlan;
use crate::resolve::groups::resolve_groups;
use crate::resolve::resolve;
use crate::spec::load::LoadedSpec;
use crate::topology::{Source, Topology, fixture};

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
    let t = source.load_for(loaded.spec.cpu.policy.reading())?;
    let mut spec = loaded.spec.clone();
    fill_visible_gpus(&mut spec);
    let plan = resolve(&spec, &t).map_err(|error| Error::Resolve {
        map: Box::new(loaded.map.for_path(&error.path.to_string()).clone()),
        error: Box::new(error),
    })?;
    Ok(Compiled {
        fingerprint: fixture::fingerprint(&t),
        plan,
        topology: t,
        topology_file: source.file().map(Path::to_path_buf),
    })
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
        machines.push(source.load_for(group.spec.cpu.policy.reading())?);
        files.push(source.file().map(Path::to_path_buf));
    }
    // Each group's `gpus: visible` from this process's variables, as for a job of one group.
    let mut spec = spec.clone();
    for group in &mut spec.groups {
        fill_visible_gpus(&mut group.spec);
    }
    let plan = resolve_groups(&spec, &machines).map_err(|(i, error)| {
        let name = &spec.groups[i].name;
        let in_group = error.path.in_group(i);
        let mut error = error.note(format!("in group `{name}`"));
        if loaded.map.file.exact(&in_group.to_string()).is_some() {
            error.path = in_group;
        }
        Error::Resolve {
            map: Box::new(loaded.map.for_path(&error.path.to_string()).clone()),
            error: Box::new(error),
        }
    })?;
    Ok(PlannedGroups {
        plan,
        machines,
        files,
    })
}

/// `gpus: visible` takes its GPUs from this process's visibility variable (CUDA's, else
/// ROCm's), where one is set: filled in here, at the edge, so that the resolver stays pure.
fn fill_visible_gpus(spec: &mut crate::spec::Spec) {
    use crate::spec::GpuChoice;
    use crate::variables::{CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES};
    if let GpuChoice::Visible(visible) = &mut spec.gpus {
        *visible = [CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES]
            .into_iter()
            .find_map(|var| Some((var.to_string(), std::env::var(var).ok()?)));
    }
}
