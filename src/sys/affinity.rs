//! The binding syscalls, shared by `exec` and `bind`: CPU affinity and memory policy. A
//! `Binding` is prepared in the parent (allocation allowed); `Binding::apply` runs in the
//! forked child before `exec` and makes only async-signal-safe calls on data prepared
//! beforehand (no allocation, no locks).

use std::io;

use crate::cpuset::CpuSet;
use crate::ids::NodeId;

/// Node masks cover this many nodes (Linux's largest `MAX_NUMNODES` is 1024).
const NODE_WORDS: usize = 16;

/// A rank's CPU affinity and memory policy, ready to apply in the child.
pub struct Binding {
    cpus: libc::cpu_set_t,
    /// `MPOL_*`, or `None` to leave the inherited policy.
    mode: Option<libc::c_int>,
    nodes: [libc::c_ulong; NODE_WORDS],
}

/// A memory policy `set_mempolicy` applies (`MPOL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryMode {
    Preferred = 1,
    Bind = 2,
    Interleave = 3,
}

/// The memory policy of a `Binding`: a mode on nodes, or none (the inherited policy stays).
#[derive(Clone, Copy, Debug)]
pub struct Memory<'a> {
    pub mode: Option<MemoryMode>,
    pub nodes: &'a [NodeId],
}

impl Memory<'_> {
    /// No memory policy: the inherited one stays.
    pub const NONE: Memory<'static> = Memory {
        mode: None,
        nodes: &[],
    };
}

impl Binding {
    /// Fails (EINVAL) for a CPU or node beyond what a mask can hold.
    pub fn new(cpus: &CpuSet, memory: Memory) -> io::Result<Binding> {
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
        for n in memory.nodes {
            let n = n.0 as usize;
            if n >= NODE_WORDS * bits {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            nodes[n / bits] |= 1 << (n % bits);
        }
        Ok(Binding {
            cpus: set,
            mode: memory.mode.map(|m| m as libc::c_int),
            nodes,
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
}

/// Puts thread `tid` (of any process this one may act on) back on `cpus`: `verify --repin`'s
/// correction of a thread that left its rank's CPUs.
pub fn set_thread_affinity(tid: u32, cpus: &CpuSet) -> io::Result<()> {
    let binding = Binding::new(cpus, Memory::NONE)?;
    // SAFETY: a syscall with a valid pointer to the set `binding` owns for the call.
    let done = unsafe {
        libc::sched_setaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &binding.cpus,
        )
    };
    match done {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The CPUs this process may run on (its affinity: cgroup cpuset, taskset, a Slurm step).
pub fn own_affinity() -> io::Result<CpuSet> {
    thread_affinity(0)
}

/// The CPUs thread `tid` may run on (0: the calling thread), as `Cpus_allowed_list` shows them
/// but with one syscall instead of the kernel formatting a whole status file: what `verify
/// --watch` reads every interval. The mask grows until it holds every CPU the kernel has.
pub fn thread_affinity(tid: u32) -> io::Result<CpuSet> {
    let mut words = 16; // 1024 CPUs, glibc's cpu_set_t
    loop {
        let mut mask = vec![0 as libc::c_ulong; words];
        let bytes = words * std::mem::size_of::<libc::c_ulong>();
        // SAFETY: the kernel writes at most `bytes` bytes into `mask`, which has that many.
        let done = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid as libc::pid_t,
                bytes,
                mask.as_mut_ptr(),
            )
        };
        if done >= 0 {
            let bits = libc::c_ulong::BITS as usize;
            return Ok((0..words * bits)
                .filter(|&c| mask[c / bits] & (1 << (c % bits)) != 0)
                .map(|c| c as u32)
                .collect());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) || words >= 1024 {
            return Err(e);
        }
        words *= 4;
    }
}
