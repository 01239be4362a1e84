//! Where a command's data goes: standard output, or a file written whole (`-o`), and the
//! reports' JSON form.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::output::{FileMode, write_atomic};

/// A report as pretty JSON with a final newline.
pub(crate) fn json(report: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(report).expect("invariant: reports serialize") + "\n"
}

pub(crate) fn emit(stdout: &mut dyn Write, output: Option<&Path>, text: &str) -> Result<(), Error> {
    emit_as(stdout, output, text, FileMode::Data)
}

pub(super) fn emit_as(
    stdout: &mut dyn Write,
    output: Option<&Path>,
    text: &str,
    mode: FileMode,
) -> Result<(), Error> {
    // `-o -` is standard output, as for most command-line tools.
    match output.filter(|path| *path != Path::new("-")) {
        Some(path) => write_atomic(path, text.as_bytes(), mode).map_err(|source| Error::Output {
            path: PathBuf::from(path),
            source,
        }),
        None => stdout.write_all(text.as_bytes()).map_err(Error::Stdout),
    }
}
