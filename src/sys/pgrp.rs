//! A job's process groups once its ranks are started: how a rank ended (without reaping it),
//! reaping it, signalling its group, and the guard that kills every group when numaplan dies.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;

use super::pipe::pipe;

/// How the rank `pid` ended, once it has, without reaping it: until `reap`, its pid, which is
/// also its process group's id, cannot be given to another process, so numaplan and the guard
/// can signal the group without hitting a stranger.
pub fn ended(pid: u32) -> io::Result<Option<ExitStatus>> {
    // SAFETY: a zeroed siginfo_t is valid; waitid writes into it.
    let info = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        info
    };
    // SAFETY: waitid filled in a SIGCHLD siginfo (or left it zeroed: no pid).
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    let raw = match info.si_code {
        libc::CLD_EXITED => (status & 0xff) << 8,
        libc::CLD_KILLED => status & 0x7f,
        libc::CLD_DUMPED => (status & 0x7f) | 0x80,
        _ => return Ok(None),
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

/// What the supervision waits on between its turns: a descriptor per rank (`pidfd_open`) that
/// becomes readable when the rank ends, so a job that ends is seen when it ends rather than at
/// the next of a series of sleeps (which cost a short job up to a millisecond, as much as
/// starting a rank). Without pidfds (Linux before 5.3) `wait` sleeps.
pub struct Exits {
    fds: Vec<(u32, Option<OwnedFd>)>,
}

impl Exits {
    /// Opens a descriptor on each of `pids` (children numaplan has not reaped).
    pub fn open(pids: impl Iterator<Item = u32>) -> Exits {
        let fds = pids
            .map(|pid| {
                // SAFETY: pidfd_open takes a pid and flags; a descriptor it returns is ours.
                let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
                // SAFETY: a fresh descriptor nothing else owns.
                let fd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
                (pid, fd)
            })
            .collect();
        Exits { fds }
    }

    /// Waits up to `timeout` for one of `live` to end; returns early on a signal too.
    pub fn wait(&self, live: &[u32], timeout: std::time::Duration) {
        let mut polled: Vec<libc::pollfd> = Vec::with_capacity(live.len());
        for pid in live {
            match self.fds.iter().find(|(p, _)| p == pid) {
                Some((_, Some(fd))) => polled.push(libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }),
                _ => return std::thread::sleep(timeout),
            }
        }
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `polled` is a valid array of its length, `timeout` a valid timespec. A
        // signal ends the wait (EINTR), which is what the caller wants: it forwards it.
        unsafe {
            libc::ppoll(
                polled.as_mut_ptr(),
                polled.len() as libc::nfds_t,
                &timeout,
                std::ptr::null(),
            )
        };
    }
}

/// Reaps the child `pid` (a rank, the guard), waiting for it to end.
pub fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid out pointer.
    unsafe {
        while libc::waitpid(pid as libc::pid_t, &mut status, 0) == -1
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
}

/// Sends `signal` to the process group `pgid`; a group already gone is not an error.
pub fn signal(pgid: u32, signal: libc::c_int) {
    // SAFETY: kill has no memory preconditions.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

/// The job's guard: one small process, forked from numaplan before the ranks, in a process
/// group of its own (a signal to numaplan's group, Ctrl-C included, does not reach it), told
/// each rank's process group through a pipe. When numaplan dies, even of SIGKILL, the pipe
/// reaches end of file and the guard kills every group: the ranks' own children (a data
/// loader's workers, a `sleep &`) die with them instead of living on under PID 1. numaplan
/// reaps no rank before the guard has ended (`ended` does not reap), so no group id it
/// holds can belong to another process.
pub struct Guard {
    pid: libc::pid_t,
    tell: OwnedFd,
}

impl Guard {
    /// Forks the guard of up to `ranks` process groups.
    pub fn start(ranks: usize) -> io::Result<Guard> {
        let (listen, tell) = pipe()?;
        // Allocated before the fork: the guard pushes within this capacity, never allocating.
        let mut groups: Vec<libc::pid_t> = Vec::with_capacity(ranks);
        // SAFETY: the child runs only `guard`, which makes async-signal-safe calls and
        // allocates nothing.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                drop(tell);
                guard(listen.as_raw_fd(), &mut groups)
            }
            pid => Ok(Guard { pid, tell }),
        }
    }

    /// Adds a rank's process group to those the guard kills.
    pub fn watch(&self, pgid: u32) -> io::Result<()> {
        let msg = (pgid as libc::pid_t).to_ne_bytes();
        // SAFETY: writes `msg`, 4 bytes: below PIPE_BUF, so whole or not at all.
        let n = unsafe { libc::write(self.tell.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
        if n != msg.len() as isize {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Ends the guard (it kills the groups it watches, which numaplan has already ended) and
    /// reaps it; the ranks may be reaped after this.
    pub fn finish(self) {
        let Guard { pid, tell } = self;
        drop(tell);
        reap(pid as u32);
    }
}

/// The guard's life: leave numaplan's process group, block every signal, collect process
/// groups until end of file (numaplan ended or died), then kill them all.
fn guard(listen: RawFd, groups: &mut Vec<libc::pid_t>) -> ! {
    // SAFETY: only async-signal-safe calls on local data.
    unsafe {
        let name = c"numaplan-guard";
        libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
        libc::setpgid(0, 0);
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        loop {
            let mut msg = [0u8; 4];
            let n = libc::read(listen, msg.as_mut_ptr().cast(), msg.len());
            if n == msg.len() as isize && groups.len() < groups.capacity() {
                groups.push(libc::pid_t::from_ne_bytes(msg));
            } else if n == 0
                || (n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted)
            {
                break;
            }
        }
        for &pgid in groups.iter() {
            libc::kill(-pgid, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn the_wait_ends_when_a_rank_ends_not_at_its_timeout() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .unwrap();
        let pid = child.id();
        let exits = Exits::open(std::iter::once(pid));
        let began = Instant::now();
        exits.wait(&[pid], Duration::from_secs(30));
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "woken by the exit"
        );
        assert!(ended(pid).unwrap().is_some_and(|s| s.success()));
        assert!(child.wait().unwrap().success());
    }
}
