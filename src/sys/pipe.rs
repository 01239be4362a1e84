//! Pipes and polling: the pipes between numaplan and its ranks, waiting for one to have data,
//! and noticing that the reader of numaplan's own output has gone.

use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};

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
