//! Reads the bindings ranks really have from `/proc` and compares them with the plan: every
//! thread's `Cpus_allowed_list` (a thread may narrow its CPUs, as NCCL and OpenMP runtimes do,
//! but never leave the rank's set) and the memory policy `numa_maps` reports.

use std::path::Path;

use crate::cpuset::CpuSet;
use crate::ids::node_list;
use crate::plan::{MemoryBinding, Plan, RankBinding};
use crate::spec::MemPolicy;

pub struct Table {
    pub rows: Vec<Row>,
}

pub struct Row {
    pub rank: u32,
    pub pid: u32,
    pub threads: usize,
    pub planned_cpus: CpuSet,
    /// The union of the threads' CPUs.
    pub actual_cpus: CpuSet,
    /// Threads whose CPUs are a strict subset of the rank's.
    pub narrowed: usize,
    pub planned_memory: String,
    pub actual_memory: String,
    pub problems: Vec<String>,
    /// How the rank ended, when it had already exited by the time it was read: then what
    /// `/proc` shows is not its binding, and it is reported but not counted as a mismatch.
    pub exited: Option<String>,
}

/// `numa_maps`'s spelling of a memory policy: `default`, `prefer:1`, `bind:0`,
/// `interleave:0-3`.
pub fn numa_maps_policy(m: &MemoryBinding) -> String {
    let nodes = node_list(&m.nodes);
    match m.policy {
        MemPolicy::None => "default".into(),
        MemPolicy::Preferred => format!("prefer:{nodes}"),
        MemPolicy::Bind => format!("bind:{nodes}"),
        MemPolicy::Interleave => format!("interleave:{nodes}"),
    }
}

/// Checks each `(local rank, pid)` against the plan.
pub fn check(plan: &Plan, pids: &[(u32, u32)]) -> Table {
    let rows = pids
        .iter()
        .map(|&(rank, pid)| {
            let planned = plan.ranks.get(rank as usize);
            let planned_cpus = planned.map(|r| r.cpus.clone()).unwrap_or_default();
            let planned_memory = planned.map_or("-".into(), |r| numa_maps_policy(&r.memory));
            let mut problems = Vec::new();
            if planned.is_none() {
                problems.push(format!("the plan has no local rank {rank}"));
            }
            let proc_dir = Path::new("/proc").join(pid.to_string());
            let threads = thread_cpus(&proc_dir);
            if threads.is_empty() {
                problems.push(format!("process {pid} is gone"));
            }
            let mut actual_cpus = CpuSet::new();
            let mut narrowed = 0;
            for (tid, name, cpus) in &threads {
                actual_cpus = actual_cpus.union(cpus);
                if !cpus.is_subset(&planned_cpus) {
                    problems.push(format!(
                        "thread {tid} ({name}) may run on CPUs {} outside the plan",
                        cpus.difference(&planned_cpus)
                    ));
                } else if *cpus != planned_cpus {
                    narrowed += 1;
                    if let Some(problem) = planned.and_then(|r| outside_its_places(r, cpus)) {
                        problems.push(format!("thread {tid} ({name}) {problem}"));
                    }
                }
            }
            let actual_memory = std::fs::read_to_string(proc_dir.join("numa_maps"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .next()
                        .and_then(|l| l.split_whitespace().nth(1))
                        .map(str::to_string)
                })
                .unwrap_or_else(|| "-".into());
            if actual_memory == "-" {
                if !threads.is_empty() {
                    problems.push("numa_maps is empty (the rank has exited)".into());
                }
            } else if actual_memory != planned_memory {
                problems.push(format!(
                    "memory policy is {actual_memory}, planned {planned_memory}"
                ));
            }
            Row {
                rank,
                pid,
                threads: threads.len(),
                planned_cpus,
                actual_cpus,
                narrowed,
                planned_memory,
                actual_memory,
                problems,
                exited: None,
            }
        })
        .collect();
    Table { rows }
}

/// Where a thread that narrowed its CPUs may go, when the rank has a helper pool or OpenMP
/// places: inside its compute CPUs (its places), or inside its helper pool, never across the
/// two (an OpenMP thread on a helper core, a helper on a compute core). A thread that spans
/// several places is not reported: runtimes and NCCL narrow threads to groups of cores.
pub fn outside_its_places(rank: &RankBinding, cpus: &CpuSet) -> Option<String> {
    if rank.helpers.is_empty() && rank.openmp.is_none() {
        return None;
    }
    let compute = rank.compute();
    if cpus.is_subset(&compute) || (!rank.helpers.is_empty() && cpus.is_subset(&rank.helpers)) {
        return None;
    }
    Some(format!(
        "may run on CPUs {cpus}, across its compute CPUs {compute} and its helper CPUs {}",
        rank.helpers
    ))
}

/// `(tid, name, CPUs)` of every thread of a process.
fn thread_cpus(proc_dir: &Path) -> Vec<(u32, String, CpuSet)> {
    let Ok(entries) = std::fs::read_dir(proc_dir.join("task")) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String, CpuSet)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let status = std::fs::read_to_string(e.path().join("status")).ok()?;
            let field = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
            };
            let cpus = field("Cpus_allowed_list:")?.parse().ok()?;
            Some((tid, field("Name:").unwrap_or_default(), cpus))
        })
        .collect();
    out.sort_by_key(|t| t.0);
    out
}

impl Row {
    /// A live rank whose binding differs from the plan.
    fn mismatch(&self) -> bool {
        self.exited.is_none() && !self.problems.is_empty()
    }
}

impl Table {
    pub fn ok(&self) -> bool {
        !self.rows.iter().any(Row::mismatch)
    }

    pub fn mismatches(&self) -> usize {
        self.rows.iter().filter(|r| r.mismatch()).count()
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

    pub fn render(&self) -> String {
        let header = [
            "rank",
            "pid",
            "threads",
            "CPUs planned",
            "CPUs actual",
            "memory planned",
            "memory actual",
            "",
        ];
        let cells: Vec<[String; 8]> = self
            .rows
            .iter()
            .map(|r| {
                let verdict = if let Some(how) = &r.exited {
                    format!("exited ({how}) before the check")
                } else if r.problems.is_empty() {
                    if r.narrowed > 0 {
                        format!("ok ({} threads narrowed their CPUs)", r.narrowed)
                    } else {
                        "ok".into()
                    }
                } else {
                    format!("MISMATCH: {}", r.problems.join("; "))
                };
                [
                    r.rank.to_string(),
                    r.pid.to_string(),
                    r.threads.to_string(),
                    r.planned_cpus.to_string(),
                    r.actual_cpus.to_string(),
                    r.planned_memory.clone(),
                    r.actual_memory.clone(),
                    verdict,
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|c| c[i].len())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let mut s: String = row
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}  "))
                .collect();
            s.truncate(s.trim_end().len());
            s + "\n"
        };
        let mut out = line(&header.map(String::from));
        for c in &cells {
            out.push_str(&line(c));
        }
        out
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
            },
            nics: Vec::new(),
            env: Default::default(),
            helpers: if helpers.is_empty() {
                CpuSet::new()
            } else {
                helpers.parse().unwrap()
            },
            openmp: None,
        }
    }

    #[test]
    fn narrowed_threads_stay_on_one_side_of_the_helper_pool() {
        let r = rank("0-3", "3");
        let on = |cpus: &str| outside_its_places(&r, &cpus.parse().unwrap());
        assert_eq!(on("0"), None, "an OpenMP thread on its place");
        assert_eq!(on("0-2"), None, "a thread narrowed to the compute CPUs");
        assert_eq!(on("3"), None, "a worker pinned to the helper pool");
        assert_eq!(
            on("2-3").as_deref(),
            Some("may run on CPUs 2-3, across its compute CPUs 0-2 and its helper CPUs 3")
        );
        // Without a helper pool or places, narrowing is only checked against the rank's CPUs.
        assert_eq!(
            outside_its_places(&rank("0-3", ""), &"2-3".parse().unwrap()),
            None
        );
    }
}
