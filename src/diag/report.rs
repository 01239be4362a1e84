//! Where a command's warnings go: rendered like errors (`warning[W0203]: ...`, or JSON lines) on
//! the stream `main` hands down, standard error. `--quiet` drops them; `--deny-warnings` shows
//! them and makes the command fail before it writes or starts anything; a kind accepted after
//! review (`--allow W0203`, or the plan's `allow_warnings:`) is neither shown nor fatal.

use std::io::Write;

use super::render::{MessageFormat, render};
use super::{Code, Diagnostic, Severity, Warning};

/// What to do with warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningMode {
    Show,
    /// `--quiet`.
    Quiet,
    /// `--deny-warnings`: shown, then fatal.
    Deny,
    /// `--deny-warnings --quiet`: fatal, not shown.
    DenyQuietly,
}

pub struct Reporter<'a> {
    out: &'a mut dyn Write,
    format: MessageFormat,
    mode: WarningMode,
    /// `--allow`: kinds accepted on the command line.
    allow: Vec<Code>,
}

/// `--deny-warnings` and this many warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denied(pub usize);

impl<'a> Reporter<'a> {
    pub fn new(out: &'a mut dyn Write, format: MessageFormat, mode: WarningMode) -> Self {
        Reporter {
            out,
            format,
            mode,
            allow: Vec::new(),
        }
    }

    /// The warning kinds `--allow` accepts.
    pub fn allowing(mut self, allow: Vec<Code>) -> Self {
        self.allow = allow;
        self
    }

    /// A reporter that shows nothing (for library callers and tests).
    pub fn silent(out: &'a mut dyn Write) -> Self {
        Reporter::new(out, MessageFormat::Human, WarningMode::Quiet)
    }

    /// Shows the warnings of a plan made from (or read from) `file`, but those of a kind
    /// `allowed` (the plan's `allow_warnings:`) or `--allow` accepts; `Denied` under
    /// `--deny-warnings` when any is shown.
    pub fn plan_warnings(
        &mut self,
        file: &str,
        warnings: &[Warning],
        allowed: &[Code],
    ) -> Result<(), Denied> {
        self.plan_warnings_as(Voice::Speaks, file, warnings, allowed)
    }

    /// As `plan_warnings`, but a process that does not speak for its node (`bind` on a local
    /// rank but 0: every rank would repeat them) shows nothing, and still fails when denied.
    pub fn plan_warnings_as(
        &mut self,
        voice: Voice,
        file: &str,
        warnings: &[Warning],
        allowed: &[Code],
    ) -> Result<(), Denied> {
        let warnings: Vec<&Warning> = warnings
            .iter()
            .filter(|w| !allowed.contains(&w.code) && !self.allow.contains(&w.code))
            .collect();
        if voice == Voice::Speaks && matches!(self.mode, WarningMode::Show | WarningMode::Deny) {
            for w in &warnings {
                let d = Diagnostic {
                    severity: Severity::Warning,
                    ..Diagnostic::error(w.code, w.message.clone()).in_file(file)
                };
                // A closed standard error is no reason to fail the command.
                let _ = self.out.write_all(render(&d, self.format).as_bytes());
            }
        }
        match (self.mode, warnings.len()) {
            (WarningMode::Deny | WarningMode::DenyQuietly, n) if n > 0 => Err(Denied(n)),
            _ => Ok(()),
        }
    }

    /// A line the user asked for (`bind --verbose`), on the same stream.
    pub fn info(&mut self, line: &str) {
        // One write: lines of ranks started together must not run into each other.
        let _ = self.out.write_all(format!("{line}\n").as_bytes());
    }
}

/// Whether a process prints its plan's warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Voice {
    Speaks,
    Silent,
}
