//! The signals `exec` forwards to its ranks: caught into an atomic (the only thing a handler
//! may safely do), taken by the supervision loop, and named as `kill -l` names them.

use std::io;

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
