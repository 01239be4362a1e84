//! `verify --match NAME`: which of the processes whose command line holds NAME are the plan's
//! ranks. Pure: `find.rs` reads each candidate's mark, environment, owner and parent from
//! `/proc`.
//!
//! A rank says whose rank it is with its mark (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`, which
//! `exec` and `bind` set in every rank they start, or the mark file `numaplan.bind()` writes).
//! A process marked by another plan is another job's, never this one's. Where no process
//! carries this plan's mark (ranks that numactl or a site's script bound), a launcher's
//! variable (`LOCAL_RANK`, `SLURM_LOCALID`, ...) says the rank instead; where some do, the ones
//! with only a launcher's variable are the launcher's wrappers around them (`sh -c 'numaplan
//! bind ...'`). A process that says neither is no rank (a launcher: `mpiexec`, `srun`,
//! torchrun's agent, a proxy). A process whose descendant claims the same rank wraps it (a
//! shell that did not `exec`). What remains is one process per rank; two claiming one rank, or
//! a rank that none claims, is a problem.
//!
//! The mark also bounds what `--repin` may touch: only the invoking user's processes that carry
//! this plan's mark (others are named with `--pids`, on purpose).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::ids::{Mark, PlanId, RankPid};
use crate::spec::Engine;

/// A process whose command line holds NAME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub pid: u32,
    pub ppid: u32,
    /// Its real user.
    pub uid: u32,
    /// Its command line, for messages.
    pub command: String,
    /// What it says of its rank.
    pub claim: Claim,
}

/// What a process says of which rank it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A plan's mark, read from its environment or its mark file.
    Marked { mark: Mark, from: MarkFrom },
    /// A launcher's variable (`var`) and the local rank it says.
    Launcher { var: String, rank: u32 },
    /// A serving engine's worker, by its title (`VLLM::Worker_TP1`), and the local rank of the
    /// GPU it drives (`titles::number`); none: a GPU past the plan's ranks.
    Engine {
        engine: Engine,
        title: String,
        rank: Option<u32>,
    },
    /// Nothing.
    Nothing,
    /// Its environment could not be read (`file`, `error`): another user's process.
    Unreadable { file: String, error: String },
}

/// Where a mark was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkFrom {
    /// `NUMAPLAN_BOUND` in the environment it started with (`exec`, `bind`).
    Environment,
    /// Its mark file (`numaplan.bind()` in a running process).
    File,
}

impl Claim {
    /// The local rank the claim gives for `plan`'s ranks: its mark's when the mark is `plan`'s,
    /// a launcher's variable's; none for another plan's mark or no claim.
    pub(super) fn rank_for(&self, plan: &PlanId) -> Option<u32> {
        match self {
            Claim::Marked { mark, .. } if mark.plan == *plan => Some(mark.local_rank),
            Claim::Launcher { rank, .. } => Some(*rank),
            Claim::Engine { rank, .. } => *rank,
            _ => None,
        }
    }

    fn is_marked_by(&self, plan: &PlanId) -> bool {
        matches!(self, Claim::Marked { mark, .. } if mark.plan == *plan)
    }
}

/// The ranks found, the processes left out and why, and what is wrong with the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// Sorted by rank.
    pub ranks: Vec<RankPid>,
    pub skipped: Vec<Skipped>,
    /// Local ranks that more than one process claims: rank -> pids.
    pub duplicates: BTreeMap<u32, Vec<u32>>,
    /// Local ranks of the plan that no process claims.
    pub missing: Vec<u32>,
    /// Ranks whose threads `--repin` must not move, each with why: processes without this
    /// plan's mark, or another user's.
    pub hands_off: BTreeMap<u32, String>,
    /// Ranks whose mark says they run without the plan's memory policy by design (refused
    /// where they started, and not required: W0217).
    pub without_memory: Vec<RankPid>,
    /// Ranks bound by `numaplan.bind()` in the running process (their mark is a file): the
    /// environment they started with is not the one they run with.
    pub bound_in_process: Vec<RankPid>,
    /// Ranks that are a serving engine's workers, found by their titles, with the engine:
    /// the engine bound them, as it binds (`--emit vllm|sglang`).
    pub engine_workers: Vec<(RankPid, Engine)>,
}

impl Found {
    /// Records process `at` as its rank, with what its claim says of how it runs: without its
    /// memory policy by design, bound in its running process, or an engine's worker.
    pub(super) fn note(&mut self, claim: &Claim, plan: &PlanId, at: RankPid) {
        self.ranks.push(at);
        match claim {
            Claim::Marked { mark, from } if mark.plan == *plan => {
                if mark.without_memory {
                    self.without_memory.push(at);
                }
                if *from == MarkFrom::File {
                    self.bound_in_process.push(at);
                }
            }
            Claim::Engine { engine, .. } => self.engine_workers.push((at, *engine)),
            _ => {}
        }
    }
}

/// Picks the ranks of the plan `plan` (of `ranks_per_node` local ranks) among `candidates`, as
/// `user` sees them.
pub fn select(candidates: &[Candidate], plan: &PlanId, ranks_per_node: u32, user: u32) -> Found {
    let mut found = Found::default();
    let any_marked = candidates.iter().any(|c| c.claim.is_marked_by(plan));
    let mut kept: Vec<&Candidate> = Vec::new();
    for c in candidates {
        let why = match &c.claim {
            Claim::Nothing => Why::NoClaim,
            Claim::Unreadable { file, error } => Why::Unreadable {
                file: file.clone(),
                error: error.clone(),
            },
            Claim::Marked { mark, .. } if mark.plan != *plan => {
                Why::OtherPlan { mark: mark.clone() }
            }
            Claim::Launcher { var, .. } if any_marked => Why::LauncherOnly { var: var.clone() },
            Claim::Engine {
                title, rank: None, ..
            } => Why::PastThePlan {
                title: title.clone(),
            },
            _ => {
                kept.push(c);
                continue;
            }
        };
        found.skipped.push(skip(c, why));
    }
    let by_pid: BTreeMap<u32, &Candidate> = candidates.iter().map(|c| (c.pid, c)).collect();
    let wrappers: BTreeMap<u32, u32> = kept
        .iter()
        .filter_map(|inner| {
            let rank = inner.claim.rank_for(plan)?;
            let outer = ancestor_claiming(inner, rank, plan, &by_pid)?;
            Some((outer, inner.pid))
        })
        .collect();
    for c in kept {
        if let Some(inner) = wrappers.get(&c.pid) {
            found.skipped.push(skip(c, Why::Wraps { inner: *inner }));
            continue;
        }
        let rank = c.claim.rank_for(plan).expect("kept claims");
        found.note(&c.claim, plan, RankPid { rank, pid: c.pid });
        if let Some(why) = hands_off(c, plan, user) {
            found.hands_off.insert(c.pid, why);
        }
    }
    found.duplicates = duplicates(&found.ranks);
    found.ranks.sort();
    found.missing = missing(&found.ranks, ranks_per_node);
    found
}

/// Why `--repin` must leave a rank found by `--match` alone, if it must.
fn hands_off(c: &Candidate, plan: &PlanId, user: u32) -> Option<String> {
    match &c.claim {
        Claim::Launcher { var, .. } => Some(format!(
            "it carries no mark of this plan (it was found by {var}): name it with `--pids` to \
             put its threads back"
        )),
        Claim::Engine { title, .. } => Some(format!(
            "it is a serving engine's worker ({title}), which the engine binds: name it with \
             `--pids` to put its threads back"
        )),
        _ if c.uid != user => Some(format!(
            "it is user {}'s process: name it with `--pids` to put its threads back",
            c.uid
        )),
        _ => {
            debug_assert!(c.claim.is_marked_by(plan));
            None
        }
    }
}

/// The local ranks of `0..ranks_per_node` that none of `ranks` claims.
pub fn missing(ranks: &[RankPid], ranks_per_node: u32) -> Vec<u32> {
    let claimed: BTreeSet<u32> = ranks.iter().map(|r| r.rank).collect();
    (0..ranks_per_node)
        .filter(|r| !claimed.contains(r))
        .collect()
}

/// The local ranks that more than one of `ranks` (`(local rank, pid)`) claims, with their pids
/// in the order given.
pub fn duplicates(ranks: &[RankPid]) -> BTreeMap<u32, Vec<u32>> {
    let mut claims: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for r in ranks {
        claims.entry(r.rank).or_default().push(r.pid);
    }
    claims.retain(|_, pids| pids.len() > 1);
    claims
}

/// The nearest ancestor of `inner` among the candidates that claims `rank` of `plan`.
fn ancestor_claiming(
    inner: &Candidate,
    rank: u32,
    plan: &PlanId,
    by_pid: &BTreeMap<u32, &Candidate>,
) -> Option<u32> {
    let mut seen = BTreeSet::new();
    let mut at = inner.ppid;
    while at > 1 && seen.insert(at) {
        let parent = by_pid.get(&at)?;
        if parent.claim.rank_for(plan) == Some(rank) {
            return Some(parent.pid);
        }
        at = parent.ppid;
    }
    None
}

fn skip(c: &Candidate, why: Why) -> Skipped {
    Skipped {
        pid: c.pid,
        command: c.command.clone(),
        why,
    }
}

/// A process whose command line matched but that is no rank, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub pid: u32,
    /// Its command line, shortened.
    pub command: String,
    pub why: Why,
}

/// Why a matching process is no rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// It says no local rank: a launcher or a helper.
    NoClaim,
    /// Its environment could not be read.
    Unreadable { file: String, error: String },
    /// Another plan's rank.
    OtherPlan { mark: Mark },
    /// Only a launcher's variable (`var`) where other processes carry this plan's mark: a
    /// launcher's process around a rank numaplan bound.
    LauncherOnly { var: String },
    /// Its descendant `inner` claims the same rank: a shell that did not `exec`.
    Wraps { inner: u32 },
    /// A serving engine's worker whose GPU is past the plan's ranks.
    PastThePlan { title: String },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::NoClaim => f.write_str(
                "it says no local rank (no mark of numaplan's, no launcher variable): a launcher \
                 or a helper",
            ),
            Why::Unreadable { file, error } => write!(
                f,
                "{file} cannot be read ({error}): another user's process, which only that user \
                 or root may read"
            ),
            Why::OtherPlan { mark } => write!(
                f,
                "it is local rank {} of another plan (NUMAPLAN_BOUND={mark}): another job's",
                mark.local_rank
            ),
            Why::LauncherOnly { var } => write!(
                f,
                "it has {var} but no mark of this plan: a launcher's process around a rank \
                 numaplan bound"
            ),
            Why::Wraps { inner } => {
                write!(f, "it wraps process {inner}, which claims the same rank")
            }
            Why::PastThePlan { title } => write!(
                f,
                "its title {title} is an engine's worker of a GPU past the plan's ranks: another \
                 server's, or a server given more GPUs than the plan"
            ),
        }
    }
}

impl fmt::Display for Skipped {
    /// `skipped process 4711 (mpiexec -n 2 ...): why`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipped process {} ({}): {}",
            self.pid, self.command, self.why
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 1000;

    fn rp(rank: u32, pid: u32) -> RankPid {
        RankPid { rank, pid }
    }

    fn plan(id: &str) -> PlanId {
        PlanId(format!("{id:0>16}"))
    }

    fn marked(plan_id: &str, rank: u32) -> Claim {
        Claim::Marked {
            mark: Mark {
                plan: plan(plan_id),
                local_rank: rank,
                without_memory: false,
            },
            from: MarkFrom::Environment,
        }
    }

    fn launcher(var: &str, rank: u32) -> Claim {
        Claim::Launcher {
            var: var.into(),
            rank,
        }
    }

    fn c(pid: u32, ppid: u32, command: &str, claim: Claim) -> Candidate {
        Candidate {
            pid,
            ppid,
            uid: ME,
            command: command.into(),
            claim,
        }
    }

    #[test]
    fn launchers_and_wrappers_are_not_ranks() {
        // mpiexec -n 2 sh -c 'numaplan bind plan.yaml -- ./train marker' marker
        let found = select(
            &[
                c(10, 1, "mpiexec -n 2 sh -c ... marker", Claim::Nothing),
                c(11, 10, "hydra_pmi_proxy marker", Claim::Nothing),
                c(
                    12,
                    11,
                    "sh -c numaplan bind ... marker",
                    launcher("MPI_LOCALRANKID", 0),
                ),
                c(
                    13,
                    11,
                    "sh -c numaplan bind ... marker",
                    launcher("MPI_LOCALRANKID", 1),
                ),
                c(20, 12, "./train marker", marked("a", 0)),
                c(21, 13, "./train marker", marked("a", 1)),
            ],
            &plan("a"),
            2,
            ME,
        );
        assert_eq!(found.ranks, [rp(0, 20), rp(1, 21)]);
        let skipped: Vec<u32> = found.skipped.iter().map(|s| s.pid).collect();
        assert_eq!(skipped, [10, 11, 12, 13]);
        assert!(
            found.skipped[2]
                .why
                .to_string()
                .contains("MPI_LOCALRANKID but no mark of this plan")
        );
        assert!(found.duplicates.is_empty() && found.missing.is_empty());
        assert!(found.hands_off.is_empty(), "marked, and the user's own");
    }

    #[test]
    fn another_plans_ranks_are_another_jobs() {
        // Two jobs on one node, each rank 0 and 1 of its plan.
        let both = [
            c(20, 1, "python train.py", marked("a", 0)),
            c(21, 1, "python train.py", marked("a", 1)),
            c(30, 1, "python train.py", marked("b", 0)),
            c(31, 1, "python train.py", marked("b", 1)),
        ];
        let a = select(&both, &plan("a"), 2, ME);
        assert_eq!(a.ranks, [rp(0, 20), rp(1, 21)]);
        assert!(a.duplicates.is_empty());
        assert_eq!(a.skipped.len(), 2);
        assert!(a.skipped[0].why.to_string().contains("another plan"));
        let b = select(&both, &plan("b"), 2, ME);
        assert_eq!(b.ranks, [rp(0, 30), rp(1, 31)]);
    }

    #[test]
    fn repin_touches_only_the_users_marked_ranks() {
        let mut other_user = c(21, 1, "python train.py", marked("a", 1));
        other_user.uid = 0;
        let found = select(
            &[c(20, 1, "python train.py", marked("a", 0)), other_user],
            &plan("a"),
            2,
            ME,
        );
        assert_eq!(found.ranks.len(), 2);
        assert_eq!(found.hands_off.keys().collect::<Vec<_>>(), [&21]);
        assert!(found.hands_off[&21].contains("user 0's process"));
        // Without any mark, launcher variables still find the ranks, but repin leaves them.
        let unmarked = select(
            &[
                c(40, 1, "python train.py", launcher("LOCAL_RANK", 0)),
                c(41, 1, "python train.py", launcher("LOCAL_RANK", 1)),
            ],
            &plan("a"),
            2,
            ME,
        );
        assert_eq!(unmarked.ranks, [rp(0, 40), rp(1, 41)]);
        assert_eq!(unmarked.hands_off.len(), 2);
        assert!(unmarked.hands_off[&40].contains("no mark of this plan"));
    }

    #[test]
    fn an_unreadable_process_says_why() {
        let found = select(
            &[c(
                50,
                1,
                "python train.py",
                Claim::Unreadable {
                    file: "/proc/50/environ".into(),
                    error: "permission denied".into(),
                },
            )],
            &plan("a"),
            1,
            ME,
        );
        assert!(found.ranks.is_empty());
        assert_eq!(
            found.skipped[0].why.to_string(),
            "/proc/50/environ cannot be read (permission denied): another user's process, which \
             only that user or root may read"
        );
    }

    #[test]
    fn a_shell_that_did_not_exec_wraps_its_rank() {
        // torchrun -> sh -c 'python train.py' -> python train.py, both with LOCAL_RANK=0.
        let found = select(
            &[
                c(5, 4, "sh -c python train.py", launcher("LOCAL_RANK", 0)),
                c(6, 5, "python train.py", launcher("LOCAL_RANK", 0)),
            ],
            &plan("a"),
            2,
            ME,
        );
        assert_eq!(found.ranks, [rp(0, 6)]);
        assert_eq!(
            found.skipped[0].why.to_string(),
            "it wraps process 6, which claims the same rank"
        );
        assert_eq!(found.missing, [1]);
    }

    #[test]
    fn two_processes_claiming_one_rank_are_flagged() {
        let found = select(
            &[
                c(30, 1, "./train", marked("a", 0)),
                c(31, 1, "./train", marked("a", 0)),
            ],
            &plan("a"),
            2,
            ME,
        );
        assert_eq!(found.ranks, [rp(0, 30), rp(0, 31)]);
        assert_eq!(found.duplicates, BTreeMap::from([(0, vec![30, 31])]));
        assert_eq!(found.missing, [1]);
    }
}
