//! A job spec planned: each group's machine loaded (the group's own `topology:` relative to the
//! spec, else `--topology`, else the spec's `topology:`, else this machine; a spec without
//! `groups:` is a job of one group that names none), read as far as its policy reads it, and
//! the groups resolved on them, with `gpus: visible` read from this process's variables at this
//! edge so that the resolver stays pure. `compile` writes what this plans; `exec`, `bind`,
//! `verify`, `diff` and `explain` plan a spec they are given through it too.

use std::path::{Path, PathBuf};

use super::subject::{Subject, label};
use crate::error::Error;
use crate::plan::job::JobPlan;
use crate::resolve::SpecKey;
use crate::resolve::job::resolve_job;
use crate::spec::load::LoadedSpec;
use crate::topology::{Source, Topology, fixture};

/// A job spec planned: the job, and each group's machine and the file it was read from
/// (`None`: this machine, discovered), in group order.
pub(crate) struct PlannedJob {
    pub job: JobPlan,
    pub machines: Vec<Topology>,
    pub files: Vec<Option<PathBuf>>,
}

/// Plans every group of a spec on its machine (`topology`: `--topology`). A group's error
/// points at its key (`groups[1].cpu.policy`) where the group wrote it, and names the group.
pub(crate) fn plan_job(
    loaded: &LoadedSpec,
    spec_dir: &Path,
    topology: Option<&Source>,
) -> Result<PlannedJob, Error> {
    let spec = &loaded.spec;
    let mut machines: Vec<Topology> = Vec::new();
    let mut files: Vec<Option<PathBuf>> = Vec::new();
    for (i, group) in spec.job_groups().into_iter().enumerate() {
        // Relative to the spec file, as users write it next to their job; `key`: the spec's
        // key that names it.
        let (source, key) = match (group.topology, topology, &spec.topology) {
            (Some(own), _, _) => (
                own.relative_to(spec_dir),
                Some(format!("groups[{i}].topology")),
            ),
            (None, Some(t), _) => (t.clone(), None),
            (None, None, Some(top)) => (top.relative_to(spec_dir), Some("topology".to_string())),
            (None, None, None) => (Source::Discover, None),
        };
        let machine = source.load_for(group.spec.cpu.policy.reading());
        machines.push(machine.map_err(|error| match key {
            Some(key) => Error::SpecTopology {
                error: Box::new(error),
                map: Box::new(loaded.map.for_path(&key).clone()),
                key,
                group: group.name.map(str::to_string),
            },
            None => Error::Topology(error),
        })?);
        files.push(source.file().map(Path::to_path_buf));
    }
    let mut spec = spec.clone();
    fill_visible_gpus(&mut spec);
    for group in &mut spec.groups {
        fill_visible_gpus(&mut group.spec);
    }
    let job = resolve_job(&spec, &machines).map_err(|(error, in_group)| {
        let mut error = *error;
        // A group's error points at the group's key where the group wrote it.
        let written = |key: &SpecKey| {
            [&loaded.map.file, &loaded.map.sets]
                .iter()
                .any(|m| m.exact(&key.to_string()).is_some())
        };
        if let Some(key) = in_group.filter(written) {
            error.path = key;
        }
        Error::Resolve {
            map: Box::new(loaded.map.for_path(&error.path.to_string()).clone()),
            error: Box::new(error),
        }
    })?;
    Ok(PlannedJob {
        job,
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

/// Every group of a job spec, planned on its machine: the groups' subjects, in order.
pub(super) fn compiled_subjects(
    arg: &str,
    loaded: &LoadedSpec,
    spec_dir: &Path,
    topology: Option<&Source>,
) -> Result<Vec<Subject>, Error> {
    let PlannedJob { job, machines, .. } = plan_job(loaded, spec_dir, topology)?;
    Ok(job
        .groups
        .into_iter()
        .zip(machines)
        .map(|(plan, topology)| Subject {
            input: arg.to_string(),
            label: label(arg, Some(&topology)),
            fingerprint: fixture::fingerprint(&topology),
            plan,
            topology: Some(topology),
            notes: Vec::new(),
        })
        .collect())
}
