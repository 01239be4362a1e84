//! Copies a rank's stdout or stderr to numaplan's, one whole line at a time with the rank's
//! prefix (`[3] `), so lines of different ranks never mix; a last line without a newline gets
//! one. With `--tee` the unprefixed bytes also go to the rank's log file.

use std::io::{BufRead as _, BufReader, Read, Write as _};
use std::thread::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

impl Stream {
    pub fn ext(self) -> &'static str {
        match self {
            Stream::Out => "out",
            Stream::Err => "err",
        }
    }
}

pub fn start(
    rank: u32,
    stream: Stream,
    pipe: Box<dyn Read + Send>,
    mut copy: Option<std::fs::File>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let prefix = format!("[{rank}] ");
        let mut reader = BufReader::with_capacity(1 << 16, pipe);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(f) = copy.as_mut() {
                let _ = f.write_all(&line);
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            out.clear();
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(&line);
            // One write under the lock: a whole line, never interleaved with another rank's.
            let _ = match stream {
                Stream::Out => std::io::stdout().lock().write_all(&out),
                Stream::Err => std::io::stderr().lock().write_all(&out),
            };
        }
    })
}
