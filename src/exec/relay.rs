//! Copies a rank's stdout or stderr to numaplan's, one whole line at a time with the rank's
//! prefix (`[3] `), so lines of different ranks never mix; a last line without a newline gets
//! one. With `--tee` the unprefixed bytes also go to the rank's log file.
//!
//! One thread relays every rank's pipes, polling them together. A pipe ends at end of file, or,
//! once every rank has exited (`Stop`), as soon as no output has been waiting for `DRAIN`: a
//! process a rank started outside its process group (a daemon, `setsid`) may hold the pipe
//! open for ever, and numaplan must not wait for it.

use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sys::pipe;

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

/// A rank's output stream to relay: the pipe, and the log file that gets a copy (`--tee`).
pub struct Output {
    pub rank: u32,
    pub stream: Stream,
    pub pipe: OwnedFd,
    pub copy: Option<std::fs::File>,
}

/// The relay: one thread for every rank's pipes (`poll`), returning the streams it stopped
/// relaying while a leftover process still held them open.
/// The relay thread; none when no rank's output is relayed (`--no-prefix`), which spares a
/// thread's start and end on every short job.
pub struct Relays(Option<JoinHandle<Vec<(u32, Stream)>>>);

impl Relays {
    pub fn join(self) -> Vec<(u32, Stream)> {
        self.0
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// A pipe being relayed, with its prefix and the part of a line not yet written.
struct Relayed {
    rank: u32,
    stream: Stream,
    pipe: std::fs::File,
    copy: Option<std::fs::File>,
    prefix: String,
    pending: Vec<u8>,
}

impl Relayed {
    /// Copies what the pipe has; `false` at end of file.
    fn take(&mut self, chunk: &mut [u8]) -> bool {
        let n = loop {
            match self.pipe.read(chunk) {
                Ok(0) => return false,
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        };
        if let Some(f) = self.copy.as_mut() {
            let _ = f.write_all(&chunk[..n]);
        }
        self.pending.extend_from_slice(&chunk[..n]);
        let whole = self
            .pending
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        write_lines(self.stream, &self.prefix, &self.pending[..whole]);
        self.pending.drain(..whole);
        true
    }

    /// Writes a last line without a newline, with one.
    fn finish(mut self) {
        if !self.pending.is_empty() {
            self.pending.push(b'\n');
            write_lines(self.stream, &self.prefix, &self.pending);
        }
    }
}

/// Starts the relay thread: each pipe is relayed until end of file or, once `stop` is set,
/// until none of the pipes still open has had output for `DRAIN`.
pub fn start(outputs: Vec<Output>, stop: Stop) -> Relays {
    if outputs.is_empty() {
        return Relays(None);
    }
    Relays(Some(std::thread::spawn(move || {
        let mut open: Vec<Relayed> = outputs
            .into_iter()
            .map(|o| Relayed {
                rank: o.rank,
                stream: o.stream,
                pipe: o.pipe.into(),
                copy: o.copy,
                prefix: format!("[{}] ", o.rank),
                pending: Vec::new(),
            })
            .collect();
        let mut chunk = vec![0u8; 1 << 16];
        while !open.is_empty() {
            let stopping = stop.is_set();
            let fds: Vec<_> = open.iter().map(|r| r.pipe.as_raw_fd()).collect();
            let ready = match pipe::poll_readable(&fds, if stopping { DRAIN } else { LOOK }) {
                Ok(ready) => ready,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // Let `read` report what is wrong.
                Err(_) => vec![true; fds.len()],
            };
            if stopping && !ready.contains(&true) {
                break;
            }
            let mut still = Vec::with_capacity(open.len());
            for (mut r, ready) in open.into_iter().zip(ready) {
                if !ready || r.take(&mut chunk) {
                    still.push(r);
                } else {
                    r.finish();
                }
            }
            open = still;
        }
        open.into_iter()
            .map(|r| {
                let held = (r.rank, r.stream);
                r.finish();
                held
            })
            .collect()
    })))
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
