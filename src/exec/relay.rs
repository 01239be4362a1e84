//! Copies a rank's stdout or stderr to numaplan's, one whole line at a time with the rank's
//! prefix (`[3] `), so lines of different ranks never mix; a last line without a newline gets
//! one. With `--tee` the unprefixed bytes also go to the rank's log file.
//!
//! A relay ends at end of file, or, once every rank has exited (`Stop`), as soon as no output
//! has been waiting for `DRAIN`: a process a rank started outside its process group (a daemon,
//! `setsid`) may hold the pipe open for ever, and numaplan must not wait for it.

use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a relay waits for more output once every rank has exited.
const DRAIN: Duration = Duration::from_millis(20);

/// How long a relay sleeps in `poll` between looks at `Stop` while ranks run.
const LOOK: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

impl Stream {
    /// `stdout`, `stderr`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Out => "stdout",
            Stream::Err => "stderr",
        }
    }

    pub fn ext(self) -> &'static str {
        match self {
            Stream::Out => "out",
            Stream::Err => "err",
        }
    }
}

/// Set once every rank has exited: relays then drain what is waiting and end.
#[derive(Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn now(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How a relay ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// End of file: every writer closed the pipe.
    Closed,
    /// Stopped after the ranks exited, with the pipe still open (held by a leftover process).
    HeldOpen,
}

/// A running relay: which rank's stream, and the thread.
pub struct Relay {
    pub rank: u32,
    pub stream: Stream,
    thread: JoinHandle<Ended>,
}

impl Relay {
    pub fn join(self) -> Ended {
        self.thread.join().unwrap_or(Ended::Closed)
    }
}

/// A rank's output stream to relay: the pipe, and the log file that gets a copy (`--tee`).
pub struct Output {
    pub rank: u32,
    pub stream: Stream,
    pub pipe: OwnedFd,
    pub copy: Option<std::fs::File>,
}

pub fn start(output: Output, stop: Stop) -> Relay {
    let Output {
        rank,
        stream,
        pipe,
        mut copy,
    } = output;
    let thread = std::thread::spawn(move || {
        let prefix = format!("[{rank}] ");
        let mut pipe = std::fs::File::from(pipe);
        let mut chunk = vec![0u8; 1 << 16];
        let mut pending: Vec<u8> = Vec::new();
        let ended = loop {
            if !output_waiting(&pipe, &stop) {
                break Ended::HeldOpen;
            }
            let n = match pipe.read(&mut chunk) {
                Ok(0) => break Ended::Closed,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break Ended::Closed,
            };
            if let Some(f) = copy.as_mut() {
                let _ = f.write_all(&chunk[..n]);
            }
            pending.extend_from_slice(&chunk[..n]);
            let whole = pending
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            write_lines(stream, &prefix, &pending[..whole]);
            pending.drain(..whole);
        };
        if !pending.is_empty() {
            pending.push(b'\n');
            write_lines(stream, &prefix, &pending);
        }
        ended
    });
    Relay {
        rank,
        stream,
        thread,
    }
}

/// Waits until the pipe has output (or is closed): `false` once the ranks have exited and
/// nothing came for `DRAIN`.
fn output_waiting(pipe: &std::fs::File, stop: &Stop) -> bool {
    loop {
        let stopping = stop.is_set();
        let wait = if stopping { DRAIN } else { LOOK };
        match super::affinity::poll_readable(pipe.as_raw_fd(), wait) {
            Ok(true) => return true,
            Ok(false) if stopping => return false,
            Ok(false) => {}
            // Let `read` report what is wrong.
            Err(e) if e.kind() != std::io::ErrorKind::Interrupted => return true,
            Err(_) => {}
        }
    }
}

/// Writes whole lines, each with the prefix, in one write under the lock: a rank's line is never
/// interleaved with another rank's.
fn write_lines(stream: Stream, prefix: &str, lines: &[u8]) {
    if lines.is_empty() {
        return;
    }
    let mut out = Vec::with_capacity(lines.len() + prefix.len() * 4);
    for line in lines.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(line);
    }
    let _ = match stream {
        Stream::Out => std::io::stdout().lock().write_all(&out),
        Stream::Err => std::io::stderr().lock().write_all(&out),
    };
}
