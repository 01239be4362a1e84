//! How a rank's process ended, in words and as the exit status a shell would give.

use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;

use crate::sys::signals;

/// `0`, `3`, `SIGKILL`: how a process ended, in a table cell.
pub fn short_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => signals::signal_name(s),
        _ => "?".into(),
    }
}

/// `exited with status 3`, `was killed by SIGKILL`.
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by {}", signals::signal_name(s)),
        _ => "ended".into(),
    }
}

/// The shell's convention: the status, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
