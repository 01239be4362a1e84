//! Renders a `Diagnostic` as text (rustc's shape) or as one JSON object per line.

use std::fmt::Write as _;

use super::{Diagnostic, Severity};

/// How diagnostics are shown (`--message-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

pub fn render(d: &Diagnostic, format: MessageFormat) -> String {
    match format {
        MessageFormat::Human => human(d),
        MessageFormat::Json => json(d),
    }
}

fn severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn human(d: &Diagnostic) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}[{}]: {}", severity(d), d.code, d.message);
    let mut gutter = 1;
    if let Some(loc) = &d.location {
        match (loc.spot, &loc.line_text) {
            (Some(spot), Some(text)) => {
                let num = spot.line.to_string();
                gutter = num.len() + 1;
                let pad = " ".repeat(num.len());
                let _ = writeln!(out, "{pad}--> {}:{}:{}", loc.file, spot.line, spot.col);
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{num} | {text}");
                let indent = " ".repeat(spot.col.saturating_sub(1));
                let carets = "^".repeat(spot.width.max(1));
                let label = if loc.label.is_empty() {
                    String::new()
                } else {
                    format!(" {}", loc.label)
                };
                let _ = writeln!(out, "{pad} | {indent}{carets}{label}");
                if !d.notes.is_empty() || d.help.is_some() {
                    let _ = writeln!(out, "{pad} |");
                }
            }
            (Some(spot), None) => {
                let _ = writeln!(out, " --> {}:{}:{}", loc.file, spot.line, spot.col);
            }
            (None, _) => {
                let _ = writeln!(out, " --> {}", loc.file);
            }
        }
    }
    let pad = " ".repeat(gutter);
    for note in &d.notes {
        let _ = writeln!(out, "{pad}= note: {note}");
    }
    if let Some(help) = &d.help {
        let _ = writeln!(out, "{pad}= help: {help}");
    }
    out
}

fn json(d: &Diagnostic) -> String {
    let loc = d.location.as_ref();
    let value = serde_json::json!({
        "severity": severity(d),
        "code": d.code.0,
        "message": d.message,
        "file": loc.map(|l| l.file.clone()),
        "line": loc.and_then(|l| l.spot).map(|s| s.line),
        "column": loc.and_then(|l| l.spot).map(|s| s.col),
        "label": loc.map(|l| l.label.clone()).filter(|l| !l.is_empty()),
        "notes": d.notes,
        "help": d.help,
    });
    format!("{value}\n")
}
