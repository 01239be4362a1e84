//! The processes of `exec`: starting a rank (fork, then in the child the process group, the
//! death signal, the output, the binding and `execve`), waiting for it, and the job's guard.
//! With `affinity.rs`, the only `unsafe` code of the launcher.
//!
//! A rank is started in two halves so that ranks start in parallel: `start` forks and returns
//! at once (the child execs on its own, as a shell's `cmd &` does), and `confirm`, called once
//! every rank is forked, reads whether the child reached its program. std's `Command` waits for
//! each exec before the next fork, and with it 64 ranks took 1.6x a bash loop.
//!
//! Everything the child uses is prepared in the parent (`Prepared`): the child makes only
//! async-signal-safe syscalls on that data, allocates nothing and takes no lock.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use super::affinity::Binding;

/// Where a rank's stdout or stderr goes.
pub enum Sink {
    /// numaplan's own.
    Inherit,
    /// A pipe's write end or a log file.
    Fd(OwnedFd),
}

/// A pipe, both ends close-on-exec: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// One rank's process, ready to fork: the program's path, its argv and environment as C
/// strings, and its binding.
pub struct Prepared {
    path: CString,
    /// Keeps the strings `argv_ptrs` points into alive.
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    bind: Binding,
}

/// What the ranks' preparations share: numaplan's environment, read once, and each program
/// already found in `PATH` (every rank runs the same command).
pub struct Preparer {
    base: Vec<(OsString, OsString)>,
    /// (program, `PATH`) -> its path.
    found: Vec<((OsString, Option<OsString>), CString)>,
}

impl Preparer {
    /// Reads numaplan's environment.
    pub fn from_environment() -> Preparer {
        Preparer {
            base: std::env::vars_os().collect(),
            found: Vec::new(),
        }
    }

    /// `argv[0]` is looked up in `PATH` (the rank's, else numaplan's) as `execvp` does, here
    /// rather than in the child, so that a program that is not there fails before any rank
    /// starts. The environment is numaplan's with `env` on top.
    pub fn prepare(
        &mut self,
        argv: &[OsString],
        env: &std::collections::BTreeMap<String, String>,
        bind: Binding,
    ) -> io::Result<Prepared> {
        let path_var = env
            .get("PATH")
            .map(OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        let key = (argv[0].clone(), path_var);
        let path = match self.found.iter().find(|(k, _)| *k == key) {
            Some((_, path)) => path.clone(),
            None => {
                let path = c_string(find_program(&key.0, key.1.as_deref())?.into_os_string())?;
                self.found.push((key, path.clone()));
                path
            }
        };
        let argv: Vec<CString> = argv
            .iter()
            .cloned()
            .map(c_string)
            .collect::<Result<_, _>>()?;
        let envp: Vec<CString> = self
            .base
            .iter()
            .filter(|(k, _)| k.to_str().is_none_or(|k| !env.contains_key(k)))
            .cloned()
            .chain(env.iter().map(|(k, v)| (k.into(), v.into())))
            .map(|(mut k, v)| {
                k.push("=");
                k.push(v);
                c_string(k)
            })
            .collect::<Result<_, _>>()?;
        Ok(Prepared {
            path,
            argv_ptrs: null_terminated(&argv),
            _argv: argv,
            envp_ptrs: null_terminated(&envp),
            _envp: envp,
            bind,
        })
    }
}

fn c_string(s: OsString) -> io::Result<CString> {
    CString::new(s.into_vec()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// `execvp`'s search: a name with a `/` is used as it is; otherwise the first executable file
/// of that name in `PATH` (an empty entry is the current directory; no `PATH`: `/bin:/usr/bin`).
/// ENOENT when there is none, EACCES when one exists but may not be executed.
fn find_program(program: &OsStr, path_var: Option<&OsStr>) -> io::Result<PathBuf> {
    let executable = |p: &Path| -> io::Result<()> {
        let c = CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: a valid NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if p.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        Ok(())
    };
    if program.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if program.as_bytes().contains(&b'/') {
        executable(Path::new(program))?;
        return Ok(program.into());
    }
    let dirs = path_var.unwrap_or(OsStr::new("/bin:/usr/bin"));
    let mut denied = false;
    for dir in dirs.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() { b"." as &[u8] } else { dir };
        let candidate = Path::new(OsStr::from_bytes(dir)).join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.raw_os_error() == Some(libc::EACCES) && candidate.exists() => {
                denied = true;
            }
            Err(_) => {}
        }
    }
    Err(io::Error::from_raw_os_error(if denied {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

/// The step of a child's start that failed, as the child reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// setpgid, prctl, the signal mask, dup2.
    Setup = 1,
    /// `Binding::apply`.
    Bind = 2,
    Exec = 3,
}

/// A forked rank whose start is not yet confirmed.
pub struct Started {
    pub pid: u32,
    /// Read end of the pipe the child reports a failed step on; end of file once it execs.
    report: OwnedFd,
}

/// A rank's standard streams: stdin (`/dev/null`, shared by the ranks), stdout and stderr.
pub struct Streams<'a> {
    pub stdin: &'a OwnedFd,
    pub stdout: Sink,
    pub stderr: Sink,
}

/// Forks a rank: the child joins a new process group of its own, dies with numaplan
/// (PR_SET_PDEATHSIG; numaplan's thread must outlive it, so ranks are forked from the main
/// thread), takes its streams, applies its binding and execs. Returns without waiting; the
/// parent's copies of the streams close on return.
pub fn start(rank: &Prepared, streams: Streams) -> io::Result<Started> {
    let (report, report_w) = pipe()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child runs only `child`, which makes async-signal-safe calls on data
    // prepared before the fork and allocates nothing (numaplan may have threads).
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => child(rank, &streams, parent, report_w.as_raw_fd()),
        pid => {
            // As a shell does, also from the parent: the group exists once fork returns, so a
            // signal to it cannot arrive before the child made it. (Fails harmlessly once the
            // child has exec'd.)
            // SAFETY: setpgid has no memory preconditions.
            unsafe { libc::setpgid(pid, pid) };
            Ok(Started {
                pid: pid as u32,
                report,
            })
        }
    }
}

impl Started {
    /// Waits until the child has exec'd (end of file on its report pipe) or reports the step
    /// that failed.
    pub fn confirm(self) -> Result<u32, (Step, io::Error)> {
        let mut buf = [0u8; 8];
        let mut got = 0;
        while got < buf.len() {
            // SAFETY: reads into the unfilled part of `buf`.
            let n = unsafe {
                libc::read(
                    self.report.as_raw_fd(),
                    buf[got..].as_mut_ptr().cast(),
                    buf.len() - got,
                )
            };
            match n {
                0 => break,
                n if n > 0 => got += n as usize,
                _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                _ => return Err((Step::Setup, io::Error::last_os_error())),
            }
        }
        if got < buf.len() {
            return Ok(self.pid);
        }
        let step = match i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) {
            2 => Step::Bind,
            3 => Step::Exec,
            _ => Step::Setup,
        };
        let errno = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
        Err((step, io::Error::from_raw_os_error(errno)))
    }
}

/// The child between fork and exec.
fn child(rank: &Prepared, streams: &Streams, parent: libc::pid_t, report: RawFd) -> ! {
    let fail = |step: Step, errno: i32| -> ! {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&(step as i32).to_ne_bytes());
        msg[4..].copy_from_slice(&errno.to_ne_bytes());
        // SAFETY: write and _exit are async-signal-safe; `msg` is on the stack.
        unsafe {
            libc::write(report, msg.as_ptr().cast(), msg.len());
            libc::_exit(127)
        }
    };
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: plain syscalls on descriptors and data `rank` owns.
    unsafe {
        if libc::setpgid(0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
        {
            fail(Step::Setup, errno());
        }
        if libc::getppid() != parent {
            // numaplan died between fork and prctl.
            libc::_exit(128 + libc::SIGKILL);
        }
        // Rust's runtime ignores SIGPIPE; a program starts with it at its default, and with
        // no signal blocked.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let targets = [
            (streams.stdin.as_raw_fd(), 0),
            (sink_fd(&streams.stdout), 1),
            (sink_fd(&streams.stderr), 2),
        ];
        for (fd, target) in targets {
            if fd < 0 {
                continue;
            }
            // dup2 onto itself keeps close-on-exec set: clear it instead.
            let ok = if fd == target {
                libc::fcntl(fd, libc::F_SETFD, 0) == 0
            } else {
                libc::dup2(fd, target) == target
            };
            if !ok {
                fail(Step::Setup, errno());
            }
        }
    }
    if let Err(e) = rank.bind.apply() {
        fail(Step::Bind, e.raw_os_error().unwrap_or(0));
    }
    // SAFETY: NUL-terminated path, and argv/envp arrays of C strings ending in null, all
    // owned by `rank`.
    unsafe {
        libc::execve(
            rank.path.as_ptr(),
            rank.argv_ptrs.as_ptr(),
            rank.envp_ptrs.as_ptr(),
        );
    }
    fail(Step::Exec, errno())
}

fn sink_fd(sink: &Sink) -> RawFd {
    match sink {
        Sink::Inherit => -1,
        Sink::Fd(fd) => fd.as_raw_fd(),
    }
}

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
pub fn signal_group(pgid: u32, signal: libc::c_int) {
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

/// Whether the reader of the pipe `fd` writes to has gone (the `head -1` of `verify --watch |
/// head -1` exited): poll reports an error on a pipe's write end once no process holds its read
/// end. False for a terminal or a file, which have no reader to lose.
pub fn reader_gone(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, and a zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Waits up to `wait` for any of `fds` to have data or be closed; returns which did (all
/// false when the time passed).
pub fn poll_readable(fds: &[RawFd], wait: std::time::Duration) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid array of pollfds, and its length.
    if unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_execvp_finds_them() {
        let sh = find_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin"))).unwrap();
        assert_eq!(sh, Path::new("/bin/sh"));
        let missing = find_program(OsStr::new("no-such-program-x"), Some(OsStr::new("/bin")));
        assert_eq!(missing.unwrap_err().raw_os_error(), Some(libc::ENOENT));
        // A directory, and a file that may not be executed, are not programs.
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::write(&data, "not a program").unwrap();
        let denied = find_program(data.as_os_str(), None);
        assert_eq!(denied.unwrap_err().raw_os_error(), Some(libc::EACCES));
        let denied = find_program(OsStr::new("data"), Some(dir.path().as_os_str()));
        assert_eq!(denied.unwrap_err().raw_os_error(), Some(libc::EACCES));
        let dir = find_program(OsStr::new("tmp"), Some(OsStr::new("/")));
        assert_eq!(dir.unwrap_err().raw_os_error(), Some(libc::EACCES));
        assert!(find_program(OsStr::new(""), None).is_err());
    }
}
