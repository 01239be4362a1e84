//! `verify --watch` and `exec --verify --watch`: the ranks read again every interval, and one
//! line per change, not per round: a thread that leaves its rank's CPUs (NCCL's and RCCL's
//! proxy threads re-pin or release themselves after start) and one that returns, a rank whose
//! memory share on its planned nodes falls under the threshold or comes back, a rank that
//! exits. With `repin`, a thread that left is put back on its rank's CPUs, and the line says
//! so; a thread pinned to a subset of them (OpenMP places) is inside, and left alone.
//!
//! `Watch::step` is the pure part (two readings in, the changes out); `run` reads, repins and
//! hands each change to its caller, which prints it as text or JSON.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use super::change::{Change, Kind};
use super::verify::{self, Row, Table, Thread};
use crate::ids::RankPid;
use crate::phrase::plural;
use crate::plan::Plan;
use crate::sys::affinity;

/// How to watch.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchOptions {
    pub interval: Duration,
    /// Readings after the first; `None`: until every rank has exited.
    pub rounds: Option<u64>,
    /// Put a thread that left its rank's CPUs back on them.
    pub repin: bool,
    /// Ranks (by pid) whose threads are not to be put back, each with why (`Found::hands_off`):
    /// their lines say so instead.
    pub hands_off: BTreeMap<u32, String>,
}

/// What the watch has seen of one rank.
#[derive(Default)]
struct Seen {
    /// Threads outside the rank's CPUs: tid -> name.
    outside: BTreeMap<u32, String>,
    memory_low: bool,
    exited: bool,
}

/// What a watch has seen so far.
#[derive(Default)]
pub struct Watch {
    ranks: BTreeMap<u32, Seen>,
    /// Ranks (pids) that had a problem that stayed one.
    troubled: std::collections::BTreeSet<u32>,
    /// Changes by kind, for the summary.
    counts: BTreeMap<Kind, usize>,
    /// Threads that left their rank's CPUs and were put back (`--repin`).
    repinned: usize,
    pub rounds: u64,
    /// The longest time between two readings of the ranks' memory, when reading it had to be
    /// spaced out further than the interval.
    pub pages_every: Option<Duration>,
}

impl Watch {
    /// The changes a reading shows against the last (the first reading: every thread outside
    /// and every rank short of memory).
    pub fn step(&mut self, table: &Table) -> Vec<Change> {
        let mut changes = Vec::new();
        for row in &table.rows {
            let seen = self.ranks.entry(row.pid).or_default();
            if seen.exited {
                continue;
            }
            if row.tids.is_empty() || row.exited.is_some() {
                seen.exited = true;
                changes.push(Change::RankExited {
                    rank: row.rank,
                    pid: row.pid,
                });
                continue;
            }
            threads(row, seen, &mut changes);
            memory(row, seen, &mut changes);
        }
        changes
    }

    /// Records changes as reported (after any repinning): the summary counts them, and a
    /// problem that stays one marks its rank.
    pub fn record(&mut self, changes: &[Change]) {
        for c in changes {
            *self.counts.entry(c.kind()).or_default() += 1;
            if let Change::ThreadLeft {
                repinned: Some(Ok(())),
                ..
            } = c
            {
                self.repinned += 1;
            }
            if c.is_problem() {
                self.troubled.insert(c.pid());
            }
            // A thread put back is inside again: its return is not news.
            if let Change::ThreadLeft {
                pid,
                thread,
                repinned: Some(Ok(())),
                ..
            } = c
                && let Some(seen) = self.ranks.get_mut(pid)
            {
                seen.outside.remove(&thread.tid);
            }
        }
    }

    /// Ranks that had a problem that stayed one.
    pub fn troubled(&self) -> usize {
        self.troubled.len()
    }

    /// Their pids.
    pub fn troubled_pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.troubled.iter().copied()
    }

    /// Whether every rank watched has exited.
    pub fn all_exited(&self) -> bool {
        !self.ranks.is_empty() && self.ranks.values().all(|s| s.exited)
    }

    /// `watch: 12 readings; 1 thread left its CPUs (1 put back), 1 rank exited`.
    pub fn summary(&self) -> String {
        let n = |k: Kind| self.counts.get(&k).copied().unwrap_or(0);
        let mut parts = Vec::new();
        let left = n(Kind::ThreadLeft);
        if left > 0 {
            let put_back = match self.repinned {
                0 => String::new(),
                r => format!(" ({r} put back)"),
            };
            let who = plural(left, "thread left its", "threads left their");
            parts.push(format!("{who} rank's CPUs{put_back}"));
        }
        let back = n(Kind::ThreadBack) + n(Kind::ThreadEnded);
        if back > 0 {
            parts.push(format!(
                "{} returned or ended",
                plural(back, "thread", "threads")
            ));
        }
        if n(Kind::MemoryLow) > 0 {
            parts.push(format!(
                "{} short of local memory",
                plural(n(Kind::MemoryLow), "rank was", "ranks were")
            ));
        }
        if n(Kind::RankExited) > 0 {
            parts.push(format!(
                "{} exited",
                plural(n(Kind::RankExited), "rank", "ranks")
            ));
        }
        let what = match parts.is_empty() {
            true => "no change".to_string(),
            false => parts.join(", "),
        };
        let spaced = match self.pages_every {
            Some(gap) => format!(
                " (memory re-read up to {:.1} s apart, to keep numa_maps under 1% of a CPU)",
                gap.as_secs_f64()
            ),
            None => String::new(),
        };
        format!(
            "watch: {}{spaced}; {what}",
            plural(self.rounds as usize, "reading", "readings")
        )
    }

    /// The summary's counts: each kind of change by its name, `repinned` (threads put back)
    /// and `troubled` (ranks with a problem that stayed one).
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts: BTreeMap<&'static str, usize> =
            self.counts.iter().map(|(k, n)| (k.name(), *n)).collect();
        counts.insert("repinned", self.repinned);
        counts.insert("troubled", self.troubled());
        counts
    }
}

/// The threads of a rank that left its CPUs since the last reading, and those that returned.
fn threads(row: &Row, seen: &mut Seen, changes: &mut Vec<Change>) {
    let now: BTreeMap<u32, &Thread> = row.outside.iter().map(|t| (t.tid, t)).collect();
    for (tid, thread) in &now {
        if !seen.outside.contains_key(tid) {
            seen.outside.insert(*tid, thread.name.clone());
            changes.push(Change::ThreadLeft {
                rank: row.rank,
                pid: row.pid,
                thread: (*thread).clone(),
                planned: row.planned_cpus.clone(),
                repinned: None,
            });
        }
    }
    let back: Vec<u32> = seen
        .outside
        .keys()
        .filter(|tid| !now.contains_key(tid))
        .copied()
        .collect();
    for tid in back {
        let name = seen.outside.remove(&tid).unwrap_or_default();
        let alive = row.tids.contains(&tid);
        changes.push(Change::ThreadBack {
            rank: row.rank,
            pid: row.pid,
            tid,
            name,
            cpus: alive.then(|| row.planned_cpus.clone()),
        });
    }
}

/// The rank's memory share crossing its threshold, either way.
fn memory(row: &Row, seen: &mut Seen, changes: &mut Vec<Change>) {
    let (Some(min), Some(share)) = (row.min_local, row.residence.share_on(&row.memory_nodes))
    else {
        return;
    };
    let low = share < min;
    if low != seen.memory_low {
        seen.memory_low = low;
        changes.push(Change::Memory {
            rank: row.rank,
            pid: row.pid,
            share,
            bytes: row.residence.total(),
            nodes: row.memory_nodes.clone(),
            min,
            back: !low,
        });
    }
}

/// Watches `pids` (`(local rank, pid)`) from the reading `first` on: every `interval`, reads
/// them again (`min_local` as `verify::check` takes it) and hands each change to `report` with
/// the time since the start, until `opts.rounds` readings, every rank's exit, or `stop()` (then
/// after one last reading).
/// Repins as `opts` says.
pub fn run(
    plan: &Plan,
    pids: &[RankPid],
    first: &Table,
    opts: &WatchOptions,
    min_local: Option<f64>,
    stop: &dyn Fn() -> bool,
    report: &mut dyn FnMut(&Change, Duration),
) -> Watch {
    let start = Instant::now();
    let mut watch = Watch::default();
    let mut table_changes = watch.step(first);
    let mut last = false;
    let mut pages = PageSchedule::new(opts.interval);
    let mut round = start;
    loop {
        repin(&mut table_changes, opts);
        watch.record(&table_changes);
        for c in &table_changes {
            report(c, start.elapsed());
        }
        watch.rounds += 1;
        let done = opts.rounds.is_some_and(|n| watch.rounds > n) || watch.all_exited();
        if done || last {
            break;
        }
        // Every interval from the start of the last reading; asked to stop (the job ended):
        // one last reading, for the exits.
        last = !pause(opts.interval.saturating_sub(round.elapsed()), stop);
        let began = Instant::now();
        round = began;
        let read = pages.due(began);
        let table = verify::check_with(plan, pids, min_local, read);
        pages.read(read, began);
        table_changes = watch.step(&table);
    }
    watch.pages_every = pages.longest_gap;
    watch
}

/// When a watch reads `numa_maps` again: every interval, unless reading it costs more than
/// 1% of one CPU at that pace (64 ranks with thousands of mappings take a quarter of a second
/// each time); then as often as that budget allows.
struct PageSchedule {
    interval: Duration,
    next: Instant,
    last: Instant,
    /// The longest time between two readings of the pages, once longer than the interval.
    longest_gap: Option<Duration>,
}

/// Reading pages may take 1/100 of one CPU (1%).
const PAGES_BUDGET: u32 = 100;

impl PageSchedule {
    fn new(interval: Duration) -> PageSchedule {
        let now = Instant::now();
        PageSchedule {
            interval,
            next: now,
            last: now,
            longest_gap: None,
        }
    }

    fn due(&self, now: Instant) -> verify::Pages {
        match now >= self.next {
            true => verify::Pages::Read,
            false => verify::Pages::Skip,
        }
    }

    /// After a reading that began at `began`: when the next may read pages.
    fn read(&mut self, pages: verify::Pages, began: Instant) {
        if pages == verify::Pages::Skip {
            return;
        }
        let cost = began.elapsed();
        let gap = began - self.last;
        if gap > self.interval + self.interval / 2 {
            self.longest_gap = Some(self.longest_gap.map_or(gap, |g| g.max(gap)));
        }
        self.last = began;
        self.next = began + cost * PAGES_BUDGET;
    }
}

/// Sleeps `interval` in short steps; false when `stop()` asked to end meanwhile.
fn pause(interval: Duration, stop: &dyn Fn() -> bool) -> bool {
    let end = Instant::now() + interval;
    loop {
        if stop() {
            return false;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// Puts each thread that left back on its rank's CPUs, when asked to.
fn repin(changes: &mut [Change], opts: &WatchOptions) {
    if !opts.repin {
        return;
    }
    for c in changes {
        if let Change::ThreadLeft {
            pid,
            thread,
            planned,
            repinned,
            ..
        } = c
        {
            *repinned = Some(match opts.hands_off.get(pid) {
                Some(why) => Err(why.clone()),
                None => {
                    affinity::set_thread_affinity(thread.tid, planned).map_err(|e| e.to_string())
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::ids::NodeId;
    use crate::sys::numa_maps::Residence;

    fn row(pid: u32, threads: usize, outside: &[(u32, &str)], local: Option<(u64, u64)>) -> Row {
        let mut residence = Residence::default();
        if let Some((on, off)) = local {
            residence.bytes.insert(NodeId(3), on);
            residence.bytes.insert(NodeId(1), off);
        }
        Row {
            rank: pid - 100,
            pid,
            // Alive: the main thread and those outside; `threads` 0: exited.
            tids: match threads {
                0 => Vec::new(),
                _ => std::iter::once(pid)
                    .chain(outside.iter().map(|(tid, _)| *tid))
                    .collect(),
            },
            planned_cpus: "32-47".parse().unwrap(),
            actual_cpus: CpuSet::new(),
            narrowed: 0,
            outside: outside
                .iter()
                .map(|(tid, cpus)| Thread {
                    tid: *tid,
                    name: "nccl-proxy".into(),
                    cpus: cpus.parse().unwrap(),
                })
                .collect(),
            planned_memory: "bind:3".into(),
            actual_memory: "bind:3".into(),
            memory_nodes: vec![NodeId(3)],
            residence,
            min_local: Some(0.9),
            problems: Vec::new(),
            exited: None,
        }
    }

    fn table(rows: Vec<Row>) -> Table {
        Table {
            rows,
            missing: Vec::new(),
        }
    }

    fn lines(changes: &[Change]) -> Vec<String> {
        changes.iter().map(Change::text).collect()
    }

    #[test]
    fn one_line_per_change_not_per_reading() {
        let mut w = Watch::default();
        assert!(
            w.step(&table(vec![row(102, 3, &[], Some((99, 1)))]))
                .is_empty()
        );
        // A proxy thread re-pins itself to every CPU: one line, then nothing while it stays.
        let left = w.step(&table(vec![row(102, 3, &[(4711, "0-255")], Some((99, 1)))]));
        assert_eq!(
            lines(&left),
            ["rank 2 thread 4711 (nccl-proxy): CPUs 0-255, planned 32-47"]
        );
        w.record(&left);
        assert!(
            w.step(&table(vec![row(102, 3, &[(4711, "0-255")], Some((99, 1)))]))
                .is_empty()
        );
        // Memory falls under 90%, then the rank exits.
        let low = w.step(&table(vec![row(
            102,
            3,
            &[(4711, "0-255")],
            Some((70, 30)),
        )]));
        assert_eq!(
            lines(&low),
            ["rank 2: 70.0% of its memory (0 KiB) on node 3, under 90%"]
        );
        w.record(&low);
        let gone = w.step(&table(vec![row(102, 0, &[], None)]));
        assert_eq!(lines(&gone), ["rank 2 (pid 102) exited"]);
        w.record(&gone);
        assert!(w.all_exited());
        assert_eq!(w.troubled(), 1);
        w.rounds = 5;
        assert_eq!(
            w.summary(),
            "watch: 5 readings; 1 thread left its rank's CPUs, 1 rank was short of local memory, 1 rank exited"
        );
    }

    #[test]
    fn a_thread_that_returns_or_ends_is_one_line() {
        let mut w = Watch::default();
        let left = w.step(&table(vec![row(
            102,
            3,
            &[(4711, "0-255"), (4712, "0-255")],
            None,
        )]));
        w.record(&left);
        // 4711 is back inside (still alive), 4712 has ended.
        let mut now = row(102, 2, &[], None);
        now.tids = vec![102, 4711];
        let back = w.step(&table(vec![now]));
        assert_eq!(
            lines(&back),
            [
                "rank 2 thread 4711 (nccl-proxy): back inside CPUs 32-47",
                "rank 2 thread 4712 (nccl-proxy): ended"
            ]
        );
    }

    #[test]
    fn costly_pages_are_read_less_often() {
        let interval = Duration::from_millis(200);
        let mut pages = PageSchedule::new(interval);
        let now = Instant::now();
        // A reading that took 10 ms: the next may read pages 1 s later (1% of a CPU).
        let began = now - Duration::from_millis(10);
        pages.read(verify::Pages::Read, began);
        assert_eq!(
            pages.due(began + Duration::from_millis(500)),
            verify::Pages::Skip
        );
        assert_eq!(
            pages.due(began + Duration::from_millis(1100)),
            verify::Pages::Read
        );
        // A cheap reading: every interval, and no gap worth a word in the summary.
        let mut cheap = PageSchedule::new(interval);
        let began = Instant::now();
        cheap.read(verify::Pages::Read, began);
        assert_eq!(cheap.due(began + interval), verify::Pages::Read);
        assert_eq!(cheap.longest_gap, None);
    }

    #[test]
    fn a_thread_put_back_is_no_problem_and_its_return_no_news() {
        let mut w = Watch::default();
        let mut left = w.step(&table(vec![row(101, 2, &[(77, "0-63")], None)]));
        if let Change::ThreadLeft { repinned, .. } = &mut left[0] {
            *repinned = Some(Ok(()));
        }
        assert_eq!(
            lines(&left),
            ["rank 1 thread 77 (nccl-proxy): CPUs 0-63, planned 32-47; put back on 32-47"]
        );
        w.record(&left);
        assert!(w.step(&table(vec![row(101, 2, &[], None)])).is_empty());
        assert_eq!(w.troubled(), 0);
        // Memory that comes back over the threshold says so.
        let mut w = Watch::default();
        let low = w.step(&table(vec![row(101, 1, &[], Some((10, 90)))]));
        w.record(&low);
        let back = w.step(&table(vec![row(101, 1, &[], Some((100, 0)))]));
        assert_eq!(
            lines(&back),
            ["rank 1: 100.0% of its memory (0 KiB) on node 3, 90% or more again"]
        );
    }
}
