//! `verify --counters S`: the kernel's generic NUMA cache events, `node-loads` and
//! `node-load-misses` (`perf stat -e node-loads,node-load-misses`), counted per rank over S
//! seconds; a miss is a load served by another node's memory, so misses / loads is the rank's
//! remote share. Every thread of the rank gets a counter that its later threads inherit; user
//! space only, so the usual `perf_event_paranoid` of 2 allows it for one's own processes.
//!
//! Where the machine offers no such events (a VM without a virtual PMU, a container whose
//! seccomp profile refuses `perf_event_open`, a CPU whose kernel driver lacks the node
//! events), `count` says why, and nothing is made up.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use crate::ids::RankPid;
use crate::sys::perf::{self, PERF_TYPE_HW_CACHE, PerfEvent as Source};

/// A rank's counts over the window, scaled where the kernel multiplexed the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub loads: u64,
    pub misses: u64,
}

impl Counts {
    /// The share of loads served by a remote node (0 to 1); `None` without loads.
    pub fn remote_share(&self) -> Option<f64> {
        (self.loads > 0).then(|| self.misses.min(self.loads) as f64 / self.loads as f64)
    }

    /// One counter's reading (`value`, `time_enabled`, `time_running`, as `read(2)` returns
    /// them with both times asked for) added in, scaled up for the time it was not counting.
    fn add(&mut self, which: Event, reading: [u64; 3]) {
        let [value, enabled, running] = reading;
        let scaled = match running {
            0 => 0,
            r if r >= enabled => value,
            r => (value as u128 * enabled as u128 / r as u128) as u64,
        };
        match which {
            Event::Loads => self.loads += scaled,
            Event::Misses => self.misses += scaled,
        }
    }
}

/// `verify --counters S`'s outcome: the window, and the counts per pid or why there are none.
pub struct Counted {
    pub seconds: f64,
    pub counts: Result<BTreeMap<u32, Counts>, Unavailable>,
}

/// Why counters cannot be had here, said once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// Which of a rank's two counts a counter adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Loads,
    Misses,
}

/// `node-loads` and `node-load-misses`: `PERF_COUNT_HW_CACHE_NODE | OP_READ << 8 |
/// RESULT_{ACCESS,MISS} << 16`.
const NODE_EVENTS: [(Event, Source); 2] = [
    (
        Event::Loads,
        Source {
            kind: PERF_TYPE_HW_CACHE,
            config: 6,
        },
    ),
    (
        Event::Misses,
        Source {
            kind: PERF_TYPE_HW_CACHE,
            config: 6 | (1 << 16),
        },
    ),
];

/// Counts every rank (`(local rank, pid)`) for `window`: pid -> counts. A rank that exits
/// meanwhile keeps what it counted.
pub fn count(pids: &[RankPid], window: Duration) -> Result<BTreeMap<u32, Counts>, Unavailable> {
    let counting = Counting::start(pids, NODE_EVENTS)?;
    std::thread::sleep(window);
    Ok(counting.read())
}

/// Counters open on every thread of the ranks, counting from `start` until `read`.
struct Counting {
    pids: Vec<u32>,
    open: Vec<(u32, Event, OwnedFd)>,
}

impl Counting {
    /// One counter per event on each thread the ranks have now; the threads and processes
    /// they start later inherit it.
    fn start(pids: &[RankPid], events: [(Event, Source); 2]) -> Result<Counting, Unavailable> {
        let mut open = Vec::new();
        for &RankPid { pid, .. } in pids {
            for tid in crate::sys::proc::task_ids(pid) {
                for (event, source) in events {
                    match perf::open(tid, source) {
                        Ok(fd) => open.push((pid, event, fd)),
                        // The thread ended in between: nothing to count.
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(e) => return Err(unavailable(&e, perf::paranoid())),
                    }
                }
            }
        }
        let pids = pids.iter().map(|&RankPid { pid, .. }| pid).collect();
        Ok(Counting { pids, open })
    }

    /// What each rank counted so far, its exited threads' and processes' counts included.
    fn read(&self) -> BTreeMap<u32, Counts> {
        let mut counts: BTreeMap<u32, Counts> =
            self.pids.iter().map(|&p| (p, Counts::default())).collect();
        for (pid, event, fd) in &self.open {
            if let Some(reading) = perf::read(fd) {
                counts.entry(*pid).or_default().add(*event, reading);
            }
        }
        counts
    }
}

/// What a refusal of `perf_event_open` means here, in words (`paranoid`: the value of
/// `/proc/sys/kernel/perf_event_paranoid`, when readable).
pub fn unavailable(e: &io::Error, paranoid: Option<i32>) -> Unavailable {
    let why = match e.raw_os_error() {
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => {
            "this machine's CPU offers no node-load events to perf (a VM without a virtual PMU, or a driver without NUMA cache events)".to_string()
        }
        Some(libc::ENOSYS) => "the kernel has no perf_event_open".to_string(),
        Some(libc::EACCES | libc::EPERM) => match paranoid {
            Some(level) if level > 2 => format!(
                "perf_event_open is not permitted (kernel.perf_event_paranoid is {level}; 2 lets users count their own processes)"
            ),
            _ => "perf_event_open is not permitted for these processes (another user's, or a container's seccomp profile refuses it)".to_string(),
        },
        _ => format!("perf_event_open failed: {e}"),
    };
    Unavailable(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(words: [u64; 3]) -> [u8; 24] {
        let mut out = [0u8; 24];
        for (i, w) in words.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        out
    }

    /// Readings in the layout `read(2)` returns them (value, time enabled, time running): the
    /// main thread counted all along; a worker's counters were multiplexed for half the
    /// window. No PMU machine was at hand to record node events, so these figures are made
    /// up to the format; `counting_follows_new_threads_and_exited_ranks` reads real ones
    /// (software events) through the same path.
    #[test]
    fn multiplexed_readings_are_scaled_to_the_window() {
        let mut rank = Counts::default();
        rank.add(
            Event::Loads,
            perf::decode(&raw([1_204_331, 2_000_412_117, 2_000_412_117])),
        );
        rank.add(
            Event::Misses,
            perf::decode(&raw([79_486, 2_000_409_803, 2_000_409_803])),
        );
        // Multiplexed: counted 1.0 s of 2.0 s, so scaled by two.
        rank.add(
            Event::Loads,
            perf::decode(&raw([300_000, 2_000_000_000, 1_000_000_000])),
        );
        rank.add(
            Event::Misses,
            perf::decode(&raw([90_000, 2_000_000_000, 1_000_000_000])),
        );
        assert_eq!(
            rank,
            Counts {
                loads: 1_804_331,
                misses: 259_486
            }
        );
        let share = rank.remote_share().unwrap();
        assert!((share - 0.1438).abs() < 1e-4, "{share}");
        // A counter that never ran counts nothing (not an infinite scale).
        let mut idle = Counts::default();
        idle.add(Event::Loads, [500, 1_000, 0]);
        assert_eq!(idle, Counts::default());
        assert_eq!(idle.remote_share(), None);
    }

    #[test]
    fn refusals_say_why_in_words() {
        let e = |errno| io::Error::from_raw_os_error(errno);
        assert!(
            unavailable(&e(libc::ENOENT), Some(2))
                .0
                .contains("no node-load events")
        );
        assert!(
            unavailable(&e(libc::EACCES), Some(3))
                .0
                .contains("perf_event_paranoid is 3")
        );
        assert!(unavailable(&e(libc::EPERM), Some(1)).0.contains("seccomp"));
        assert_eq!(
            unavailable(&e(libc::EINVAL), None).0,
            "perf_event_open failed: Invalid argument (os error 22)"
        );
    }

    #[test]
    fn the_events_are_the_kernels_generic_node_events() {
        // perf list: node-loads = hw-cache NODE/READ/ACCESS, node-load-misses = .../MISS.
        let [(loads, l), (misses, m)] = NODE_EVENTS;
        assert_eq!((loads, l.kind, l.config), (Event::Loads, 3, 0x6));
        assert_eq!((misses, m.kind, m.config), (Event::Misses, 3, 0x10006));
    }

    /// The kernel's page-fault counts (software events, which every kernel offers, PMU or
    /// not) in the two slots: all faults as "loads", minor faults as "misses".
    const FAULTS: [(Event, Source); 2] = [
        (
            Event::Loads,
            Source {
                kind: 1,   // PERF_TYPE_SOFTWARE
                config: 2, // PERF_COUNT_SW_PAGE_FAULTS
            },
        ),
        (
            Event::Misses,
            Source {
                kind: 1,
                config: 5, // PERF_COUNT_SW_PAGE_FAULTS_MIN
            },
        ),
    ];

    const HELPER: &str = "COUNTERS_TEST_HELPER_MIB"; // a test's, not numaplan's
    const TOUCHED_MIB: usize = 32;
    const PAGE: usize = 4096;

    /// A rank for `counting_follows_new_threads_and_exited_ranks` (this test binary, run again
    /// with `HELPER` set; without it, there is nothing to do): it says `ready`, waits for a
    /// line, starts a thread that writes one byte into each page of `HELPER` MiB of fresh
    /// memory (small pages), and exits.
    #[test]
    fn helper_rank_that_touches_memory_in_a_new_thread() {
        use std::io::{BufRead as _, Write as _};
        let Ok(mib) = std::env::var(HELPER) else {
            return;
        };
        let bytes = mib.parse::<usize>().expect("MiB") << 20;
        // Through the handle: printing macros are main.rs's alone (tests/tidy.rs).
        writeln!(std::io::stdout(), "ready").expect("says ready");
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).expect("go");
        std::thread::spawn(move || perf::touch_small_pages(bytes))
            .join()
            .expect("touched");
    }

    /// The helper's name as the test harness takes it (its path less the crate's name).
    fn helper_test_name() -> String {
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        format!("{module}::helper_rank_that_touches_memory_in_a_new_thread")
    }

    /// The counting path on the real kernel's `perf_event_open`, with software events in
    /// place of the node events no PMU-less machine has: counters opened on a rank's threads
    /// count the thread it starts afterwards (inheritance), stay readable after the rank has
    /// exited, and are told apart per rank.
    #[test]
    fn counting_follows_new_threads_and_exited_ranks() {
        use std::io::{BufRead as _, BufReader, Write as _};
        use std::process::{Command, Stdio};
        let spawn = |mib: usize| {
            let mut child = Command::new(std::env::current_exe().expect("test binary"))
                .args([
                    "--exact",
                    &helper_test_name(),
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(HELPER, mib.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("helper starts");
            let mut out = BufReader::new(child.stdout.take().expect("stdout"));
            let mut line = String::new();
            while !line.contains("ready") {
                line.clear();
                assert_ne!(out.read_line(&mut line).expect("reads"), 0, "helper ended");
            }
            (child, out)
        };
        let (mut toucher, toucher_out) = spawn(TOUCHED_MIB);
        let (mut idle, idle_out) = spawn(0);
        let ranks = [(0, toucher.id()), (1, idle.id())].map(|(rank, pid)| RankPid { rank, pid });
        let counting = match Counting::start(&ranks, FAULTS) {
            Ok(counting) => counting,
            // Debian's kernel.perf_event_paranoid=3 keeps perf from users who are not root: a
            // developer's own choice, said on stderr. CI runs as root, where it never applies.
            Err(Unavailable(why)) if why.contains("perf_event_paranoid is") => {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "skipped: {why}");
                return;
            }
            // Anything else (a seccomp profile) fails: the test needs the syscall.
            Err(Unavailable(why)) => panic!("perf_event_open refused software events: {why}"),
        };
        for child in [&mut toucher, &mut idle] {
            writeln!(child.stdin.as_mut().expect("stdin"), "go").expect("go");
        }
        assert!(toucher.wait().expect("waits").success());
        assert!(idle.wait().expect("waits").success());
        drop((toucher_out, idle_out));
        let counts = counting.read();
        let pages = (TOUCHED_MIB << 20) as u64 / PAGE as u64;
        let touched = counts[&toucher.id()];
        let quiet = counts[&idle.id()];
        assert!(touched.loads >= pages, "{touched:?}, {pages} pages written");
        assert!(
            touched.misses >= pages && touched.misses <= touched.loads,
            "{touched:?}"
        );
        assert!(quiet.loads < pages / 4, "the idle rank counted {quiet:?}");
        assert!(touched.remote_share().expect("faults") > 0.9);
    }
}
