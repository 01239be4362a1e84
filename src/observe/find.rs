//! The processes `verify` looks at: those whose command line holds a name (`--match`), or the
//! pids it was given (`--pids`), each with what it says of its rank (its mark, else a launcher's
//! variable), read from `/proc`. Which of them are ranks is `matching`'s to decide.
//!
//! A process's mark is `NUMAPLAN_BOUND` in the environment it started with, or, for a process
//! that `numaplan.bind()` bound while it ran (its environment at `execve` cannot show that),
//! its mark file: `/tmp/numaplan-UID/rank-PID` as the process sees its `/tmp` (read through
//! `/proc/PID/root`, so a rank in a container is found from outside it), holding
//! `PLAN_ID:LOCAL_RANK START_TIME`. The start time (of `/proc/PID/stat`) makes a file left by
//! an earlier process of the same pid no mark.

use std::collections::{BTreeMap, BTreeSet};

use super::ObserveError;
use super::matching::{self, Candidate, Claim, Found, MarkFrom};
use super::titles;
use crate::ids::{Mark, PlanId, RankPid};
use crate::sys::proc;
use crate::variables::NUMAPLAN_BOUND;

/// `--pids`: each process the local rank its mark, engine title or launcher variable gives,
/// else its place in the list; two that claim one rank are flagged as under `--match`, and
/// ranks of the plan that none of them is are missing. A pid given twice, or of no process, is
/// an error.
pub fn given(pids: &[u32], plan: &PlanId, ranks_per_node: u32) -> Result<Found, ObserveError> {
    let mut seen = BTreeSet::new();
    let workers = Workers::new(ranks_per_node);
    let mut found = Found::default();
    for (i, &pid) in pids.iter().enumerate() {
        if !seen.insert(pid) {
            return Err(ObserveError::PidTwice { pid });
        }
        if proc::identity(pid).is_none() {
            return Err(ObserveError::NoSuchProcess {
                pid,
                flag: "--pids",
            });
        }
        let claim = claim_of(pid, &workers);
        let rank = claim.rank_for(plan).unwrap_or(i as u32);
        found.note(&claim, plan, RankPid { rank, pid });
    }
    found.duplicates = matching::duplicates(&found.ranks);
    found.ranks.sort();
    found.missing = matching::missing(&found.ranks, ranks_per_node);
    Ok(found)
}

/// `--process`: one process as its rank (`local_rank`, else its mark, engine title or
/// launcher variable), the plan's other ranks not looked for. A process that says none of
/// them is not taken for any rank: which one it is cannot be told.
pub fn alone(
    pid: u32,
    local_rank: Option<u32>,
    plan: &PlanId,
    ranks_per_node: u32,
) -> Result<Found, ObserveError> {
    if proc::identity(pid).is_none() {
        return Err(ObserveError::NoSuchProcess {
            pid,
            flag: "--process",
        });
    }
    if proc::exe(&pid.to_string()).is_none() && proc::command_line(pid).is_none_or(|c| c.is_empty())
    {
        return Err(ObserveError::KernelThread { pid });
    }
    let claim = claim_of(pid, &Workers::new(ranks_per_node));
    let rank = match local_rank.or_else(|| claim.rank_for(plan)) {
        Some(rank) => rank,
        None => unclaimed(pid, &claim, ranks_per_node)?,
    };
    if rank >= ranks_per_node {
        return Err(ObserveError::RankPastPlan {
            rank,
            ranks_per_node,
        });
    }
    let mut found = Found::default();
    found.note(&claim, plan, RankPid { rank, pid });
    Ok(found)
}

/// The rank of a process alone whose claim gives none of this plan's: the only one of a plan
/// of one rank a node, else why it cannot be told.
fn unclaimed(pid: u32, claim: &Claim, ranks_per_node: u32) -> Result<u32, ObserveError> {
    let why = match claim {
        Claim::Engine { title, .. } => {
            format!("its title {title} is an engine's worker of a GPU past the plan's ranks")
        }
        Claim::Unreadable { file, error } => format!("{file} cannot be read ({error})"),
        _ if ranks_per_node == 1 => return Ok(0),
        _ => "it carries no mark of this plan, no serving engine's worker title and no \
              launcher's local rank variable"
            .into(),
    };
    Err(ObserveError::RankUnknown { pid, why })
}

/// The serving engines' workers of this node (`titles`), read once and only where a process
/// looked at carries a worker's title: a scan of every process's command line costs some
/// milliseconds on a busy node, which `check_binding()` of a launcher's rank never pays.
struct Workers {
    ranks_per_node: u32,
    numbered: std::cell::OnceCell<BTreeMap<u32, Claim>>,
}

impl Workers {
    fn new(ranks_per_node: u32) -> Workers {
        Workers {
            ranks_per_node,
            numbered: std::cell::OnceCell::new(),
        }
    }

    /// Process `pid`'s claim as an engine's worker: the local rank of the GPU it drives, with
    /// every worker of the node numbered together, as the engine numbers them.
    fn claim(&self, pid: u32) -> Option<Claim> {
        titles::parse(&proc::command_line(pid)?)?;
        self.numbered
            .get_or_init(|| every_worker(self.ranks_per_node))
            .get(&pid)
            .cloned()
    }
}

/// Every serving engine's worker on this node, by pid, each as its claim.
fn every_worker(ranks_per_node: u32) -> BTreeMap<u32, Claim> {
    let (pids, titles): (Vec<u32>, Vec<titles::Title>) = proc::pids()
        .into_iter()
        .filter_map(|pid| Some((pid, titles::parse(&proc::command_line(pid)?)?)))
        .unzip();
    let ranks = titles::number(&titles, ranks_per_node);
    pids.into_iter()
        .zip(titles.into_iter().zip(ranks))
        .map(|(pid, (title, rank))| {
            let claim = Claim::Engine {
                engine: title.engine,
                title: title.text,
                rank,
            };
            (pid, claim)
        })
        .collect()
}

/// What process `pid` says of its rank: its mark file, else `NUMAPLAN_BOUND`, else its title
/// as one of `workers` (an engine's worker inherits the server's launcher variables, the same
/// in every worker), else the first launcher variable `bind` reads.
fn claim_of(pid: u32, workers: &Workers) -> Claim {
    if let Some(mark) = mark_file(pid) {
        return Claim::Marked {
            mark,
            from: MarkFrom::File,
        };
    }
    let engine = workers.claim(pid);
    let vars = match proc::environ(pid) {
        Ok(vars) => vars,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Claim::Unreadable {
                file: format!("/proc/{pid}/environ"),
                error: "permission denied".into(),
            };
        }
        Err(_) => return engine.unwrap_or(Claim::Nothing),
    };
    if let Some(mark) = vars.get(NUMAPLAN_BOUND).and_then(|v| v.parse().ok()) {
        return Claim::Marked {
            mark,
            from: MarkFrom::Environment,
        };
    }
    if let Some(engine) = engine {
        return engine;
    }
    crate::rank::local_rank_variables()
        .into_iter()
        .find_map(|var| {
            let rank = vars.get(var)?.trim().parse().ok()?;
            Some(Claim::Launcher {
                var: var.to_string(),
                rank,
            })
        })
        .unwrap_or(Claim::Nothing)
}

/// The mark `numaplan.bind()` wrote for process `pid`, when the file is there, is this
/// process's (its start time) and is well formed. The directory is named by the user as the
/// process sees itself, which in a user namespace (rootless podman) is not the uid `/proc`
/// shows here: then every `numaplan-*` directory of its `/tmp` is tried.
fn mark_file(pid: u32) -> Option<Mark> {
    let who = proc::identity(pid)?;
    let tmp = format!("/proc/{pid}/root/tmp");
    let read = |dir: &str| {
        let path = format!("{tmp}/{dir}/rank-{}", who.own_pid);
        let text = proc::read_small(std::path::Path::new(&path))?;
        let (mark, start) = text.trim().split_once(' ')?;
        (start.parse() == Ok(who.start_time))
            .then(|| mark.parse().ok())
            .flatten()
    };
    let own = format!("numaplan-{}", who.uid);
    read(&own).or_else(|| {
        std::fs::read_dir(&tmp)
            .ok()?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.starts_with("numaplan-") && *name != own)
            .find_map(|name| read(&name))
    })
}

/// Processes whose command line contains `name`, other than numaplan's own (this `verify`, an
/// `exec` supervisor whose arguments name the program) and this process's ancestors (the shell
/// or `srun` that started `verify`, whose command line names the match too): those are not
/// ranks. Each with its parent, owner, command line (shortened) and what it says of its rank.
pub fn matching(name: &str, ranks_per_node: u32) -> Vec<Candidate> {
    let workers = Workers::new(ranks_per_node);
    let numaplan = proc::exe("self");
    let is_numaplan = |pid: u32| numaplan.is_some() && proc::exe(&pid.to_string()) == numaplan;
    let ancestors = ancestors();
    let mut found: Vec<Candidate> = proc::pids()
        .into_iter()
        .filter(|pid| !ancestors.contains(pid))
        .filter(|&pid| !is_numaplan(pid))
        .filter_map(|pid| {
            let command = proc::command_line(pid)?;
            if !command.contains(name) {
                return None;
            }
            let (_, ppid) = proc::stat(pid)?;
            Some(Candidate {
                pid,
                ppid,
                uid: proc::identity(pid)?.uid,
                command: shorten(&command),
                claim: claim_of(pid, &workers),
            })
        })
        .collect();
    found.sort_by_key(|c| c.pid);
    found
}

/// This process's ancestors, from its parent up (a loop in what `/proc` says ends the walk).
fn ancestors() -> std::collections::BTreeSet<u32> {
    let mut found = std::collections::BTreeSet::new();
    let mut pid = std::process::id();
    while let Some((_, parent)) = proc::stat(pid) {
        if parent == 0 || !found.insert(parent) {
            break;
        }
        pid = parent;
    }
    found
}

/// A command line cut to 60 characters for a message.
fn shorten(command: &str) -> String {
    match command.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &command[..at]),
        None => command.to_string(),
    }
}
