//! The processes `verify` looks at: those whose command line holds a name (`--match`), or the
//! pids it was given (`--pids`), each with the local rank it claims, read from `/proc`. Which of
//! them are ranks is `matching`'s to decide.

use super::matching::{self, Candidate, Found};
use crate::ids::RankPid;
use crate::sys::proc;
use crate::variables::NUMAPLAN_LOCAL_RANK;

/// `--pids`: each process the local rank it claims, else its place in the list; two that claim
/// one rank are flagged as under `--match`.
pub fn given(pids: &[u32]) -> Found {
    let mut found = Found::default();
    for (i, &pid) in pids.iter().enumerate() {
        let rank = claim_of(pid).map_or(i as u32, |(rank, _)| rank);
        found.ranks.push(RankPid { rank, pid });
    }
    found.duplicates = matching::duplicates(&found.ranks);
    found.ranks.sort();
    found
}

/// The local rank a process claims and the variable that says so: `NUMAPLAN_LOCAL_RANK`
/// (set by exec and bind), else the first launcher variable `bind` reads.
fn claim_of(pid: u32) -> Option<(u32, String)> {
    let vars = proc::environ(pid)?;
    std::iter::once(NUMAPLAN_LOCAL_RANK)
        .chain(crate::rank::local_rank_variables())
        .find_map(|var| Some((vars.get(var)?.parse().ok()?, var.to_string())))
}

/// Processes whose command line contains `name`, other than numaplan's own (this `verify`, an
/// `exec` supervisor whose arguments name the program): those are not ranks. Each with its
/// parent, its command line (shortened) and the local rank it claims.
pub fn matching(name: &str) -> Vec<Candidate> {
    let numaplan = proc::exe("self");
    let is_numaplan = |pid: u32| numaplan.is_some() && proc::exe(&pid.to_string()) == numaplan;
    let mut found: Vec<Candidate> = proc::pids()
        .into_iter()
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
                command: shorten(&command),
                claim: claim_of(pid),
            })
        })
        .collect();
    found.sort_by_key(|c| c.pid);
    found
}

/// A command line cut to 60 characters for a message.
fn shorten(command: &str) -> String {
    match command.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &command[..at]),
        None => command.to_string(),
    }
}
