//! The processes of `exec`: starting a rank (a `clone` that shares numaplan's memory until the
//! child execs, and in the child the process group, the death signal, the output, the binding
//! and `execve`) and confirming it started. With `affinity.rs` and `pgrp.rs`, the only `unsafe`
//! code of the launcher.
//!
//! A rank is started in two halves: `start` returns as soon as the child has exec'd (or
//! failed), without waiting for its program to run, and `confirm`, called once later ranks are
//! started, reads whether the child reached its program. std's `Command` waits for each exec to
//! be confirmed before the next, and with it 64 ranks took 1.6x a bash loop; a `fork` per rank
//! copied numaplan's page tables, some 70 us a rank more than a shell's (BENCHMARKS.md).
//!
//! Everything the child uses is prepared in the parent (`Prepared`): the child makes only
//! async-signal-safe syscalls on that data, allocates nothing and takes no lock.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

use super::affinity::{Binding, Call, ReadBack};
use super::pipe::pipe;

/// Where a rank's stdout or stderr goes.
pub enum Sink {
    /// numaplan's own.
    Inherit,
    /// A pipe's write end or a log file.
    Fd(OwnedFd),
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
    /// Read the binding back after applying it, and fail the start when it differs.
    check: Check,
}

/// Whether a rank's child reads its binding back before it execs (`exec --verify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    ReadBack,
    None,
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
        check: Check,
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
            check,
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
    /// The binding read back differs from the one applied (`Check::ReadBack`).
    ReadBack = 4,
}

/// A rank that did not reach its program: the step, its errno, the binding call the kernel
/// refused (`Step::Bind`), and what the binding read back as (`Step::ReadBack`).
pub struct Failed {
    pub step: Step,
    pub error: io::Error,
    pub call: Option<Call>,
    pub read_back: Option<Box<ReadBack>>,
}

/// What a child writes on its report pipe when a step fails: one record, whole (below
/// `PIPE_BUF`, so written at once), as plain data.
#[repr(C)]
#[derive(Clone, Copy)]
struct Report {
    step: libc::c_int,
    errno: libc::c_int,
    /// `Call as c_int + 1`; 0: none.
    call: libc::c_int,
    read_back: ReadBack,
}

const CALLS: [Call; 2] = [Call::SchedSetaffinity, Call::SetMempolicy];

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

/// The stack a rank's child runs on until it execs: the child shares numaplan's memory
/// (`CLONE_VM`) but not its stack. One serves every rank, since numaplan waits while a child
/// uses it. Mapped with a guard page below it, so an overflow faults instead of writing over
/// numaplan's heap.
pub struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

/// The child's frames are a few small records and the binding calls; this leaves ample room.
const CHILD_STACK: usize = 256 * 1024;

impl ChildStack {
    pub fn new() -> io::Result<ChildStack> {
        let page = 4096;
        let len = CHILD_STACK + page;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the lowest page of the mapping just made.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The stack's top (it grows down), 16-byte aligned as the ABI wants.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is page aligned.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made; no child runs on it once `start` has returned.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// What the child is given: it reads it from numaplan's memory, which it shares.
struct ChildArgs<'a> {
    rank: &'a Prepared,
    streams: &'a Streams<'a>,
    parent: libc::pid_t,
    report: RawFd,
}

/// Starts a rank as `posix_spawn` does: `clone(CLONE_VM | CLONE_VFORK)`, so the child shares
/// numaplan's memory instead of copying its page tables (a `fork` of numaplan cost some 70 us
/// more a rank than a shell's, and copy-on-write faults after), and numaplan waits only until
/// the child has exec'd or failed, not for the program to run. The child joins a new process
/// group of its own, dies with numaplan (PR_SET_PDEATHSIG; numaplan's thread must outlive it,
/// so ranks are started from the main thread), takes its streams, applies its binding and
/// execs. Every signal is blocked across the clone so that none runs one of numaplan's
/// handlers in the child, in numaplan's memory. The parent's copies of the streams close on
/// return.
pub fn start(rank: &Prepared, streams: Streams, stack: &mut ChildStack) -> io::Result<Started> {
    let (report, report_w) = pipe()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let args = ChildArgs {
        rank,
        streams: &streams,
        parent,
        report: report_w.as_raw_fd(),
    };
    // SAFETY: the masks are valid sigset_t values on this frame. The child runs only
    // `child_entry` on its own stack, makes async-signal-safe calls on data prepared before
    // (which numaplan, suspended by CLONE_VFORK, does not touch meanwhile), allocates nothing,
    // and ends in execve or _exit.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
        let pid = libc::clone(
            child_entry,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&args as *const ChildArgs).cast_mut().cast(),
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        if pid == -1 {
            return Err(error);
        }
        pid
    };
    Ok(Started {
        pid: pid as u32,
        report,
    })
}

extern "C" fn child_entry(args: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` passes its `ChildArgs`, alive while the child runs (CLONE_VFORK).
    let args = unsafe { &*(args as *const ChildArgs) };
    child(args.rank, args.streams, args.parent, args.report)
}

impl Started {
    /// Waits until the child has exec'd (end of file on its report pipe) or reports the step
    /// that failed.
    pub fn confirm(self) -> Result<u32, Failed> {
        // SAFETY: plain data; all zeroes is a valid (empty) report.
        let mut report: Report = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<Report>();
        let mut got = 0;
        while got < size {
            // SAFETY: reads into the unfilled part of `report`, a plain-data record.
            let n = unsafe {
                libc::read(
                    self.report.as_raw_fd(),
                    (&mut report as *mut Report).cast::<u8>().add(got).cast(),
                    size - got,
                )
            };
            match n {
                0 => break,
                n if n > 0 => got += n as usize,
                _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                _ => {
                    return Err(Failed {
                        step: Step::Setup,
                        error: io::Error::last_os_error(),
                        call: None,
                        read_back: None,
                    });
                }
            }
        }
        if got < size {
            return Ok(self.pid);
        }
        let step = match report.step {
            2 => Step::Bind,
            3 => Step::Exec,
            4 => Step::ReadBack,
            _ => Step::Setup,
        };
        Err(Failed {
            step,
            error: io::Error::from_raw_os_error(report.errno),
            call: usize::try_from(report.call - 1)
                .ok()
                .and_then(|i| CALLS.get(i).copied()),
            read_back: (step == Step::ReadBack).then(|| Box::new(report.read_back)),
        })
    }
}

/// The child between its start and exec.
fn child(rank: &Prepared, streams: &Streams, parent: libc::pid_t, report: RawFd) -> ! {
    let fail = |step: Step, errno: i32, call: Option<Call>, read_back: Option<ReadBack>| -> ! {
        // SAFETY: plain data; all zeroes is a valid report.
        let mut msg: Report = unsafe { std::mem::zeroed() };
        msg.step = step as libc::c_int;
        msg.errno = errno;
        msg.call = call.map_or(0, |c| c as libc::c_int + 1);
        if let Some(r) = read_back {
            msg.read_back = r;
        }
        // SAFETY: write and _exit are async-signal-safe; `msg` is on the stack.
        unsafe {
            libc::write(
                report,
                (&msg as *const Report).cast(),
                std::mem::size_of::<Report>(),
            );
            libc::_exit(127)
        }
    };
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: plain syscalls on descriptors and data `rank` owns.
    unsafe {
        if libc::setpgid(0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0
        {
            fail(Step::Setup, errno(), None, None);
        }
        if libc::getppid() != parent {
            // numaplan died between fork and prctl.
            libc::_exit(128 + libc::SIGKILL);
        }
        // Rust's runtime ignores SIGPIPE; a program starts with it at its default. numaplan's
        // own handlers go too, before signals are unblocked (below), so that a signal before
        // execve does what it would do to the program, not run a handler in numaplan's memory.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        for s in super::signals::FORWARDED {
            libc::signal(s, libc::SIG_DFL);
        }
        if !take_streams(streams) {
            fail(Step::Setup, errno(), None, None);
        }
    }
    if let Err(refused) = rank.bind.apply() {
        let errno = refused.error.raw_os_error().unwrap_or(0);
        fail(Step::Bind, errno, Some(refused.call), None);
    }
    if rank.check == Check::ReadBack
        && let Some(actual) = rank.bind.read_back()
    {
        fail(Step::ReadBack, 0, None, Some(actual));
    }
    // SAFETY: a program starts with no signal blocked. NUL-terminated path, and argv/envp
    // arrays of C strings ending in null, all owned by `rank`.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(
            rank.path.as_ptr(),
            rank.argv_ptrs.as_ptr(),
            rank.envp_ptrs.as_ptr(),
        );
    }
    fail(Step::Exec, errno(), None, None)
}

/// The child's stdin, stdout and stderr made the rank's; `false` (errno set) when one could
/// not be.
fn take_streams(streams: &Streams) -> bool {
    let targets = [
        (streams.stdin.as_raw_fd(), 0),
        (sink_fd(&streams.stdout), 1),
        (sink_fd(&streams.stderr), 2),
    ];
    targets
        .into_iter()
        .filter(|&(fd, _)| fd >= 0)
        .all(|(fd, target)| {
            // SAFETY: plain syscalls on descriptors `streams` owns. dup2 onto itself keeps
            // close-on-exec set: clear it instead.
            unsafe {
                if fd == target {
                    libc::fcntl(fd, libc::F_SETFD, 0) == 0
                } else {
                    libc::dup2(fd, target) == target
                }
            }
        })
}

fn sink_fd(sink: &Sink) -> RawFd {
    match sink {
        Sink::Inherit => -1,
        Sink::Fd(fd) => fd.as_raw_fd(),
    }
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
