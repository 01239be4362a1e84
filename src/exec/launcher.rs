//! What a per-rank trampoline (`numaplan bind`) learns from the launcher that started it: which
//! local rank it is, how many local ranks the launcher runs, and the global numbering to fill in
//! where the launcher sets none. Pure: the environment comes in as a map.

use std::collections::BTreeMap;

use super::ExecError;
use super::hostlist;
use super::visible::VISIBILITY;
use crate::diag::Warning;
use crate::diag::codes::W0214_GPUS_RENUMBERED;
use crate::plan::{Plan, RankBinding};

/// Environment variables by name.
pub type Env = BTreeMap<String, String>;

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
        rank: "LOCAL_RANK",
        size: Size::Var("LOCAL_WORLD_SIZE"),
    },
    Launcher {
        rank: "SLURM_LOCALID",
        size: Size::Slurm,
    },
    Launcher {
        rank: "OMPI_COMM_WORLD_LOCAL_RANK",
        size: Size::Var("OMPI_COMM_WORLD_LOCAL_SIZE"),
    },
    Launcher {
        rank: "MPI_LOCALRANKID",
        size: Size::Var("MPI_LOCALNRANKS"),
    },
    Launcher {
        rank: "PALS_LOCAL_RANKID",
        size: Size::Unknown,
    },
    Launcher {
        rank: "FLUX_TASK_LOCAL_ID",
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

/// The variable that tells a process started by someone else's code its local rank (a number
/// or `gpu`), as `--local-rank` does.
pub const NUMAPLAN_LOCAL_RANK: &str = "NUMAPLAN_LOCAL_RANK";

/// The local rank: `flag`, else `NUMAPLAN_LOCAL_RANK`, else the launchers' variables
/// (`from_launchers`); `gpu` finds it by the GPUs this process sees (`by_gpu`).
pub fn local_rank(
    flag: Option<LocalRankChoice>,
    plan: &Plan,
    env: &Env,
) -> Result<LocalRank, ExecError> {
    let (choice, via) = match flag {
        Some(choice) => (Some(choice), "--local-rank"),
        None => match env
            .get(NUMAPLAN_LOCAL_RANK)
            .filter(|v| !v.trim().is_empty())
        {
            Some(value) => {
                let choice = value.parse().map_err(|_| ExecError::LocalRankValue {
                    var: NUMAPLAN_LOCAL_RANK.into(),
                    value: value.clone(),
                })?;
                (Some(choice), NUMAPLAN_LOCAL_RANK)
            }
            None => (None, ""),
        },
    };
    match choice {
        Some(LocalRankChoice::Number(rank)) => Ok(LocalRank {
            rank,
            via: via.into(),
            size: None,
            by_gpu: false,
        }),
        Some(LocalRankChoice::Gpu) => super::visible::by_gpu(plan, env),
        None => from_launchers(env),
    }
}

/// The local rank the launchers' variables say. When they disagree, a launcher that runs one
/// task per node is the outer one (`srun --ntasks-per-node=1 torchrun ...`) and yields to the
/// inner one; any other disagreement is an error.
fn from_launchers(env: &Env) -> Result<LocalRank, ExecError> {
    let mut found: Vec<LocalRank> = Vec::new();
    for l in &LAUNCHERS {
        let Some(value) = env.get(l.rank).filter(|v| !v.is_empty()) else {
            continue;
        };
        let rank = value
            .trim()
            .parse()
            .map_err(|_| ExecError::LauncherVariable {
                var: l.rank.into(),
                value: value.clone(),
            })?;
        let size = local_size(&l.size, env)?;
        if let Some((n, size_var)) = &size
            && rank >= *n
        {
            return Err(ExecError::LocalRankPastSize {
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
            "LOCAL_RANK" => torchrun_local_rank(found_rank, env)?,
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
            return Err(ExecError::NoLocalRank {
                looked: local_rank_variables().join(", "),
            });
        }
        _ if agreeing(&all) => all[0],
        _ if !inner.is_empty() && agreeing(&inner) => inner[0],
        _ => {
            let values: Vec<String> = found
                .iter()
                .map(|l| format!("{}={}", l.via, l.rank))
                .collect();
            return Err(ExecError::LocalRankDisagree {
                values: values.join(", "),
            });
        }
    };
    Ok(chosen.clone())
}

/// torchrun's `LOCAL_RANK`, checked against the rank its other variables give (`RANK` less
/// `GROUP_RANK` x `LOCAL_WORLD_SIZE`: torchrun numbers a node's ranks after the nodes before
/// it, and a plan's nodes are alike). Under `--virtual-local-rank` every worker has
/// `LOCAL_RANK=0` and one visible GPU: the real local rank is the derived one. Any other
/// disagreement is an error, never two ranks bound as one.
fn torchrun_local_rank(given: LocalRank, env: &Env) -> Result<LocalRank, ExecError> {
    let number = |var: &str| env.get(var).and_then(|v| v.trim().parse::<u32>().ok());
    let (Some(global), Some(group), Some(size)) = (
        number("RANK"),
        number("GROUP_RANK"),
        number("LOCAL_WORLD_SIZE"),
    ) else {
        return Ok(given);
    };
    let derived = global
        .checked_sub(group.saturating_mul(size))
        .filter(|&d| d < size);
    if derived == Some(given.rank) {
        return Ok(given);
    }
    let one_gpu_visible = ["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
        .iter()
        .any(|v| {
            env.get(*v)
                .is_some_and(|list| !list.trim().is_empty() && !list.contains(','))
        });
    match derived {
        Some(real) if given.rank == 0 && one_gpu_visible => Ok(LocalRank {
            rank: real,
            via: "RANK - GROUP_RANK x LOCAL_WORLD_SIZE (torchrun --virtual-local-rank)".into(),
            ..given
        }),
        _ => Err(ExecError::TorchrunLocalRank {
            values: format!(
                "LOCAL_RANK={}, but RANK={global} - GROUP_RANK={group} x LOCAL_WORLD_SIZE={size} \
                 gives {}",
                given.rank,
                match derived {
                    Some(d) => format!("local rank {d}"),
                    None => "no local rank of this node".into(),
                }
            ),
        }),
    }
}

fn local_size(size: &Size, env: &Env) -> Result<Option<(u32, String)>, ExecError> {
    let parse = |var: &str| -> Result<Option<(u32, String)>, ExecError> {
        match env.get(var).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(|n| Some((n, var.to_string())))
                .map_err(|_| ExecError::LauncherVariable {
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

/// The variables that give the job's size, torchrun's first.
const WORLD_SIZE: [&str; 5] = [
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "FLUX_JOB_SIZE",
    "SLURM_NTASKS",
];

/// Checks the local rank, the launcher's local size and the job's size (nodes x ranks per node)
/// against the plan; returns the rank's binding. A worker chosen by its GPUs (`by_gpu`) is no
/// launcher's rank: the launchers' sizes are not its job's.
pub fn rank_of<'p>(
    plan: &'p Plan,
    local: &LocalRank,
    env: &Env,
) -> Result<&'p RankBinding, ExecError> {
    // The local size first: where it differs, it is what to change (a world size that differs
    // too follows from it).
    if let Some((n, var)) = &local.size
        && *n != plan.ranks_per_node
    {
        return Err(ExecError::LocalSizeMismatch {
            var: var.clone(),
            launcher: *n,
            plan: plan.ranks_per_node,
        });
    }
    if let Some((var, value)) = WORLD_SIZE
        .iter()
        .filter(|_| !local.by_gpu)
        .find_map(|v| Some((*v, env.get(*v).filter(|x| !x.is_empty())?)))
    {
        let size: u64 = value
            .trim()
            .parse()
            .map_err(|_| ExecError::LauncherVariable {
                var: var.into(),
                value: value.clone(),
            })?;
        let planned = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
        if size != planned {
            return Err(ExecError::WorldSizeMismatch {
                var: var.into(),
                launcher: size,
                nodes: plan.nodes,
                ranks_per_node: plan.ranks_per_node,
            });
        }
    }
    plan.ranks
        .get(local.rank as usize)
        .ok_or_else(|| ExecError::LocalRankPastPlan {
            rank: local.rank,
            via: local.via.clone(),
            ranks: plan.ranks.len() as u32,
        })
}

/// torchrun's numbering, which a launcher sets (torchrun itself) or `bind` fills in.
const NUMBERING: [&str; 8] = [
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
];

/// The variables `bind` sets for a rank: the plan's NIC, visibility, OpenMP and user variables
/// always (but not the visibility of a worker chosen by its GPUs: its own already names them);
/// torchrun's numbering only where the environment has none, from the launcher's global
/// variables (Open MPI, MPICH/PMI, PALS, Flux, Slurm), else from the plan.
pub fn rank_environment(
    plan: &Plan,
    rank: &RankBinding,
    local: &LocalRank,
    env: &Env,
) -> BTreeMap<String, String> {
    let first = |vars: &[&str]| {
        vars.iter()
            .find_map(|v| env.get(*v).filter(|x| !x.is_empty()).cloned())
    };
    let rpn = plan.ranks_per_node;
    let global = first(&[
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PALS_RANKID",
        "FLUX_TASK_RANK",
        "SLURM_PROCID",
    ]);
    let node = first(&["SLURM_NODEID", "PALS_NODEID"]).or_else(|| {
        let g: u32 = global.as_ref()?.parse().ok()?;
        Some((g / rpn.max(1)).to_string())
    });
    let filled: BTreeMap<&str, Option<String>> = BTreeMap::from([
        ("RANK", global.clone()),
        ("WORLD_SIZE", first(&WORLD_SIZE[1..])),
        ("LOCAL_RANK", Some(local.rank.to_string())),
        (
            "LOCAL_WORLD_SIZE",
            Some(local.size.as_ref().map_or(rpn, |(n, _)| *n).to_string()),
        ),
        ("GROUP_RANK", node.clone()),
        ("NODE_RANK", node),
        (
            "MASTER_ADDR",
            env.get("SLURM_JOB_NODELIST")
                .and_then(|l| hostlist::first_host(l)),
        ),
        ("MASTER_PORT", None),
    ]);
    let mut out = BTreeMap::new();
    // Which rank it is, for `verify --match` and a nested `numaplan bind`.
    out.insert(NUMAPLAN_LOCAL_RANK.to_string(), rank.local_rank.to_string());
    for (k, v) in &rank.env {
        let keeps_own = local.by_gpu && VISIBILITY.contains(&k.as_str());
        if !NUMBERING.contains(&k.as_str()) && !keeps_own {
            out.insert(k.clone(), v.clone());
        }
    }
    for var in NUMBERING {
        if env.get(var).is_some_and(|v| !v.is_empty()) {
            continue; // the launcher's own numbering stays
        }
        let value = filled
            .get(var)
            .cloned()
            .flatten()
            .or_else(|| rank.env.get(var).cloned());
        if let Some(v) = value {
            out.insert(var.to_string(), v);
        }
    }
    out
}

/// The warnings to show before `ranks` start: the plan's, then what the environment they
/// inherit changes (`visibility_warning`).
pub fn warnings(plan: &Plan, ranks: &[RankBinding], env: &Env) -> Vec<Warning> {
    let mut all = plan.warnings.clone();
    all.extend(visibility_warning(plan, ranks, env));
    all
}

/// A warning when the environment the ranks inherit renumbers their GPUs and the plan does not
/// set that variable itself: a rank placed next to GPU 3 by the machine's numbering would use
/// whichever GPU the variable makes its device 3 (Slurm's `--gpus-per-task` sets one per task,
/// a login shell may carry one over). A variable that lists every GPU in order renumbers
/// nothing.
fn visibility_warning(plan: &Plan, ranks: &[RankBinding], env: &Env) -> Option<Warning> {
    let gpus: Vec<String> = ranks
        .iter()
        .flat_map(|r| r.gpus.iter().map(|g| g.index.to_string()))
        .collect();
    if gpus.is_empty() {
        return None;
    }
    let identity: Vec<String> = (0..plan.machine.gpus).map(|i| i.to_string()).collect();
    let (var, value) = VISIBILITY.iter().find_map(|&var| {
        let value = env.get(var).filter(|v| !v.trim().is_empty())?;
        let renumbers = value
            .split(',')
            .map(str::trim)
            .ne(identity.iter().map(String::as_str));
        // One rank that sees exactly its own GPUs (torchrun --virtual-local-rank) uses them.
        let own = ranks.len() == 1
            && value
                .split(',')
                .map(str::trim)
                .eq(gpus.iter().map(String::as_str));
        let planned = ranks.iter().all(|r| r.env.contains_key(var));
        (renumbers && !planned && !own).then_some((var, value))
    })?;
    let planned = match gpus.as_slice() {
        [one] => format!("GPU {one}"),
        _ => format!("GPUs {}", gpus.join(", ")),
    };
    Some(Warning::new(
        W0214_GPUS_RENUMBERED,
        format!(
            "{var}={value} in the environment renumbers the GPUs a rank sees, but the plan placed \
         its ranks next to {planned} by the machine's numbering and sets no {var}: a rank may \
         run on another GPU than the one it is bound next to; unset {var}, compile the plan \
         where it is set with `gpus: visible`, or give each rank its GPUs with \
         `gpu: {{visible: own}}`"
        ),
    ))
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
        let l = from_launchers(&e).unwrap();
        assert_eq!(l.rank, 1);
        assert!(l.via.contains("--virtual-local-rank"), "{}", l.via);
        // Plain torchrun: they agree.
        let l = from_launchers(&env_of(&torchrun("1", "5", "1", "4"), &[])).unwrap();
        assert_eq!((l.rank, l.via.as_str()), (1, "LOCAL_RANK"));
        // Disagreeing, and nothing settles it (no single visible GPU): an error naming all.
        let err = from_launchers(&env_of(&torchrun("0", "5", "1", "4"), &[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "torchrun's variables disagree: LOCAL_RANK=0, but RANK=5 - GROUP_RANK=1 x \
             LOCAL_WORLD_SIZE=4 gives local rank 1"
        );
        let err = from_launchers(&env_of(&torchrun("2", "1", "0", "4"), &[])).unwrap_err();
        assert!(err.to_string().contains("gives local rank 1"), "{err}");
    }

    #[test]
    fn a_local_rank_at_or_past_the_local_size_is_an_error_naming_both() {
        let err =
            from_launchers(&env(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "2")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "local rank 3 (LOCAL_RANK) is at or past the local size 2 (LOCAL_WORLD_SIZE)"
        );
        let err = from_launchers(&env(&[
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ]))
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
        let l = from_launchers(&env(&[("LOCAL_RANK", "3"), ("LOCAL_WORLD_SIZE", "8")])).unwrap();
        assert_eq!((l.rank, l.via.as_str()), (3, "LOCAL_RANK"));
        assert_eq!(l.size, Some((8, "LOCAL_WORLD_SIZE".into())));
        let l = from_launchers(&env(&[
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "1"),
            ("SLURM_STEP_TASKS_PER_NODE", "4,2"),
        ]))
        .unwrap();
        assert_eq!(l.size, Some((2, "SLURM_STEP_TASKS_PER_NODE".into())));
        // srun with one task per node around torchrun: torchrun's LOCAL_RANK wins.
        let l = from_launchers(&env(&[
            ("SLURM_LOCALID", "0"),
            ("SLURM_STEP_TASKS_PER_NODE", "1(x2)"),
            ("LOCAL_RANK", "5"),
            ("LOCAL_WORLD_SIZE", "8"),
        ]))
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
            from_launchers(&env(&[])),
            Err(ExecError::NoLocalRank { .. })
        ));
        assert!(matches!(
            from_launchers(&env(&[
                ("LOCAL_RANK", "1"),
                ("OMPI_COMM_WORLD_LOCAL_RANK", "2")
            ])),
            Err(ExecError::LocalRankDisagree { .. })
        ));
        assert!(matches!(
            from_launchers(&env(&[("LOCAL_RANK", "x")])),
            Err(ExecError::LauncherVariable { .. })
        ));
    }
}
