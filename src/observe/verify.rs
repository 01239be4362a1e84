//! Reads the bindings ranks really have from `/proc` and compares them with the plan: every
//! thread's `Cpus_allowed_list` (a thread may narrow its CPUs, as NCCL and OpenMP runtimes do,
//! but never leave the rank's set), the memory policy `numa_maps` reports, and where the
//! rank's memory is (`numa_maps`' pages per node): under the plan's threshold on its planned
//! nodes, a rank is a mismatch however its policy reads.

use super::Problem;
use crate::cpuset::CpuSet;
use crate::ids::NodeId;
use crate::ids::RankPid;
use crate::phrase::size;
use crate::plan::{MemoryBinding, Plan, RankBinding, ShownPolicy};
use crate::spec::MemPolicy;
use crate::sys::numa_maps::{self, Residence};
use crate::sys::proc::{environ, thread_cpus, thread_name};
use crate::variables::NIC_VARIABLES;

pub struct Table {
    pub rows: Vec<Row>,
    /// Local ranks of the plan that no process was found for (`verify --match`).
    pub missing: Vec<u32>,
}

pub struct Row {
    pub rank: u32,
    pub pid: u32,
    /// The live threads' ids (none: the rank has exited).
    pub tids: Vec<u32>,
    pub planned_cpus: CpuSet,
    /// The union of the threads' CPUs.
    pub actual_cpus: CpuSet,
    /// Threads whose CPUs are a strict subset of the rank's.
    pub narrowed: usize,
    /// Threads that may run on CPUs outside the rank's.
    pub outside: Vec<Thread>,
    pub planned_memory: String,
    pub actual_memory: String,
    /// The nodes the plan puts the rank's memory on (none without a memory policy).
    pub memory_nodes: Vec<NodeId>,
    /// Where its memory is, per node.
    pub residence: Residence,
    /// The share of its memory that must be on `memory_nodes` (0 to 1), if any.
    pub min_local: Option<f64>,
    pub problems: Vec<Problem>,
    /// How the rank ended, when it had already exited by the time it was read: then what
    /// `/proc` shows is not its binding, and it is reported but not counted as a mismatch.
    pub exited: Option<String>,
}

/// A thread of a rank, as `/proc/PID/task/TID/status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thread {
    pub tid: u32,
    pub name: String,
    pub cpus: CpuSet,
}

/// The share of a rank's memory that must be on its planned nodes: `min_local` (`--min-local`,
/// 0 to 1) for any rank with a memory policy, else 90% for `bind`; `preferred` and
/// `interleave` have none by default (the report shows the spread), nor does `none`.
pub fn min_local(memory: &MemoryBinding, asked: Option<f64>) -> Option<f64> {
    match (memory.policy, asked) {
        (MemPolicy::None, _) => None,
        (_, Some(share)) => Some(share),
        (MemPolicy::Bind, None) => Some(0.9),
        _ => None,
    }
}

/// Whether a reading includes where the memory is: `numa_maps` costs the kernel a walk of the
/// rank's page tables (milliseconds for a large rank), so a watch reads it less often than the
/// threads' CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    Read,
    Skip,
}

/// Checks each `(local rank, pid)` against the plan (`min_local`: `--min-local`, 0 to 1).
pub fn check(plan: &Plan, pids: &[RankPid], asked_min_local: Option<f64>) -> Table {
    check_with(plan, pids, asked_min_local, Pages::Read)
}

/// The table of ranks whose binding each read back in itself before its program started, and
/// found as it was applied (`exec --verify`: a rank whose binding differed was not started).
/// One row per rank, its one thread then: what it read is what the plan says.
pub fn read_back(plan: &Plan, ranks: &[RankPid]) -> Table {
    let rows = ranks
        .iter()
        .filter_map(|&RankPid { rank, pid }| {
            let planned = plan.ranks.get(rank as usize)?;
            Some(Row {
                rank,
                pid,
                tids: vec![pid],
                planned_cpus: planned.cpus.clone(),
                actual_cpus: planned.cpus.clone(),
                narrowed: 0,
                outside: Vec::new(),
                planned_memory: planned.memory.numa_maps(),
                actual_memory: planned.memory.numa_maps(),
                memory_nodes: planned.memory.nodes.clone(),
                residence: Residence::default(),
                min_local: None,
                problems: Vec::new(),
                exited: None,
            })
        })
        .collect();
    Table {
        rows,
        missing: Vec::new(),
    }
}

/// `check`, reading `numa_maps` or not.
pub fn check_with(
    plan: &Plan,
    pids: &[RankPid],
    asked_min_local: Option<f64>,
    pages: Pages,
) -> Table {
    let rows = pids
        .iter()
        .map(|&RankPid { rank, pid }| {
            let planned = plan.ranks.get(rank as usize);
            let mut row = Row {
                rank,
                pid,
                tids: Vec::new(),
                planned_cpus: planned.map(|r| r.cpus.clone()).unwrap_or_default(),
                actual_cpus: CpuSet::new(),
                narrowed: 0,
                outside: Vec::new(),
                planned_memory: planned.map_or("-".into(), |r| r.memory.numa_maps()),
                actual_memory: "-".into(),
                memory_nodes: planned.map(|r| r.memory.nodes.clone()).unwrap_or_default(),
                residence: Residence::default(),
                min_local: planned.and_then(|r| min_local(&r.memory, asked_min_local)),
                problems: Vec::new(),
                exited: None,
            };
            if planned.is_none() {
                row.problems.push(Problem::NotInPlan { rank });
            }
            read_threads(&mut row, planned);
            if pages == Pages::Read {
                read_memory(&mut row);
            }
            row
        })
        .collect();
    Table {
        rows,
        missing: Vec::new(),
    }
}

/// The rank's threads against its planned CPUs (and its places, when it has any).
fn read_threads(row: &mut Row, planned: Option<&RankBinding>) {
    let pid = row.pid;
    let threads = thread_cpus(pid);
    row.tids = threads.iter().map(|t| t.0).collect();
    if threads.is_empty() {
        row.problems.push(Problem::Gone { pid });
    }
    for (tid, cpus) in &threads {
        row.actual_cpus = row.actual_cpus.union(cpus);
        if !cpus.is_subset(&row.planned_cpus) {
            let name = thread_name(pid, *tid);
            row.problems.push(Problem::ThreadOutside {
                tid: *tid,
                name: name.clone(),
                outside: cpus.difference(&row.planned_cpus),
            });
            row.outside.push(Thread {
                tid: *tid,
                name,
                cpus: cpus.clone(),
            });
        } else if *cpus != row.planned_cpus {
            row.narrowed += 1;
            if let Some((compute, helpers)) = planned.and_then(|r| across_places(r, cpus)) {
                row.problems.push(Problem::AcrossPlaces {
                    tid: *tid,
                    name: thread_name(pid, *tid),
                    cpus: cpus.clone(),
                    compute,
                    helpers,
                });
            }
        }
    }
}

/// Each rank's environment as it started (`/proc/PID/environ`) against the variables the plan
/// sets for its NIC (`NCCL_IB_HCA`, `UCX_NET_DEVICES`, `FI_PROVIDER`, `NCCL_SOCKET_IFNAME`),
/// but of the ranks in `bound_in_process` (`numaplan.bind()` set them in the running process,
/// where `/proc` does not show them) and of processes whose environment cannot be read.
pub fn check_nic_variables(table: &mut Table, plan: &Plan, bound_in_process: &[RankPid]) {
    for row in &mut table.rows {
        let Some(planned) = plan.ranks.get(row.rank as usize) else {
            continue;
        };
        if row.exited.is_some() || bound_in_process.iter().any(|r| r.pid == row.pid) {
            continue;
        }
        let Ok(env) = environ(row.pid) else {
            continue;
        };
        for (name, value) in planned.env.iter() {
            if NIC_VARIABLES.contains(&name.as_str()) && env.get(name) != Some(value) {
                row.problems.push(Problem::NicVariable {
                    name: name.clone(),
                    actual: env.get(name).cloned(),
                    planned: value.clone(),
                });
            }
        }
    }
}

/// The rank's memory policy and where its memory is, from `numa_maps`.
fn read_memory(row: &mut Row) {
    row.residence = match numa_maps::read(row.pid) {
        Ok(residence) => residence,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            row.actual_memory = "?".into();
            let mine = crate::sys::proc::identity(row.pid)
                .is_some_and(|who| who.uid == crate::sys::proc::effective_uid());
            row.problems.push(Problem::Unreadable {
                file: format!("/proc/{}/numa_maps", row.pid),
                mine,
            });
            return;
        }
        Err(_) => Residence::default(),
    };
    row.actual_memory = row.residence.policy.clone().unwrap_or_else(|| "-".into());
    if row.actual_memory == "-" {
        if !row.tids.is_empty() {
            row.problems.push(Problem::NoMappings);
        }
    } else if row.actual_memory != row.planned_memory {
        row.problems.push(Problem::MemoryPolicy {
            actual: ShownPolicy::parse(&row.actual_memory),
            planned: ShownPolicy::parse(&row.planned_memory),
        });
    }
    row.problems.extend(memory_short(
        &row.residence,
        &row.memory_nodes,
        row.min_local,
    ));
}

/// The problem of a rank whose memory is short of `min_local` on its planned nodes.
fn memory_short(
    residence: &Residence,
    nodes: &[NodeId],
    min_local: Option<f64>,
) -> Option<Problem> {
    let (min, share) = (min_local?, residence.share_on(nodes)?);
    (share < min).then(|| Problem::MemoryShort {
        share,
        bytes: residence.total(),
        nodes: nodes.to_vec(),
        min,
    })
}

impl Row {
    /// `rank 3: 11.8 GiB, 99.2% on node 3 (planned), 0.1 GiB on node 1`: where the rank's
    /// memory is; `None` for a rank without memory of its own.
    pub fn memory_line(&self) -> Option<String> {
        let total = self.residence.total();
        if total == 0 {
            return None;
        }
        let mut parts = vec![format!("rank {}: {}", self.rank, size(total))];
        // Every planned node, if only to say that none of the memory is there.
        let mut bytes = self.residence.bytes.clone();
        for n in &self.memory_nodes {
            bytes.entry(*n).or_default();
        }
        let mut nodes: Vec<(&NodeId, &u64)> = bytes.iter().collect();
        // The planned nodes first, then the largest share.
        nodes.sort_by_key(|(n, b)| (!self.memory_nodes.contains(n), std::cmp::Reverse(**b)));
        for (node, bytes) in nodes {
            let planned = if self.memory_nodes.contains(node) {
                " (planned)"
            } else {
                ""
            };
            parts.push(
                match self.memory_nodes.contains(node) || self.memory_nodes.is_empty() {
                    true => format!(
                        "{:.1}% on node {node}{planned}",
                        *bytes as f64 * 100.0 / total as f64
                    ),
                    false => format!("{} on node {node}", size(*bytes)),
                },
            );
        }
        Some(parts.join(", "))
    }
}

/// Where a thread that narrowed its CPUs may go, when the rank has a helper pool or OpenMP
/// places: inside its compute CPUs (its places), or inside its helper pool, never across the
/// two (an OpenMP thread on a helper core, a helper on a compute core). A thread that spans
/// several places is not reported: runtimes and NCCL narrow threads to groups of cores.
/// Returns the rank's compute and helper CPUs when `cpus` crosses them.
pub fn across_places(rank: &RankBinding, cpus: &CpuSet) -> Option<(CpuSet, CpuSet)> {
    if rank.helpers.is_empty() && rank.openmp.is_none() {
        return None;
    }
    let compute = rank.compute();
    if cpus.is_subset(&compute) || (!rank.helpers.is_empty() && cpus.is_subset(&rank.helpers)) {
        return None;
    }
    Some((compute, rank.helpers.clone()))
}

impl Row {
    /// A live rank whose binding differs from the plan: a problem that is not only what
    /// could not be read.
    fn mismatch(&self) -> bool {
        self.exited.is_none() && self.problems.iter().any(|p| !p.unknown())
    }

    /// A live rank of which something could not be read, and nothing found wrong.
    fn unknown(&self) -> bool {
        self.exited.is_none() && !self.mismatch() && self.problems.iter().any(Problem::unknown)
    }
}

impl Table {
    /// Every rank found, read in full and bound as planned.
    pub fn ok(&self) -> bool {
        self.mismatches() == 0 && self.unknown() == 0
    }

    /// Ranks that differ from the plan, or that no process was found for.
    pub fn mismatches(&self) -> usize {
        self.rows.iter().filter(|r| r.mismatch()).count() + self.missing.len()
    }

    /// Flags every row of a rank that several processes claim.
    pub fn claimed_twice(&mut self, rank: u32, pids: &[u32]) {
        for row in self.rows.iter_mut().filter(|r| r.rank == rank) {
            row.problems.push(Problem::ClaimedTwice {
                rank,
                pids: pids.to_vec(),
            });
        }
    }

    /// The ranks of which something could not be read, and nothing found wrong.
    pub fn unknown(&self) -> usize {
        self.rows.iter().filter(|r| r.unknown()).count()
    }

    /// The pids of the ranks that differ from the plan.
    pub fn mismatched_pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.rows.iter().filter(|r| r.mismatch()).map(|r| r.pid)
    }

    /// The pids of the ranks that differ from the plan in ways a watch does not follow (its
    /// memory policy, a thread across its places, a rank claimed twice): what a watch, which
    /// follows threads outside the rank and memory under the threshold, adds to its own.
    pub fn mismatched_beyond_watch(&self) -> impl Iterator<Item = u32> + '_ {
        self.rows
            .iter()
            .filter(|r| r.mismatch())
            .filter(|r| r.problems.iter().any(|p| !p.watched()))
            .map(|r| r.pid)
    }

    /// Whether the rank with this pid was found differing from the plan.
    pub fn has_problems(&self, pid: u32) -> bool {
        self.rows
            .iter()
            .any(|r| r.pid == pid && !r.problems.is_empty())
    }

    /// Marks the rank with this pid as having exited before it was read (`how`: `0`, `3`,
    /// `SIGKILL`).
    pub fn exited(&mut self, pid: u32, how: String) {
        if let Some(row) = self.rows.iter_mut().find(|r| r.pid == pid) {
            row.exited = Some(how);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MemoryBinding;

    fn rank(cpus: &str, helpers: &str) -> RankBinding {
        RankBinding {
            local_rank: 0,
            gpus: Vec::new(),
            numa_node: None,
            cpus: cpus.parse().unwrap(),
            cores: 4,
            memory: MemoryBinding {
                policy: MemPolicy::None,
                nodes: Vec::new(),
                required: true,
            },
            nics: Vec::new(),
            env: Default::default(),
            threads: 4,
            helpers: if helpers.is_empty() {
                CpuSet::new()
            } else {
                helpers.parse().unwrap()
            },
            openmp: None,
        }
    }

    /// Rank 0, pid 1, one thread, nothing planned or read, no problem.
    fn live_row() -> Row {
        Row {
            rank: 0,
            pid: 1,
            tids: vec![1],
            planned_cpus: CpuSet::new(),
            actual_cpus: CpuSet::new(),
            narrowed: 0,
            outside: Vec::new(),
            planned_memory: String::new(),
            actual_memory: String::new(),
            memory_nodes: Vec::new(),
            residence: Residence::default(),
            min_local: None,
            problems: Vec::new(),
            exited: None,
        }
    }

    #[test]
    fn the_memory_line_names_the_planned_nodes_even_when_empty() {
        let mut residence = Residence::default();
        residence.bytes.insert(NodeId(2), 256 << 20);
        residence.bytes.insert(NodeId(3), 1 << 20);
        let row = |nodes: Vec<NodeId>| Row {
            rank: 3,
            memory_nodes: nodes,
            residence: residence.clone(),
            min_local: Some(0.9),
            ..live_row()
        };
        assert_eq!(
            row(vec![NodeId(3)]).memory_line().unwrap(),
            "rank 3: 257.0 MiB, 0.4% on node 3 (planned), 256.0 MiB on node 2"
        );
        assert_eq!(
            row(vec![NodeId(1)]).memory_line().unwrap(),
            "rank 3: 257.0 MiB, 0.0% on node 1 (planned), 256.0 MiB on node 2, 1.0 MiB on node 3"
        );
        // Without a memory policy: the spread, in shares.
        assert_eq!(
            row(Vec::new()).memory_line().unwrap(),
            "rank 3: 257.0 MiB, 99.6% on node 2, 0.4% on node 3"
        );
        assert_eq!(
            memory_short(&residence, &[NodeId(3)], Some(0.9))
                .unwrap()
                .to_string(),
            "0.4% of its memory (257.0 MiB) is on node 3, under 90%"
        );
        assert_eq!(memory_short(&residence, &[NodeId(2)], Some(0.9)), None);
        assert_eq!(memory_short(&residence, &[NodeId(3)], None), None);
    }

    /// What could not be read is unknown: not ok, and no mismatch; with another problem, a
    /// mismatch.
    #[test]
    fn an_unreadable_rank_is_unknown_not_a_mismatch() {
        let row = |problems: Vec<Problem>| Row {
            actual_memory: "?".into(),
            problems,
            ..live_row()
        };
        let unreadable = || Problem::Unreadable {
            file: "/proc/1/numa_maps".into(),
            mine: true,
        };
        let table = |rows| Table {
            rows,
            missing: Vec::new(),
        };
        let unknown = table(vec![row(vec![unreadable()])]);
        assert_eq!(
            (unknown.ok(), unknown.mismatches(), unknown.unknown()),
            (false, 0, 1)
        );
        let also = table(vec![row(vec![unreadable(), Problem::NoMappings])]);
        assert_eq!(
            (also.ok(), also.mismatches(), also.unknown()),
            (false, 1, 0)
        );
        assert!(table(vec![row(Vec::new())]).ok());
    }

    #[test]
    fn narrowed_threads_stay_on_one_side_of_the_helper_pool() {
        let r = rank("0-3", "3");
        let on = |cpus: &str| {
            let cpus: CpuSet = cpus.parse().unwrap();
            across_places(&r, &cpus).map(|(compute, helpers)| {
                Problem::AcrossPlaces {
                    tid: 7,
                    name: "omp".into(),
                    cpus,
                    compute,
                    helpers,
                }
                .to_string()
            })
        };
        assert_eq!(on("0"), None, "an OpenMP thread on its place");
        assert_eq!(on("0-2"), None, "a thread narrowed to the compute CPUs");
        assert_eq!(on("3"), None, "a worker pinned to the helper pool");
        assert_eq!(
            on("2-3").as_deref(),
            Some(
                "thread 7 (omp) may run on CPUs 2-3, across its compute CPUs 0-2 and its helper \
                 CPUs 3"
            )
        );
        // Without a helper pool or places, narrowing is only checked against the rank's CPUs.
        assert_eq!(
            across_places(&rank("0-3", ""), &"2-3".parse().unwrap()),
            None
        );
    }
}
