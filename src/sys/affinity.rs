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
    /// inherit. All or nothing: when the memory policy is refused, the affinity the thread had
    /// is put back, and the call that was refused is said. Async-signal-safe: syscalls only, on
    /// data owned by `self` and the stack.
    pub fn apply(&self) -> Result<(), Refused> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut before: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain syscalls with valid pointers to data `self` and this frame own.
        unsafe {
            let saved = libc::sched_getaffinity(0, size, &mut before) == 0;
            if libc::sched_setaffinity(0, size, &self.cpus) != 0 {
                return Err(Refused::last(Call::SchedSetaffinity));
            }
            if let Some(mode) = self.mode
                && let Err(refused) = set_mempolicy(mode, &self.nodes)
            {
                if saved {
                    libc::sched_setaffinity(0, size, &before);
                }
                return Err(refused);
            }
        }
        Ok(())
    }

    /// The calling thread's binding as the kernel reads it back (`sched_getaffinity`, and
    /// `get_mempolicy` where a policy was set): `None` when it is what `apply` set, else what
    /// it is. The kernel narrows an affinity to the CPUs a cpuset allows, and a memory policy's
    /// nodes to its memory nodes, without an error. Async-signal-safe.
    pub fn read_back(&self) -> Option<ReadBack> {
        // SAFETY: zeroed plain data; the kernel writes within the sizes given.
        let mut actual: ReadBack = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: valid pointers to `actual`'s fields, of the sizes given.
        unsafe {
            if libc::sched_getaffinity(0, size, &mut actual.cpus) != 0 {
                actual.cpus_unread = 1;
            }
            if self.mode.is_some()
                && libc::syscall(
                    libc::SYS_get_mempolicy,
                    &mut actual.mode,
                    actual.nodes.as_mut_ptr(),
                    MAXNODE,
                    std::ptr::null_mut::<libc::c_void>(),
                    0,
                ) != 0
            {
                actual.mode = -1;
            }
        }
        let cpus_same = actual.cpus_unread == 0 && cpu_sets_equal(&actual.cpus, &self.cpus);
        let memory_same = match self.mode {
            None => true,
            // The mode flags (static, relative nodes) in the high bits are not the mode.
            Some(mode) => actual.mode & 0xff == mode && actual.nodes == self.nodes,
        };
        if cpus_same && memory_same {
            return None;
        }
        if self.mode.is_none() {
            actual.mode = -2;
        }
        Some(actual)
    }
}

impl Binding {
    /// Whether the kernel lets this process set the binding's memory policy: tried on the
    /// calling thread, whose own policy is read first and put back after (`get_mempolicy(2)`:
    /// what it reads can be set again), or, where it cannot be read, on a thread of its own
    /// that then ends. A seccomp profile without `CAP_SYS_NICE` refuses it with EPERM; a node
    /// the cpuset does not allow, with EINVAL. `Ok` for a binding without a memory policy.
    pub fn memory_allowed(&self) -> Result<(), Refused> {
        let Some(mode) = self.mode else {
            return Ok(());
        };
        let mut saved_mode: libc::c_int = 0;
        let mut saved_nodes = [0 as libc::c_ulong; NODE_WORDS];
        // SAFETY: valid pointers to this frame's mode and node mask of MAXNODE - 1 bits.
        let saved = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut saved_mode,
                saved_nodes.as_mut_ptr(),
                MAXNODE,
                std::ptr::null_mut::<libc::c_void>(),
                0,
            ) == 0
        };
        if !saved {
            return self.memory_allowed_on_a_thread(mode);
        }
        set_mempolicy(mode, &self.nodes)?;
        // Put back what was read: it was allowed a moment ago.
        set_mempolicy(saved_mode, &saved_nodes)
    }

    fn memory_allowed_on_a_thread(&self, mode: libc::c_int) -> Result<(), Refused> {
        let nodes = self.nodes;
        std::thread::spawn(move || set_mempolicy(mode, &nodes))
            .join()
            .unwrap_or(Ok(()))
    }
}

fn set_mempolicy(mode: libc::c_int, nodes: &[libc::c_ulong; NODE_WORDS]) -> Result<(), Refused> {
    // SAFETY: a syscall with a valid pointer to a node mask of MAXNODE - 1 bits.
    match unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, nodes.as_ptr(), MAXNODE) } {
        0 => Ok(()),
        _ => Err(Refused::last(Call::SetMempolicy)),
    }
}

/// `maxnode` for the node masks: every bit of them (the kernel reads maxnode - 1 bits).
const MAXNODE: libc::c_ulong = (NODE_WORDS * libc::c_ulong::BITS as usize + 1) as libc::c_ulong;

fn cpu_sets_equal(a: &libc::cpu_set_t, b: &libc::cpu_set_t) -> bool {
    // SAFETY: both are plain bit arrays of the same size.
    unsafe { libc::CPU_EQUAL(a, b) }
}

/// A binding call of numaplan's. (`migrate_pages` is the Python package's alone.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    SchedSetaffinity,
    SetMempolicy,
}

impl Call {
    /// The syscall's name, as strace and seccomp profiles spell it.
    pub fn name(self) -> &'static str {
        match self {
            Call::SchedSetaffinity => "sched_setaffinity",
            Call::SetMempolicy => "set_mempolicy",
        }
    }

    /// Whether the call sets a memory policy (rather than the CPUs).
    pub fn is_memory(self) -> bool {
        self == Call::SetMempolicy
    }
}

/// A binding call the kernel refused.
#[derive(Debug)]
pub struct Refused {
    pub call: Call,
    pub error: io::Error,
}

impl Refused {
    fn last(call: Call) -> Refused {
        Refused {
            call,
            error: io::Error::last_os_error(),
        }
    }
}

/// A thread's binding as the kernel read it back, in the kernel's own layout (it crosses a
/// pipe from exec's child as it is: no allocation there).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ReadBack {
    cpus: libc::cpu_set_t,
    /// Non-zero when the affinity could not be read.
    cpus_unread: libc::c_int,
    /// `MPOL_*` (with its flags); -1: could not be read; -2: no policy was set, so none read.
    mode: libc::c_int,
    nodes: [libc::c_ulong; NODE_WORDS],
}

impl ReadBack {
    /// The CPUs read back, when they could be.
    pub fn cpus(&self) -> Option<CpuSet> {
        (self.cpus_unread == 0).then(|| {
            (0..8 * std::mem::size_of::<libc::cpu_set_t>())
                // SAFETY: `c` is below the set's capacity.
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &self.cpus) })
                .map(|c| c as u32)
                .collect()
        })
    }

    /// The memory policy read back, as `numa_maps` spells it (`bind:0-1`, `default`);
    /// `None` where none was set or it could not be read.
    pub fn memory(&self) -> Option<String> {
        let bits = libc::c_ulong::BITS as usize;
        let nodes: CpuSet = (0..NODE_WORDS * bits)
            .filter(|&n| self.nodes[n / bits] & (1 << (n % bits)) != 0)
            .map(|n| n as u32)
            .collect();
        let name = match self.mode & 0xff {
            _ if self.mode < 0 => return None,
            0 => return Some("default".into()),
            1 => "prefer",
            2 => "bind",
            3 => "interleave",
            m => return Some(format!("mode {m}:{nodes}")),
        };
        Some(format!("{name}:{nodes}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a thread of its own, whose binding it may change without touching the test
    /// harness's other threads.
    fn on_a_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    fn first_cpu() -> CpuSet {
        own_affinity().unwrap().iter().take(1).collect()
    }

    #[test]
    fn an_applied_binding_reads_back_as_itself_and_another_reads_back_as_it_is() {
        let cpu = first_cpu();
        let (same, other) = on_a_thread(move || {
            let nodes = [NodeId(0)];
            let mode = Some(MemoryMode::Preferred);
            let binding = Binding::new(
                &cpu,
                Memory {
                    mode,
                    nodes: &nodes,
                },
            )
            .unwrap();
            binding.apply().unwrap();
            let wider: CpuSet = (0..=cpu.iter().next().unwrap() + 1).collect();
            let mode = Some(MemoryMode::Bind);
            let other = Binding::new(
                &wider,
                Memory {
                    mode,
                    nodes: &nodes,
                },
            )
            .unwrap();
            (binding.read_back().is_none(), other.read_back())
        });
        assert!(same, "what apply set reads back unchanged");
        let other = other.expect("a different binding reads back as the thread's");
        assert_eq!(other.cpus(), Some(first_cpu()));
        assert_eq!(other.memory().as_deref(), Some("prefer:0"));
    }

    #[test]
    fn a_refused_memory_policy_leaves_the_affinity_as_it_was() {
        let (refused, before, after) = on_a_thread(|| {
            let before = own_affinity().unwrap();
            // A node no machine this runs on has: set_mempolicy refuses it (EINVAL).
            let nodes = [NodeId(NODE_WORDS as u32 * libc::c_ulong::BITS - 1)];
            let memory = Memory {
                mode: Some(MemoryMode::Bind),
                nodes: &nodes,
            };
            let binding = Binding::new(&first_cpu(), memory).unwrap();
            let refused = binding.apply().unwrap_err();
            (refused, before, own_affinity().unwrap())
        });
        assert_eq!(refused.call, Call::SetMempolicy);
        assert_eq!(refused.error.raw_os_error(), Some(libc::EINVAL));
        assert_eq!(after, before, "all or nothing: the CPUs are put back");
    }

    #[test]
    fn a_binding_without_memory_reads_back_no_policy() {
        let cpu = first_cpu();
        let read = on_a_thread(move || {
            let binding = Binding::new(&cpu, Memory::NONE).unwrap();
            binding.apply().unwrap();
            let wider: CpuSet = (0..=cpu.iter().next().unwrap() + 1).collect();
            Binding::new(&wider, Memory::NONE).unwrap().read_back()
        })
        .expect("other CPUs");
        assert_eq!(read.memory(), None, "no policy was set, none is reported");
        assert_eq!(read.cpus(), Some(first_cpu()));
    }

    #[test]
    fn trying_a_memory_policy_leaves_the_threads_own_as_it_was() {
        let (allowed, refused, after) = on_a_thread(|| {
            let nodes = [NodeId(0)];
            let preferred = Memory {
                mode: Some(MemoryMode::Preferred),
                nodes: &nodes,
            };
            let own = Binding::new(&first_cpu(), preferred).unwrap();
            own.apply().unwrap();
            let bind = Memory {
                mode: Some(MemoryMode::Bind),
                nodes: &nodes,
            };
            let allowed = Binding::new(&first_cpu(), bind).unwrap().memory_allowed();
            let far = [NodeId(NODE_WORDS as u32 * libc::c_ulong::BITS - 1)];
            let far = Memory {
                mode: Some(MemoryMode::Bind),
                nodes: &far,
            };
            let refused = Binding::new(&first_cpu(), far).unwrap().memory_allowed();
            (allowed, refused, own.read_back())
        });
        assert!(allowed.is_ok(), "node 0 may be bound to");
        let refused = refused.expect_err("a node no machine has is refused");
        assert_eq!(refused.call, Call::SetMempolicy);
        assert!(
            after.is_none(),
            "the thread keeps prefer:0: {:?}",
            after.map(|a| a.memory())
        );
    }
}
