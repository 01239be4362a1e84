//! Diagnostics: the one type every error becomes before it is shown to the user.
//!
//! Shape (rustc's): `error[CODE]: what is wrong`, then `--> file:line:col` and the offending line
//! with a label under the value, then `= note:` lines with facts and one `= help:` line with a fix.

pub mod codes;
pub mod render;
pub mod report;
pub mod schema_words;
pub mod source;
pub mod suggest;

pub use codes::Code;
pub use source::{Positions, SourceMap, Spot};

/// One warning of a plan (or of running it here): its kind's code (`numaplan codes W0203`) and
/// what it says. Warnings do not stop anything; `--deny-warnings` makes them fatal and
/// `--allow CODE` accepts a kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub code: Code,
    pub message: String,
}

impl Warning {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Warning {
            code,
            message: message.into(),
        }
    }

    /// The warning as a list shows it: `[W0203] node 0 has 10 of 20 CPUs allowed`, with
    /// `(allowed)` when its code is among `allowed`.
    pub fn listed(&self, allowed: &[Code]) -> String {
        let mark = if allowed.contains(&self.code) {
            " (allowed)"
        } else {
            ""
        };
        format!("[{}] {}{mark}", self.code, self.message)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// Where a diagnostic points: a file, and where known a position with the text of that line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub spot: Option<Spot>,
    /// The part of the source line at `spot` that the snippet shows (a long line is cut around
    /// the spot, so that a diagnostic never holds a whole long line), and the spot's column in
    /// it.
    pub line_text: Option<(String, usize)>,
    /// What the caret line says about the value.
    pub label: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub location: Option<Location>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            location: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// A usage error from clap's rendered text (`error: ...`, the usage, a tip): its first
    /// line is the message, its `tip:` lines the help, the rest notes.
    pub fn usage(clap_text: &str) -> Self {
        let mut lines = clap_text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("invalid command line");
        let mut d = Diagnostic::error(
            codes::E0423_USAGE,
            first.strip_prefix("error: ").unwrap_or(first),
        );
        for line in lines {
            match line.strip_prefix("tip: ") {
                Some(tip) => d.help = Some(tip.to_string()),
                None => d.notes.push(line.to_string()),
            }
        }
        d.help
            .get_or_insert_with(|| "`numaplan --help` shows the usage".to_string());
        d
    }

    /// Points at a file without a position.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.location = Some(Location {
            file: file.into(),
            spot: None,
            line_text: None,
            label: String::new(),
        });
        self
    }

    /// Points at a position of a file whose text is not at hand (shown without a snippet).
    pub fn at_position(mut self, file: impl Into<String>, line: usize, col: usize) -> Self {
        self.location = Some(Location {
            file: file.into(),
            spot: Some(Spot {
                line,
                col,
                width: 1,
            }),
            line_text: None,
            label: String::new(),
        });
        self
    }

    /// Points at a position of a file whose text `map` holds.
    pub fn at(mut self, map: &SourceMap, spot: Option<Spot>, label: impl Into<String>) -> Self {
        let spot = spot.map(|s| map.clamp(s));
        self.location = Some(Location {
            file: map.file().to_string(),
            spot,
            line_text: spot.and_then(|s| Some(render::window(&map.line_text(s.line)?, s.col))),
            label: label.into(),
        });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}
