//! A binding a launcher made before `numaplan bind` ran: Open MPI's `mpirun` binds each rank to
//! a core by default, `srun` applies `--cpu-bind` (or the cluster's default), MPICH's `mpiexec`
//! has `-bind-to`. `bind` replaces it with the plan's binding, which
//! is what it is for; but the user may not know the launcher bound first, so it says so
//! (W0215). Which launcher it was is read from the variables each one sets; that the process
//! is bound at all, from its affinity being narrower than what its cgroup allows.

use super::Env;
use crate::cpuset::CpuSet;
use crate::diag::Warning;
use crate::diag::codes::W0215_LAUNCHER_BOUND;

/// The launchers that bind, by a variable each sets in its ranks, with what binds and how to
/// turn it off; the innermost first (Open MPI and MPICH ranks under Slurm carry Slurm's
/// variables too).
/// torchrun is not among them: it binds only with `--numa-binding`, which leaves no variable,
/// and a `taskset` around torchrun is the user's restriction.
const BINDERS: [(&str, &str, &str); 5] = [
    (
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "Open MPI's mpirun (it binds each rank to a core by default)",
        "`mpirun --bind-to none`",
    ),
    (
        "MPI_LOCALRANKID",
        "MPICH's mpiexec (`-bind-to`)",
        "`mpiexec -bind-to none`",
    ),
    (
        "PALS_LOCAL_RANKID",
        "PALS mpiexec (`--cpu-bind`)",
        "`mpiexec --cpu-bind none`",
    ),
    (
        "FLUX_TASK_LOCAL_ID",
        "flux run (its CPU affinity)",
        "`flux run -o cpu-affinity=off`",
    ),
    (
        "SLURM_LOCALID",
        "srun (`--cpu-bind`, or the cluster's default binding)",
        "`srun --cpu-bind=none`",
    ),
];

/// A launcher's binding found at `bind`'s start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LauncherBinding {
    /// Who bound, and how that is turned off.
    pub launcher: &'static str,
    pub off: &'static str,
    /// The CPUs the launcher bound this process to.
    pub bound: CpuSet,
    /// The CPUs its cgroup lets it use: what `bind` may bind within.
    pub may_use: CpuSet,
}

/// The launcher's binding, when this process runs under a launcher that binds (`env`) and its
/// affinity (`bound`) is narrower than what its cgroup allows (`may_use`, asked for only then:
/// it is read from the cgroup files). A narrower affinity without a launcher is the user's
/// restriction (`taskset`), which `bind` keeps.
pub fn launcher_binding(
    env: &Env,
    bound: &CpuSet,
    may_use: impl FnOnce() -> CpuSet,
) -> Option<LauncherBinding> {
    if bound.is_empty() {
        return None;
    }
    let (_, launcher, off) = BINDERS
        .iter()
        .find(|(var, _, _)| env.get(*var).is_some_and(|v| !v.trim().is_empty()))?;
    let may_use = may_use();
    if !bound.difference(&may_use).is_empty() || *bound == may_use {
        return None;
    }
    Some(LauncherBinding {
        launcher,
        off,
        bound: bound.clone(),
        may_use,
    })
}

impl LauncherBinding {
    /// W0215, unless the launcher bound the rank exactly as planned.
    pub fn warning(&self, local_rank: u32, planned: &CpuSet) -> Option<Warning> {
        (self.bound != *planned).then(|| {
            Warning::new(
                W0215_LAUNCHER_BOUND,
                format!(
                    "{} had bound local rank {local_rank} to CPUs {}; numaplan bind replaces \
                     that with the plan's CPUs {planned}: turn the launcher's binding off \
                     ({}) so that one tool binds",
                    self.launcher, self.bound, self.off
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[&str]) -> Env {
        vars.iter()
            .map(|v| (v.to_string(), "0".to_string()))
            .collect()
    }

    fn cpus(list: &str) -> CpuSet {
        list.parse().unwrap()
    }

    #[test]
    fn a_launchers_narrower_binding_is_found_and_named() {
        let all = cpus("0-7");
        // Open MPI under Slurm: Open MPI, the innermost, is named.
        let found = launcher_binding(
            &env(&["SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"]),
            &cpus("0"),
            || all.clone(),
        )
        .unwrap();
        assert!(found.launcher.starts_with("Open MPI's mpirun"));
        let warning = found.warning(0, &cpus("0-3")).unwrap();
        assert_eq!(warning.code, W0215_LAUNCHER_BOUND);
        assert!(
            warning
                .message
                .contains("to CPUs 0; numaplan bind replaces that with the plan's CPUs 0-3")
        );
        // Bound exactly as planned: nothing to say.
        assert_eq!(found.warning(0, &cpus("0")), None);
    }

    #[test]
    fn no_launcher_or_no_narrowing_is_no_launcher_binding() {
        let all = cpus("0-7");
        // A taskset around a plain command: the user's restriction.
        assert_eq!(
            launcher_binding(&env(&[]), &cpus("0-3"), || all.clone()),
            None
        );
        // A launcher that did not bind.
        assert_eq!(
            launcher_binding(&env(&["SLURM_LOCALID"]), &all, || all.clone()),
            None
        );
        // An affinity outside the cgroup's CPUs is no launcher's doing.
        assert_eq!(
            launcher_binding(&env(&["SLURM_LOCALID"]), &cpus("8"), || all.clone()),
            None
        );
        // torchrun binds only when asked, and leaves no trace: a taskset around it stays.
        assert_eq!(
            launcher_binding(&env(&["LOCAL_RANK"]), &cpus("0"), || all.clone()),
            None
        );
    }
}
