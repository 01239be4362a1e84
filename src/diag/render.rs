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
            (Some(spot), Some((text, col))) => {
                let num = spot.line.to_string();
                gutter = num.len() + 1;
                let pad = " ".repeat(num.len());
                let _ = writeln!(out, "{pad}--> {}:{}:{}", loc.file, spot.line, spot.col);
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{num} | {text}");
                let indent = " ".repeat(col.saturating_sub(1));
                let carets = "^".repeat(spot.width.clamp(1, WIDTH));
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

/// The most characters of a source line a snippet shows.
const WIDTH: usize = 100;

/// The part of a long line around column `col` (1-based), marked `...` where cut, and the
/// column in it; a short line is shown whole.
pub(super) fn window(text: &str, col: usize) -> (String, usize) {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= WIDTH {
        return (text.to_string(), col);
    }
    let start = col.saturating_sub(1 + WIDTH / 2).min(chars.len() - WIDTH);
    let end = start + WIDTH;
    let mut shown: String = chars[start..end].iter().collect();
    let mut col = col - start;
    if start > 0 {
        shown.insert_str(0, "...");
        col += 3;
    }
    if end < chars.len() {
        shown.push_str("...");
    }
    (shown, col)
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

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn long_lines_are_shown_around_the_column() {
        assert_eq!(window("short", 3), ("short".to_string(), 3));
        let line: String = (0..300)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let (shown, col) = window(&line, 200);
        assert!(
            shown.starts_with("...") && shown.ends_with("..."),
            "{shown}"
        );
        assert_eq!(shown.chars().nth(col - 1), line.chars().nth(199));
        let (start, col) = window(&line, 2);
        assert!(!start.starts_with("...") && start.ends_with("..."));
        assert_eq!(col, 2);
        let (end, col) = window(&line, 300);
        assert!(end.starts_with("...") && !end.ends_with("..."));
        assert_eq!(end.chars().nth(col - 1), line.chars().last());
    }
}
