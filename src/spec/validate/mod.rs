//! `raw::JobSpec` -> `Spec`: parse CPU and node lists, apply defaults, and collect every problem
//! (with its path) before stopping. One function per part of the spec; the CPU and OpenMP
//! settings are in `cpu.rs`, memory in `memory.rs`, the launchers' settings (`rendezvous`,
//! `slurm`, `mpirun`, `allow_warnings`) in `launch.rs`.

mod cpu;
mod groups;
mod kubernetes;
mod launch;
mod memory;
mod one_group;

use super::Spec;
use super::error::SpecProblem;
use super::raw::JobSpec;
use crate::cpuset::{CpuSet, MAX_CPU};
use crate::topology::fixture::CpuList;

/// torchrun's default MASTER_PORT.
pub const DEFAULT_PORT: u16 = 29500;

/// The most ranks a node can run, and GPUs a rank can take: a node has at most `MAX_CPU` CPUs.
pub const MAX_PER_NODE: u32 = MAX_CPU;

/// The longest argument or environment entry (`NAME=value`) the kernel passes to a program:
/// `MAX_ARG_STRLEN` (32 pages of 4 KiB) less the terminating NUL.
pub const MAX_ARG_LEN: usize = 32 * 4096 - 1;

pub fn validate(raw: &JobSpec) -> Result<Spec, Vec<SpecProblem>> {
    let Some(list) = &raw.groups else {
        return one_group::validate_one_group(raw);
    };
    // The top level alone, then each group laid over it.
    let base = JobSpec {
        groups: None,
        nodes: None,
        ..raw.clone()
    };
    let top = one_group::validate_one_group(&base);
    let mut p = Problems(top.as_ref().err().cloned().unwrap_or_default());
    let top_problems = p.0.clone();
    let groups = groups::groups(raw, list, &top_problems, &mut p);
    match top {
        Ok(spec) if p.0.is_empty() => Ok(Spec { groups, ..spec }),
        _ => Err(p.0),
    }
}

/// Every problem found, in the order found.
#[derive(Default)]
pub(super) struct Problems(Vec<SpecProblem>);

impl Problems {
    pub(super) fn add(&mut self, path: &str, message: String, label: &str, help: &str) {
        self.0.push(SpecProblem {
            path: path.to_string(),
            message,
            label: label.to_string(),
            help: help.to_string(),
        });
    }

    /// A CPU or node list, or `None` (with a problem) when it does not parse.
    fn cpulist(&mut self, path: &str, value: Option<&CpuList>) -> Option<CpuSet> {
        match value?.0.parse::<CpuSet>() {
            Ok(set) => Some(set),
            Err(e) => {
                self.add(
                    path,
                    format!("invalid CPU list `{}`: {e}", value?.0),
                    "not a cpulist",
                    "write a list such as \"0,64\" or \"0-23,48-71\"",
                );
                None
            }
        }
    }
}
