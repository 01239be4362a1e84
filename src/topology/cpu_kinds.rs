//! The kinds of core of a hybrid machine (hwloc's CPU kinds): what one is, and the invariants
//! `Topology::build` checks for them.

use std::collections::BTreeMap;

use super::model::{ModelError, Subject, model_error};
use crate::cpuset::CpuSet;

/// One kind of core on a hybrid machine (hwloc's CPU kinds): Intel P- or E-cores, Arm big or
/// LITTLE cores. Ranks whose CPUs mix kinds run their threads at different speeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuKind {
    pub cpus: CpuSet,
    /// hwloc's ranking: 0 is the most power-efficient (slowest) kind, higher is faster; `None`
    /// when the source could not rank the kinds.
    pub efficiency: Option<u32>,
    /// What the source says about the kind, under hwloc's names: `CoreType` (IntelCore,
    /// IntelAtom), `FrequencyMaxMHz`, `LinuxCapacity`, `CPUPart`.
    pub info: BTreeMap<String, String>,
}

impl CpuKind {
    /// How output names the kind: by its efficiency rank where known.
    pub fn label(&self) -> String {
        match self.efficiency {
            Some(e) => format!("efficiency {e}"),
            None => "unranked".to_string(),
        }
    }
}

/// Sorts the kinds and checks that each is non-empty, within the machine, disjoint from the
/// others and made of whole cores.
pub(super) fn check(
    kinds: &mut [CpuKind],
    cores: &[&CpuSet],
    all: &CpuSet,
) -> Result<(), ModelError> {
    kinds.sort_by_key(|k| (k.efficiency, k.cpus.first()));
    let mut seen = CpuSet::new();
    for kind in kinds.iter() {
        if kind.cpus.is_empty() {
            return Err(model_error(Subject::Machine, "a CPU kind has no CPUs"));
        }
        let subject = || Subject::CpuKind(kind.cpus.clone());
        if !kind.cpus.is_subset(all) {
            return Err(model_error(
                subject(),
                format!(
                    "a CPU kind names CPUs {}, which are not in the machine",
                    kind.cpus.difference(all)
                ),
            ));
        }
        if kind.cpus.intersects(&seen) {
            return Err(model_error(
                subject(),
                format!(
                    "CPUs {} belong to more than one CPU kind",
                    kind.cpus.intersection(&seen)
                ),
            ));
        }
        seen = seen.union(&kind.cpus);
        if let Some(core) = cores
            .iter()
            .find(|c| c.intersects(&kind.cpus) && !c.is_subset(&kind.cpus))
        {
            return Err(model_error(
                subject(),
                format!(
                    "the CPU kind of CPUs {} splits core {}; SMT siblings are always of one kind",
                    kind.cpus, core
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(cpus: &str, efficiency: Option<u32>) -> CpuKind {
        CpuKind {
            cpus: cpus.parse().unwrap(),
            efficiency,
            info: BTreeMap::new(),
        }
    }

    /// Four cores with two SMT threads each: {0,4}, {1,5}, {2,6}, {3,7}.
    fn cores() -> Vec<CpuSet> {
        (0..4).map(|c| [c, c + 4].into_iter().collect()).collect()
    }

    fn check_kinds(kinds: &mut [CpuKind]) -> Result<(), ModelError> {
        let cores = cores();
        let cores: Vec<&CpuSet> = cores.iter().collect();
        check(kinds, &cores, &"0-7".parse().unwrap())
    }

    #[test]
    fn cpu_kinds_sort_by_efficiency() {
        let mut kinds = [
            kind("1,5", Some(1)),
            kind("2-3,6-7", None),
            kind("0,4", Some(0)),
        ];
        check_kinds(&mut kinds).unwrap();
        let order: Vec<String> = kinds
            .iter()
            .map(|k| format!("{} {}", k.label(), k.cpus))
            .collect();
        assert_eq!(
            order,
            ["unranked 2-3,6-7", "efficiency 0 0,4", "efficiency 1 1,5"]
        );
    }

    #[test]
    fn broken_kinds_are_rejected() {
        let message = |kinds: &mut [CpuKind]| check_kinds(kinds).unwrap_err().message;
        assert_eq!(
            message(&mut [kind("0-1,4-5", None), kind("2-3,6-8", None)]),
            "a CPU kind names CPUs 8, which are not in the machine"
        );
        assert_eq!(
            message(&mut [kind("0-3,4-7", None), kind("", None)]),
            "a CPU kind has no CPUs"
        );
        assert_eq!(
            message(&mut [kind("0-1,4-5", None), kind("1-3,5-7", None)]),
            "CPUs 1,5 belong to more than one CPU kind"
        );
        assert_eq!(
            message(&mut [kind("0-3", Some(0)), kind("4-7", Some(1))]),
            "the CPU kind of CPUs 0-3 splits core 0,4; SMT siblings are always of one kind"
        );
    }
}
