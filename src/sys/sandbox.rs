//! Code that may crash the whole process (hwloc reading an untrusted XML file: libhwloc 2.9
//! segfaults on some, and its bindings panic on others) runs in a forked child, so a crash
//! becomes an error about the input instead of numaplan dying of a signal.

use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

/// How the child's work ended, and what it wrote on standard error meanwhile (hwloc's own
/// warnings and failed assertions), which the parent decides how to show.
#[derive(Debug, PartialEq, Eq)]
pub struct Ended {
    pub outcome: Outcome,
    pub stderr: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The bytes the work returned.
    Returned(Vec<u8>),
    /// The child died of this signal (a crash in C code).
    Crashed { signal: i32 },
    /// The work panicked.
    Panicked,
}

/// Runs `work` in a child process (fork, no exec) and returns what it returned.
///
/// Forking is only safe while this process has no other thread: a lock another thread holds
/// (the environment, stderr, hwloc's own) stays locked forever in the child. numaplan reads
/// topologies before it starts any thread, so the binary always gets the child; a caller with
/// threads of its own (the test harness, a library user) gets `work` run here, unprotected.
///
/// `budget`: the bytes of memory the child may take beyond what it starts with (its address
/// space is limited to that, `RLIMIT_AS`), so that a malformed input hwloc grows on fails at
/// a bound set by its size rather than taking the machine's memory.
pub fn in_child(budget: u64, work: impl FnOnce() -> Vec<u8>) -> io::Result<Ended> {
    if threads() != Some(1) {
        return Ok(Ended {
            outcome: Outcome::Returned(work()),
            stderr: String::new(),
        });
    }
    // The child's standard error goes to a memory file the parent reads once it has ended (a
    // pipe could fill up while the parent waits on the other one).
    // SAFETY: the name is a valid C string; the flags are constants.
    let errors =
        unsafe { libc::memfd_create(c"numaplan-child-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    if errors < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned here alone.
    let errors = unsafe { OwnedFd::from_raw_fd(errors) };
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork has no memory preconditions; the child only runs `work` and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(read_end);
        // SAFETY: both descriptors are open; dup2 onto 2 replaces the inherited stderr.
        unsafe { libc::dup2(errors.as_raw_fd(), 2) };
        limit_address_space(budget);
        child(work, write_end);
    }
    drop(write_end);
    let mut out = Vec::new();
    let read = std::fs::File::from(read_end).read_to_end(&mut out);
    let mut status = 0;
    // SAFETY: `status` is valid for waitpid to write; `pid` is our child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    read?;
    let mut stderr = Vec::new();
    let mut errors = std::fs::File::from(errors);
    std::io::Seek::rewind(&mut errors)?;
    errors.read_to_end(&mut stderr)?;
    let outcome = if libc::WIFSIGNALED(status) {
        Outcome::Crashed {
            signal: libc::WTERMSIG(status),
        }
    } else if libc::WEXITSTATUS(status) == 0 {
        Outcome::Returned(out)
    } else {
        Outcome::Panicked
    };
    Ok(Ended {
        outcome,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// Limits this process's address space to what it uses now and `budget` more (where the
/// kernel says how much it uses: `/proc/self/statm`).
fn limit_address_space(budget: u64) {
    let Some(pages) = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
    else {
        return;
    };
    // SAFETY: sysconf has no preconditions.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let bytes = pages.saturating_mul(page).saturating_add(budget);
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: `limit` is a valid rlimit; lowering this process's own limit is always allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
}

/// This process's thread count (`Threads:` of /proc/self/status).
fn threads() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// The child: runs `work`, writes its bytes to the pipe and exits without running destructors
/// or exit handlers of the parent's state (`_exit`).
fn child(work: impl FnOnce() -> Vec<u8>, pipe: OwnedFd) -> ! {
    // A panic here is reported by the parent as a fact about the input, not as a bug.
    std::panic::set_hook(Box::new(|_| {}));
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(bytes) => {
            let mut file = std::fs::File::from(pipe);
            match std::io::Write::write_all(&mut file, &bytes) {
                Ok(()) => 0,
                Err(_) => 2,
            }
        }
        Err(_) => 101,
    };
    // SAFETY: _exit ends the child at once; nothing of the parent's is flushed twice.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test harness has threads, so `in_child` runs the work in place there; the crash
    /// cases are covered through the binary (tests/hardening.rs). Here: the result travels.
    #[test]
    fn returns_what_the_work_returns() {
        assert_eq!(
            in_child(1 << 20, || b"hello".to_vec()).unwrap().outcome,
            Outcome::Returned(b"hello".to_vec())
        );
        assert!(threads().is_some_and(|n| n >= 1));
    }
}
