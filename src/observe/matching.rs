//! `verify --match NAME`: which of the processes whose command line holds NAME are the plan's
//! ranks. Pure: `find.rs` reads each candidate's environment and parent from `/proc`.
//!
//! A rank says which local rank it is: `NUMAPLAN_LOCAL_RANK`, which `exec` and `bind` set in
//! every rank they start, else a launcher's variable (`LOCAL_RANK`, `SLURM_LOCALID`, ...). A
//! process that says neither is no rank (a launcher: `mpiexec`, `srun`, torchrun's agent, a
//! proxy). Where some processes carry numaplan's variable, the ones that carry only a
//! launcher's are the launcher's wrappers around them (`sh -c 'numaplan bind ...'`). A process
//! whose descendant claims the same rank wraps it (a shell that did not `exec`). What remains
//! is one process per rank; two claiming one rank, or a rank that none claims, is a problem.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::ids::RankPid;
use crate::variables::NUMAPLAN_LOCAL_RANK;

/// A process whose command line holds NAME.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub pid: u32,
    pub ppid: u32,
    /// Its command line, for messages.
    pub command: String,
    /// The local rank it claims and the variable that says so.
    pub claim: Option<(u32, String)>,
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
}

/// Picks the ranks among `candidates`, for a plan of `ranks_per_node` local ranks.
pub fn select(candidates: &[Candidate], ranks_per_node: u32) -> Found {
    let mut found = Found::default();
    let any_own = candidates.iter().any(|c| {
        c.claim
            .as_ref()
            .is_some_and(|(_, var)| var == NUMAPLAN_LOCAL_RANK)
    });
    let mut kept: Vec<&Candidate> = Vec::new();
    for c in candidates {
        match &c.claim {
            None => found.skipped.push(skip(c, Why::NoClaim)),
            Some((_, var)) if any_own && var != NUMAPLAN_LOCAL_RANK => {
                found
                    .skipped
                    .push(skip(c, Why::LauncherOnly { var: var.clone() }));
            }
            Some(_) => kept.push(c),
        }
    }
    let by_pid: BTreeMap<u32, &Candidate> = candidates.iter().map(|c| (c.pid, c)).collect();
    let wrappers: BTreeMap<u32, u32> = kept
        .iter()
        .filter_map(|inner| {
            let rank = inner.claim.as_ref()?.0;
            let outer = ancestor_claiming(inner, rank, &by_pid)?;
            Some((outer, inner.pid))
        })
        .collect();
    for c in kept {
        if let Some(inner) = wrappers.get(&c.pid) {
            found.skipped.push(skip(c, Why::Wraps { inner: *inner }));
            continue;
        }
        let rank = c.claim.as_ref().expect("kept claims").0;
        found.ranks.push(RankPid { rank, pid: c.pid });
    }
    found.duplicates = duplicates(&found.ranks);
    found.ranks.sort();
    let claimed: BTreeSet<u32> = found.ranks.iter().map(|r| r.rank).collect();
    found.missing = (0..ranks_per_node)
        .filter(|r| !claimed.contains(r))
        .collect();
    found
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

/// The nearest ancestor of `inner` among the candidates that claims `rank`.
fn ancestor_claiming(
    inner: &Candidate,
    rank: u32,
    by_pid: &BTreeMap<u32, &Candidate>,
) -> Option<u32> {
    let mut seen = BTreeSet::new();
    let mut at = inner.ppid;
    while at > 1 && seen.insert(at) {
        let parent = by_pid.get(&at)?;
        if parent.claim.as_ref().is_some_and(|(r, _)| *r == rank) {
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
    /// Only a launcher's variable (`var`) where other processes carry numaplan's: a launcher's
    /// process around a rank numaplan bound.
    LauncherOnly { var: String },
    /// Its descendant `inner` claims the same rank: a shell that did not `exec`.
    Wraps { inner: u32 },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::NoClaim => f.write_str(
                "it says no local rank (no NUMAPLAN_LOCAL_RANK or launcher variable): a launcher \
                 or a helper",
            ),
            Why::LauncherOnly { var } => write!(
                f,
                "it has {var} but not NUMAPLAN_LOCAL_RANK: a launcher's process around a rank \
                 numaplan bound"
            ),
            Why::Wraps { inner } => {
                write!(f, "it wraps process {inner}, which claims the same rank")
            }
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

    fn rp(rank: u32, pid: u32) -> RankPid {
        RankPid { rank, pid }
    }

    fn c(pid: u32, ppid: u32, command: &str, claim: Option<(u32, &str)>) -> Candidate {
        Candidate {
            pid,
            ppid,
            command: command.into(),
            claim: claim.map(|(r, v)| (r, v.to_string())),
        }
    }

    #[test]
    fn launchers_and_wrappers_are_not_ranks() {
        // mpiexec -n 2 sh -c 'numaplan bind plan.yaml -- ./train marker' marker
        let found = select(
            &[
                c(10, 1, "mpiexec -n 2 sh -c ... marker", None),
                c(11, 10, "hydra_pmi_proxy marker", None),
                c(
                    12,
                    11,
                    "sh -c numaplan bind ... marker",
                    Some((0, "MPI_LOCALRANKID")),
                ),
                c(
                    13,
                    11,
                    "sh -c numaplan bind ... marker",
                    Some((1, "MPI_LOCALRANKID")),
                ),
                c(20, 12, "./train marker", Some((0, NUMAPLAN_LOCAL_RANK))),
                c(21, 13, "./train marker", Some((1, NUMAPLAN_LOCAL_RANK))),
            ],
            2,
        );
        assert_eq!(found.ranks, [rp(0, 20), rp(1, 21)]);
        let skipped: Vec<u32> = found.skipped.iter().map(|s| s.pid).collect();
        assert_eq!(skipped, [10, 11, 12, 13]);
        assert!(
            found.skipped[2]
                .why
                .to_string()
                .contains("MPI_LOCALRANKID but not NUMAPLAN_LOCAL_RANK")
        );
        assert!(found.duplicates.is_empty() && found.missing.is_empty());
    }

    #[test]
    fn a_shell_that_did_not_exec_wraps_its_rank() {
        // torchrun -> sh -c 'python train.py' -> python train.py, both with LOCAL_RANK=0.
        let found = select(
            &[
                c(5, 4, "sh -c python train.py", Some((0, "LOCAL_RANK"))),
                c(6, 5, "python train.py", Some((0, "LOCAL_RANK"))),
            ],
            2,
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
                c(30, 1, "./train", Some((0, NUMAPLAN_LOCAL_RANK))),
                c(31, 1, "./train", Some((0, NUMAPLAN_LOCAL_RANK))),
            ],
            2,
        );
        assert_eq!(found.ranks, [rp(0, 30), rp(0, 31)]);
        assert_eq!(found.duplicates, BTreeMap::from([(0, vec![30, 31])]));
        assert_eq!(found.missing, [1]);
    }
}
