//! The syscalls of `exec`: the only `unsafe` code in numaplan. A `Binding` is prepared in the
//! parent (allocation allowed); `Binding::apply` runs in the forked child before `exec` and
//! makes only async-signal-safe calls on data prepared beforehand (no allocation, no locks).

use std::io;

use crate::cpuset::CpuSet;
use crate::plan::MemoryBinding;
use crate::spec::MemPolicy;

/// Node masks cover this many nodes (Linux's largest `MAX_NUMNODES` is 1024).
const NODE_WORDS: usize = 16;

/// A rank's CPU affinity and memory policy, ready to apply in the child.
pub struct Binding {
    cpus: libc::cpu_set_t,
    /// `MPOL_*`, or `None` to leave the inherited policy.
    mode: Option<libc::c_int>,
    nodes: [libc::c_ulong; NODE_WORDS],
    /// The parent's pid: if the child's parent differs, numaplan died before `prctl` ran.
    parent: libc::pid_t,
}

const MPOL_PREFERRED: libc::c_int = 1;
const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;

impl Binding {
    /// Fails (EINVAL) for a CPU or node beyond what a mask can hold.
    pub fn new(cpus: &CpuSet, memory: &MemoryBinding) -> io::Result<Binding> {
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let max_cpus = 8 * std::mem::size_of::<libc::cpu_set_t>() as u32;
        for cpu in cpus.iter() {
            if cpu >= max_cpus {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            // SAFETY: `cpu` is below the set's capacity.
            unsafe { libc::CPU_SET(cpu as usize, &mut set) };
        }
        let mut nodes = [0 as libc::c_ulong; NODE_WORDS];
        let bits = libc::c_ulong::BITS as usize;
        for n in &memory.nodes {
            let n = n.0 as usize;
            if n >= NODE_WORDS * bits {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            nodes[n / bits] |= 1 << (n % bits);
        }
        let mode = match memory.policy {
            MemPolicy::None => None,
            MemPolicy::Preferred => Some(MPOL_PREFERRED),
            MemPolicy::Bind => Some(MPOL_BIND),
            MemPolicy::Interleave => Some(MPOL_INTERLEAVE),
        };
        Ok(Binding {
            cpus: set,
            mode,
            nodes,
            // SAFETY: getpid has no preconditions.
            parent: unsafe { libc::getpid() },
        })
    }

    /// The binding step every way of applying a rank shares (exec's child before `execve`,
    /// `numaplan bind` before its own `execve`): the CPU affinity, then the memory policy, of
    /// the calling thread, which the threads and processes it starts and the program it execs
    /// inherit. Async-signal-safe: syscalls only, on data owned by `self`.
    pub fn apply(&self) -> io::Result<()> {
        // SAFETY: plain syscalls with valid pointers to data `self` owns for the call.
        unsafe {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.cpus) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(mode) = self.mode {
                let maxnode = (NODE_WORDS * libc::c_ulong::BITS as usize + 1) as libc::c_ulong;
                if libc::syscall(libc::SYS_set_mempolicy, mode, self.nodes.as_ptr(), maxnode) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }

    /// In exec's child between fork and exec: die with numaplan, then `apply`.
    fn apply_in_child(&self) -> io::Result<()> {
        // SAFETY: plain syscalls without pointers.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != self.parent {
                // numaplan died between fork and prctl.
                libc::_exit(128 + libc::SIGKILL);
            }
        }
        self.apply()
    }
}

/// Makes `cmd`'s child apply `bind` after fork, before exec.
pub fn bind_before_exec(cmd: &mut std::process::Command, bind: Binding) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs between fork and exec; `apply_in_child` makes only
    // async-signal-safe syscalls on data owned by `bind`, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || bind.apply_in_child());
    }
}

/// Sends `signal` to the process group `pgid`; a group already gone is not an error.
pub fn signal_group(pgid: u32, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

/// The CPUs this process may run on (its affinity: cgroup cpuset, taskset, a Slurm step).
pub fn own_affinity() -> io::Result<CpuSet> {
    // SAFETY: a zeroed cpu_set_t is valid; the size passed is its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        Ok((0..max)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect())
    }
}

/// The signals numaplan forwards to the ranks.
pub const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static PENDING: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn remember(signal: libc::c_int) {
    PENDING.store(signal, std::sync::atomic::Ordering::SeqCst);
}

/// Catches SIGINT, SIGTERM and SIGHUP so that `take_signal` reports them instead of numaplan
/// dying with its ranks orphaned.
pub fn catch_signals() -> io::Result<()> {
    for s in FORWARDED {
        // SAFETY: `remember` only stores to an atomic, which is async-signal-safe.
        let previous = unsafe { libc::signal(s, remember as *const () as libc::sighandler_t) };
        if previous == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The last signal caught since the previous call, if any.
pub fn take_signal() -> Option<libc::c_int> {
    match PENDING.swap(0, std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// `SIGKILL` for 9, as `kill -l` names it.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// Waits up to `wait` for `fd` to have data or be closed: `Ok(false)` when the time passed.
pub fn poll_readable(fd: std::os::fd::RawFd, wait: std::time::Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, and its count.
    match unsafe { libc::poll(&mut pfd, 1, ms) } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// A rank's guard: a small process forked from numaplan into the rank's process group. When
/// numaplan dies, even of SIGKILL, the guard kills the group: the rank's own children (a data
/// loader's workers, a `sleep &`) die with it instead of living on under PID 1. Being a member
/// of the group, it also keeps the group's id from being reused while it waits.
pub struct Guard {
    pid: libc::pid_t,
}

impl Guard {
    /// Forks the guard of the process group `pgid` (a rank that has just started).
    pub fn start(pgid: u32) -> io::Result<Guard> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child runs only `guard`, which makes async-signal-safe calls and
        // allocates nothing (the parent has threads).
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => guard(pgid as libc::pid_t, parent),
            pid => Ok(Guard { pid }),
        }
    }

    /// Reaps the guard once its group was killed (its end is numaplan's SIGKILL to the group).
    pub fn reap(self) {
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a valid out pointer.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// The guard's life: join the group, block every signal (numaplan forwards SIGTERM to the group;
/// the guard must outlive it), ask for SIGUSR1 when numaplan dies, and on it (numaplan gone, not
/// a stray SIGUSR1) kill the whole group, itself included.
fn guard(pgid: libc::pid_t, parent: libc::pid_t) -> ! {
    // SAFETY: only async-signal-safe calls on local data.
    unsafe {
        let name = c"numaplan-guard";
        libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
        if libc::setpgid(0, pgid) != 0 {
            libc::_exit(0);
        }
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        let mut death: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut death);
        libc::sigaddset(&mut death, libc::SIGUSR1);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGUSR1 as libc::c_ulong,
            0,
            0,
            0,
        );
        while libc::getppid() == parent {
            libc::sigwaitinfo(&death, std::ptr::null_mut());
        }
        libc::kill(-pgid, libc::SIGKILL);
        libc::_exit(0)
    }
}
