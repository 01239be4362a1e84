//! `numaplan codes`: every error and warning code with its explanation, or one code's.

use std::io::Write;

use super::write::{emit, json};
use crate::cli::ReportFormat;
use crate::diag::codes;
use crate::error::Error;

pub(super) fn codes_cmd(
    code: Option<&str>,
    format: ReportFormat,
    stdout: &mut dyn Write,
) -> Result<(), Error> {
    let chosen: Vec<(codes::Code, &str)> = match code {
        Some(c) => vec![codes::find(c).ok_or_else(|| Error::UnknownCode(c.to_string()))?],
        None => codes::ALL.to_vec(),
    };
    let text = match (format, code) {
        (ReportFormat::Json, _) => json(&CodesReport {
            numaplan_codes: 1,
            codes: chosen
                .iter()
                .map(|(c, text)| CodeEntry {
                    code: c.0.to_string(),
                    summary: summary(text),
                    explanation: text.split_whitespace().collect::<Vec<_>>().join(" "),
                    formerly: codes::formerly(*c).map(String::from),
                })
                .collect(),
        }),
        (ReportFormat::Text, Some(_)) => {
            let (c, text) = chosen[0];
            match codes::formerly(c) {
                Some(old) => format!("{}: {text}\n(formerly part of {old})\n", c.0),
                None => format!("{}: {text}\n", c.0),
            }
        }
        // One line per code: its first sentence, with the text's line breaks folded.
        (ReportFormat::Text, None) => chosen
            .iter()
            .map(|(c, text)| format!("{c}  {}\n", summary(text)))
            .collect(),
    };
    emit(stdout, None, &text)
}

/// A code's explanation's first sentence, line breaks folded.
fn summary(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = text.split(". ").next().unwrap_or(&text);
    first.trim_end_matches('.').to_string()
}

/// `codes --format json` (`"numaplan_codes": 1`, schemas/codes.schema.json).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct CodesReport {
    numaplan_codes: u32,
    codes: Vec<CodeEntry>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct CodeEntry {
    /// `E0302`, or `W0203` for a kind of plan warning.
    code: String,
    /// The explanation's first sentence (what `numaplan codes` lists).
    summary: String,
    /// The whole explanation (what `numaplan codes CODE` prints), with the exit code where it
    /// is not 1.
    explanation: String,
    /// The code that covered this problem before it had a code of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    formerly: Option<String>,
}
