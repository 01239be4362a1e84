//! Which local rank a process is, from the launcher that started it: `--local-rank`,
//! `NUMAPLAN_LOCAL_RANK`, else the launchers' variables (torchrun, Slurm, Open MPI, MPICH,
//! PALS, Flux), checked against each other and against the launcher's local size. Pure: the
//! environment comes in as a map.

use super::error::Claim;
use super::{Env, RankError};
use crate::plan::Plan;
use crate::variables::{
    CUDA_VISIBLE_DEVICES, FLUX_TASK_LOCAL_ID, GROUP_RANK, HIP_VISIBLE_DEVICES, LOCAL_RANK,
    LOCAL_WORLD_SIZE, MPI_LOCALNRANKS, MPI_LOCALRANKID, NUMAPLAN_LOCAL_RANK,
    OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE, PALS_LOCAL_RANKID, RANK, SLURM_LOCALID,
};

/// A launcher's local-rank variable and, where it sets one, its local-size variable.
struct Launcher {
    rank: &'static str,
    size: Size,
}

enum Size {
    Var(&'static str),
    /// Slurm: `SLURM_STEP_TASKS_PER_NODE` (`2(x3),1`, per node) or `SLURM_NTASKS_PER_NODE`.
    Slurm,
    Unknown,
}

/// The launchers `bind` knows, innermost-first is not assumed: see `local_rank`.
const LAUNCHERS: [Launcher; 6] = [
    Launcher {
        rank: LOCAL_RANK,
        size: Size::Var(LOCAL_WORLD_SIZE),
    },
    Launcher {
        rank: SLURM_LOCALID,
        size: Size::Slurm,
    },
    Launcher {
        rank: OMPI_COMM_WORLD_LOCAL_RANK,
        size: Size::Var(OMPI_COMM_WORLD_LOCAL_SIZE),
    },
    Launcher {
        rank: MPI_LOCALRANKID,
        size: Size::Var(MPI_LOCALNRANKS),
    },
    Launcher {
        rank: PALS_LOCAL_RANKID,
        size: Size::Unknown,
    },
    Launcher {
        rank: FLUX_TASK_LOCAL_ID,
        size: Size::Unknown,
    },
];

/// The variables that say which local rank a process is, in the order `bind` reads them.
pub fn local_rank_variables() -> Vec<&'static str> {
    LAUNCHERS.iter().map(|l| l.rank).collect()
}

/// This process's place on its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalRank {
    pub rank: u32,
    /// `--local-rank`, the variable it came from, or the GPU visibility that chose it
    /// (`CUDA_VISIBLE_DEVICES=3`).
    pub via: String,
    /// How many local ranks the launcher runs, and the variable that says so.
    pub size: Option<(u32, String)>,
    /// Chosen by the GPUs the process sees (`--local-rank gpu`): the process is a worker that
    /// some other program started (Ray, an inference server), not a launcher's rank.
    pub by_gpu: bool,
}

/// How `bind` is told which local rank it is: a number, or `gpu`: the rank whose GPUs are the
/// ones this process sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalRankChoice {
    Number(u32),
    Gpu,
}

impl std::str::FromStr for LocalRankChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "gpu" => Ok(LocalRankChoice::Gpu),
            n => n
                .parse()
                .map(LocalRankChoice::Number)
                .map_err(|_| format!("`{s}` is neither a local rank (0, 1, ...) nor `gpu`")),
        }
    }
}

/// The local rank: `flag`, else `NUMAPLAN_LOCAL_RANK` (which must agree with a launcher's
/// variable where one is set), else the launchers' variables (`from_launchers`); `gpu` finds it
/// by the GPUs this process sees (`by_gpu`).
pub fn local_rank(
    flag: Option<LocalRankChoice>,
    plan: &Plan,
    env: &Env,
) -> Result<LocalRank, RankError> {
    let (choice, via) = match flag {
        Some(choice) => (Some(choice), "--local-rank"),
        None => match env
            .get(NUMAPLAN_LOCAL_RANK)
            .filter(|v| !v.trim().is_empty())
        {
            Some(value) => {
                let choice = value.parse().map_err(|_| RankError::LocalRankValue {
                    var: NUMAPLAN_LOCAL_RANK.into(),
                    value: value.clone(),
                })?;
                (Some(choice), NUMAPLAN_LOCAL_RANK)
            }
            None => (None, ""),
        },
    };
    match choice {
        Some(LocalRankChoice::Number(rank)) => {
            if via == NUMAPLAN_LOCAL_RANK {
                agrees_with_launcher(rank, env, group_start(plan))?;
            }
            Ok(LocalRank {
                rank,
                via: via.into(),
                size: None,
                by_gpu: false,
            })
        }
        Some(LocalRankChoice::Gpu) => {
            let (rank, via) = super::visible::by_gpu(plan, env)?;
            Ok(LocalRank {
                rank,
                via,
                size: None,
                by_gpu: true,
            })
        }
        // One rank per node needs no one to say which: a pod or container that runs one
        // worker has no launcher.
        None => match from_launchers(env, group_start(plan)) {
            Err(RankError::NoLocalRank { .. }) if plan.ranks_per_node == 1 => Ok(LocalRank {
                rank: 0,
                via: "the plan's only local rank".into(),
                size: None,
                by_gpu: false,
            }),
            found => found,
        },
    }
}

/// `NUMAPLAN_LOCAL_RANK` is the user's (numaplan never sets it): where a launcher's variable
/// also says a local rank and it differs, which one is meant cannot be known (an exported
/// `NUMAPLAN_LOCAL_RANK` inherited by a launch nested inside a rank would bind every worker as
/// one), so that is an error naming both, never a silent choice.
fn agrees_with_launcher(rank: u32, env: &Env, start: GroupStart) -> Result<(), RankError> {
    match from_launchers(env, start) {
        Ok(launcher) if launcher.rank != rank => Err(RankError::LocalRankDisagree {
            claims: vec![
                Claim {
                    var: NUMAPLAN_LOCAL_RANK.into(),
                    rank,
                },
                Claim {
                    var: launcher.via,
                    rank: launcher.rank,
                },
            ],
        }),
        _ => Ok(()),
    }
}

/// The local rank the launchers' variables say. When they disagree, a launcher that runs one
/// task per node is the outer one (`srun --ntasks-per-node=1 torchrun ...`) and yields to the
/// inner one; any other disagreement is an error.
fn from_launchers(env: &Env, start: GroupStart) -> Result<LocalRank, RankError> {
    let mut found: Vec<LocalRank> = Vec::new();
    for l in &LAUNCHERS {
        let Some(value) = env.get(l.rank).filter(|v| !v.is_empty()) else {
            continue;
        };
        let rank = value
            .trim()
            .parse()
            .map_err(|_| RankError::LauncherVariable {
                var: l.rank.into(),
                value: value.clone(),
            })?;
        let size = local_size(&l.size, env)?;
        if let Some((n, size_var)) = &size
            && rank >= *n
        {
            return Err(RankError::LocalRankPastSize {
                var: l.rank.into(),
                rank,
                size_var: size_var.clone(),
                size: *n,
            });
        }
        let found_rank = LocalRank {
            rank,
            via: l.rank.into(),
            size,
            by_gpu: false,
        };
        found.push(match l.rank {
            LOCAL_RANK => torchrun_local_rank(found_rank, env, start)?,
            _ => found_rank,
        });
    }
    let agreeing = |c: &[&LocalRank]| c.windows(2).all(|w| w[0].rank == w[1].rank);
    let all: Vec<&LocalRank> = found.iter().collect();
    let inner: Vec<&LocalRank> = found
        .iter()
        .filter(|l| l.size.as_ref().is_none_or(|(n, _)| *n != 1))
        .collect();
    let chosen = match () {
        _ if all.is_empty() => {
            return Err(RankError::NoLocalRank {
                looked: local_rank_variables(),
            });
        }
        _ if agreeing(&all) => all[0],
        _ if !inner.is_empty() && agreeing(&inner) => inner[0],
        _ => {
            let claims = found
                .iter()
                .map(|l| Claim {
                    var: l.via.clone(),
                    rank: l.rank,
                })
                .collect();
            return Err(RankError::LocalRankDisagree { claims });
        }
    };
    Ok(chosen.clone())
}

/// Where the plan's group starts in the job: its first global rank and node (0, 0 for a plan of
/// one group).
#[derive(Clone, Copy, Debug, Default)]
struct GroupStart {
    rank: u64,
    node: u64,
    /// A group of a plan of several (its errors say so).
    grouped: bool,
}

fn group_start(plan: &Plan) -> GroupStart {
    GroupStart {
        rank: plan.place.first_rank,
        node: plan.place.first_node,
        grouped: plan.group().is_some(),
    }
}

/// torchrun's `LOCAL_RANK`, checked against the rank its other variables give (`RANK` less
/// `GROUP_RANK` x `LOCAL_WORLD_SIZE`: torchrun numbers a node's ranks after the nodes before
/// it, and a plan's nodes are alike; of a group, `RANK` less the group's first rank and its
/// nodes before this one, since other groups' nodes run other local sizes). Under
/// `--virtual-local-rank` every worker has `LOCAL_RANK=0` and one visible GPU: the real local
/// rank is the derived one. Any other disagreement is an error, never two ranks bound as one.
fn torchrun_local_rank(
    given: LocalRank,
    env: &Env,
    start: GroupStart,
) -> Result<LocalRank, RankError> {
    let number = |var: &str| env.get(var).and_then(|v| v.trim().parse::<u32>().ok());
    let (Some(global), Some(group), Some(size)) =
        (number(RANK), number(GROUP_RANK), number(LOCAL_WORLD_SIZE))
    else {
        return Ok(given);
    };
    let node_first = u64::from(group)
        .checked_sub(start.node)
        .map(|within| start.rank + within * u64::from(size));
    let derived = node_first
        .and_then(|first| u64::from(global).checked_sub(first))
        .filter(|&d| d < u64::from(size))
        .map(|d| d as u32);
    if derived == Some(given.rank) {
        return Ok(given);
    }
    let one_gpu_visible = [CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES].iter().any(|v| {
        env.get(*v)
            .is_some_and(|list| !list.trim().is_empty() && !list.contains(','))
    });
    match derived {
        Some(real) if given.rank == 0 && one_gpu_visible => Ok(LocalRank {
            rank: real,
            via: "RANK - GROUP_RANK x LOCAL_WORLD_SIZE (torchrun --virtual-local-rank)".into(),
            ..given
        }),
        _ => Err(RankError::TorchrunLocalRank {
            local_rank: given.rank,
            global,
            group,
            size,
            start: start.grouped.then_some((start.rank, start.node)),
            derived,
        }),
    }
}

fn local_size(size: &Size, env: &Env) -> Result<Option<(u32, String)>, RankError> {
    let parse = |var: &str| -> Result<Option<(u32, String)>, RankError> {
        match env.get(var).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(|n| Some((n, var.to_string())))
                .map_err(|_| RankError::LauncherVariable {
                    var: var.into(),
                    value: v.clone(),
                }),
        }
    };
    match size {
        Size::Var(var) => parse(var),
        Size::Slurm => {
            let node: usize = env
                .get("SLURM_NODEID")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let step = env
                .get("SLURM_STEP_TASKS_PER_NODE")
                .and_then(|v| tasks_per_node(v))
                .and_then(|counts| counts.get(node).copied());
            match step {
                Some(n) => Ok(Some((n, "SLURM_STEP_TASKS_PER_NODE".into()))),
                None => parse("SLURM_NTASKS_PER_NODE"),
            }
        }
        Size::Unknown => Ok(None),
    }
}

/// Slurm's tasks-per-node list (`2(x3),1`) expanded per node: [2, 2, 2, 1].
fn tasks_per_node(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for item in text.split(',') {
        let (count, repeat) = match item.split_once("(x") {
            Some((c, r)) => (c, r.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (item, 1),
        };
        let count: u32 = count.trim().parse().ok()?;
        out.extend(std::iter::repeat_n(count, repeat.min(1 << 16)));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// torchrun's variables for worker `local` of node `group`, `size` workers a node.
    fn torchrun(local: &str, global: &str, group: &str, size: &str) -> Vec<(&'static str, String)> {
        vec![
            ("LOCAL_RANK", local.into()),
            ("RANK", global.into()),
            ("GROUP_RANK", group.into()),
            ("LOCAL_WORLD_SIZE", size.into()),
        ]
    }

    fn env_of(pairs: &[(&'static str, String)], extra: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .collect()
    }

    #[test]
    fn torchruns_virtual_local_rank_is_taken_from_its_other_variables() {
        // --virtual-local-rank: LOCAL_RANK=0 and one visible GPU in every worker.
        let e = env_of(
            &torchrun("0", "5", "1", "4"),
            &[("CUDA_VISIBLE_DEVICES", "1")],
        );
        let l = from_launchers(&e, GroupStart::default()).unwrap();
        assert_eq!(l.rank, 1);
        assert!(l.via.contains("--virtual-local-rank"), "{}", l.via);
        // Plain torchrun: they agree.
        let l = from_launchers(
            &env_of(&torchrun("1", "5", "1", "4"), &[]),
            GroupStart::default(),
        )
        .unwrap();
        assert_eq!((l.rank, l.via.as_str()), (1, "LOCAL_RANK"));
        // Disagreeing, and nothing settles it (no single visible GPU): an error naming all.
        let err = from_launchers(
            &env_of(&torchrun("0", "5", "1", "4"), &[]),
            GroupStart::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "torchrun's variables disagree: LOCAL_RANK=0, but RANK=5 - GROUP_RANK=1 x \
             LOCAL_WORLD_SIZE=4 gives local rank 1"
        );
        let err = from_launchers(
            &env_of(&torchrun("2", "1", "0", "4"), &[]),
            GroupStart::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("gives local rank 1"), "{err}");
    }

    #[test]
    fn a_local_rank_at_or_past_the_local_size_is_an_error_naming_both() {
        let err = from_launchers(
            &env(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "2")]),
            GroupStart::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "local rank 3 (LOCAL_RANK) is at or past the local size 2 (LOCAL_WORLD_SIZE)"
        );
        let err = from_launchers(
            &env(&[
                ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ]),
            GroupStart::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("(OMPI_COMM_WORLD_LOCAL_SIZE)"),
            "{err}"
        );
    }

    #[test]
    fn slurm_tasks_per_node() {
        assert_eq!(tasks_per_node("2(x3),1"), Some(vec![2, 2, 2, 1]));
        assert_eq!(tasks_per_node("8"), Some(vec![8]));
        assert_eq!(tasks_per_node("x"), None);
    }

    #[test]
    fn the_local_rank_comes_from_the_launcher() {
        let l = from_launchers(
            &env(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "8")]),
            GroupStart::default(),
        )
        .unwrap();
        assert_eq!((l.rank, l.via.as_str()), (3, "LOCAL_RANK"));
        assert_eq!(l.size, Some((8, "LOCAL_WORLD_SIZE".into())));
        let l = from_launchers(
            &env(&[
                ("SLURM_LOCALID", "1"),
                ("SLURM_NODEID", "1"),
                ("SLURM_STEP_TASKS_PER_NODE", "4,2"),
            ]),
            GroupStart::default(),
        )
        .unwrap();
        assert_eq!(l.size, Some((2, "SLURM_STEP_TASKS_PER_NODE".into())));
        // srun with one task per node around torchrun: torchrun's LOCAL_RANK wins.
        let l = from_launchers(
            &env(&[
                ("SLURM_LOCALID", "0"),
                ("SLURM_STEP_TASKS_PER_NODE", "1(x2)"),
                ("LOCAL_RANK", "5"),
                ("LOCAL_WORLD_SIZE", "8"),
            ]),
            GroupStart::default(),
        )
        .unwrap();
        assert_eq!((l.rank, l.via.as_str()), (5, "LOCAL_RANK"));
    }

    #[test]
    fn a_local_rank_is_a_number_or_gpu() {
        assert_eq!("2".parse(), Ok(LocalRankChoice::Number(2)));
        assert_eq!(" gpu".parse(), Ok(LocalRankChoice::Gpu));
        assert!("-1".parse::<LocalRankChoice>().is_err());
        assert!("GPU".parse::<LocalRankChoice>().is_err());
    }

    #[test]
    fn no_or_disagreeing_variables_are_errors() {
        assert!(matches!(
            from_launchers(&env(&[]), GroupStart::default()),
            Err(RankError::NoLocalRank { .. })
        ));
        assert!(matches!(
            from_launchers(
                &env(&[("LOCAL_RANK", "1"), ("OMPI_COMM_WORLD_LOCAL_RANK", "2")]),
                GroupStart::default()
            ),
            Err(RankError::LocalRankDisagree { .. })
        ));
        assert!(matches!(
            from_launchers(&env(&[("LOCAL_RANK", "x")]), GroupStart::default()),
            Err(RankError::LauncherVariable { .. })
        ));
    }
}
