//! A YAML document (job spec, topology fixture, plan) that is malformed or of the wrong shape,
//! with the codes and schema of each format.

use crate::diag::codes::*;
use crate::diag::schema_words::words_at;
use crate::diag::suggest::did_you_mean;
use crate::diag::{Diagnostic, SourceMap};
use crate::yaml::{FileError, YamlError, YamlErrorKind};

/// One YAML format as its errors read: what it is called, its codes (malformed, wrong shape, a
/// wrong value) and the schema that documents it.
pub(super) struct YamlCodes {
    what: &'static str,
    syntax: crate::diag::Code,
    shape: crate::diag::Code,
    invalid: crate::diag::Code,
    /// Put before the message of a wrong value.
    invalid_prefix: &'static str,
    /// What to do about a wrong value, where the error says nothing more precise.
    invalid_help: &'static str,
    schema: &'static str,
    /// The schema itself, for the words a key takes.
    generated: fn() -> schemars::Schema,
}

pub(super) const FIXTURE_CODES: YamlCodes = YamlCodes {
    what: "topology fixture",
    syntax: E0301_YAML_SYNTAX,
    shape: E0302_FIXTURE_INVALID,
    invalid: E0302_FIXTURE_INVALID,
    invalid_prefix: "",
    invalid_help: "fix the value, or regenerate the fixture with `numaplan topo --format yaml`",
    schema: "schemas/topology.schema.json",
    generated: || schemars::schema_for!(crate::topology::fixture::FixtureFile),
};

pub(super) const PLAN_CODES: YamlCodes = YamlCodes {
    what: "plan",
    syntax: E0405_PLAN_SYNTAX,
    shape: E0406_PLAN_INVALID,
    invalid: E0406_PLAN_INVALID,
    invalid_prefix: "invalid plan: ",
    invalid_help: "regenerate the plan with the command in its header",
    schema: "schemas/plan.schema.json",
    generated: || schemars::schema_for!(crate::plan_file::PlanFile),
};

pub(super) const SPEC_CODES: YamlCodes = YamlCodes {
    what: "job spec",
    syntax: E0101_SPEC_SYNTAX,
    shape: E0102_SPEC_SHAPE,
    invalid: E0103_SPEC_INVALID,
    invalid_prefix: "",
    invalid_help: "fix the value",
    schema: "schemas/job.schema.json",
    generated: || schemars::schema_for!(crate::spec::raw::JobSpec),
};

/// A file of one of the YAML formats that is malformed, of the wrong shape, or has a wrong
/// value, pointed at where.
pub(super) fn file_error(e: &FileError, codes: YamlCodes) -> Diagnostic {
    match e {
        FileError::Yaml { map, error } => yaml_error(map, error, codes),
        FileError::Invalid {
            map,
            path,
            message,
            help,
        } => {
            let label = match path.is_empty() {
                true => String::new(),
                false => format!("in `{path}`"),
            };
            Diagnostic::error(codes.invalid, format!("{}{message}", codes.invalid_prefix))
                .at(map, map.value(path), label)
                .help(
                    help.clone()
                        .unwrap_or_else(|| codes.invalid_help.to_string()),
                )
        }
    }
}

/// A YAML document that is malformed or of the wrong shape.
fn yaml_error(map: &SourceMap, error: &YamlError, codes: YamlCodes) -> Diagnostic {
    let what = codes.what;
    match error.kind {
        YamlErrorKind::Syntax => Diagnostic::error(
            codes.syntax,
            format!("{what} is not well-formed YAML: {}", error.message),
        )
        .at(map, error.spot, "here")
        .help("fix the YAML syntax here; a truncated file fails at its end"),
        YamlErrorKind::JsonSyntax => Diagnostic::error(
            codes.syntax,
            format!("{what} is not well-formed JSON: {}", error.message),
        )
        .at(map, error.spot, "here")
        .help("fix the JSON here; a truncated file fails at its end"),
        YamlErrorKind::Shape => shape_error(map, error, what, codes),
        YamlErrorKind::TooLarge => Diagnostic::error(
            E0441_TOO_LARGE,
            format!("{what} is too large: {}", error.message),
        )
        .at(map, error.spot, "here")
        .note("numaplan counts what aliases (`*name`) stand for before it expands them")
        .help("write the values out, or reuse fewer, smaller anchors"),
    }
}

/// A well-formed document of the wrong shape: an unknown key or word (with the nearest one), a
/// key given twice, a value of the wrong kind (with the words a key takes), a missing key.
fn shape_error(map: &SourceMap, error: &YamlError, what: &str, codes: YamlCodes) -> Diagnostic {
    let (path, detail) = match error.message.split_once(": ") {
        Some((p, rest)) if !p.contains(' ') => (Some(p), rest),
        _ => (None, error.message.as_str()),
    };
    let within = path.map(|p| format!(" in `{p}`")).unwrap_or_default();
    let spot = path.and_then(|p| map.value(p)).or(error.spot);
    for (marker, noun) in [("unknown field `", "key"), ("unknown variant `", "value")] {
        if let Some(rest) = detail.strip_prefix(marker) {
            let typed = rest.split('`').next().unwrap_or_default();
            let expected: Vec<&str> = rest
                .split('`')
                .skip(1)
                .enumerate()
                .filter(|(i, _)| i % 2 == 1)
                .map(|(_, s)| s)
                .collect();
            let spot = if noun == "key" {
                let key_path = path.map_or(typed.to_string(), |p| format!("{p}.{typed}"));
                map.key(&key_path).or(error.spot)
            } else {
                spot
            };
            let d = Diagnostic::error(codes.shape, format!("unknown {noun} `{typed}`{within}"))
                .at(map, spot, format!("unknown {noun}"))
                .note(expected_one_of(&expected));
            return match did_you_mean(typed, expected.iter().copied()) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d.help(format!("use one of the {noun}s listed above")),
            };
        }
    }
    if let Some(key) = empty_key(detail) {
        // An empty value is no value: the key is where it is missing.
        let key_path = path.map_or(key.to_string(), |p| format!("{p}.{key}"));
        let (what, expected) = detail.split_once("; ").unwrap_or((detail, ""));
        let what = what.replacen(&format!("`{key}:`"), &format!("`{key}:`{within}"), 1);
        let d = Diagnostic::error(codes.shape, what)
            .at(map, map.key(&key_path).or(spot), "empty")
            .help(format!("give `{key}` a value, or remove it"));
        return match expected {
            "" => d,
            e => d.note(e.to_string()),
        };
    }
    if let Some(key) = duplicated_key(detail) {
        // The map records a key's last occurrence: the one to remove or rename.
        let key_path = path.map_or(key.to_string(), |p| format!("{p}.{key}"));
        return Diagnostic::error(codes.shape, format!("`{key}` is given twice{within}"))
            .at(map, map.key(&key_path).or(spot), "again here")
            .help("keep one of them: numaplan does not pick one silently");
    }
    let detail = plain_expectation(detail);
    let d = Diagnostic::error(codes.shape, format!("invalid {what}{within}: {detail}"))
        .at(map, spot, "here");
    let words = match path {
        Some(p) if detail.ends_with("expected a single word") => {
            words_at((codes.generated)().as_value(), p)
        }
        _ => Vec::new(),
    };
    if !words.is_empty() {
        return d
            .note(expected_one_of(&words))
            .help("write one of the words listed above, alone");
    }
    let d = if detail.starts_with("missing field") {
        d.note("a truncated file also ends before its required keys")
    } else {
        d
    };
    d.help(format!("`{}` documents every key", codes.schema))
}

/// The note that lists what a key takes: ``expected one of `a`, `b` ``.
fn expected_one_of<S: AsRef<str>>(words: &[S]) -> String {
    let listed: Vec<String> = words.iter().map(|w| format!("`{}`", w.as_ref())).collect();
    format!("expected one of {}", listed.join(", "))
}

/// serde's expectations in a user's words: `expected u32` is "a whole number", `expected struct
/// CpuOptions` "a mapping of keys".
fn plain_expectation(detail: &str) -> String {
    let Some((head, expected)) = detail.rsplit_once(", expected ") else {
        return detail.to_string();
    };
    // A whole number past the type's range is one, too big (or, below 0, too small).
    let largest = match expected {
        "u8" => Some(u64::from(u8::MAX)),
        "u16" => Some(u64::from(u16::MAX)),
        "u32" => Some(u64::from(u32::MAX)),
        _ => None,
    };
    if let (Some(largest), Some(number)) = (largest, head.strip_prefix("invalid value: integer ")) {
        return match number.trim_matches('`').starts_with('-') {
            true => format!("{number} is below 0: expected a whole number (0 or more)"),
            false => format!("{number} is too big: expected a whole number up to {largest}"),
        };
    }
    let plain = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a map" => "a mapping (`key: value` lines or `{key: value}`)",
        s if s.starts_with("struct ") => "a mapping (`key: value` lines or `{key: value}`)",
        // serde_yaml's words for a mapping or list where a word (an enum's value) belongs.
        "a YAML tag starting with '!'" => "a single word",
        s => s,
    };
    format!("{head}, expected {plain}")
}

/// The key serde reports twice: ``duplicate field `env` `` (a struct's key) or `duplicate entry
/// with key "A"` (a map's).
/// The key of a refusal of an empty value (`an empty \`engine:\` names no engine`).
fn empty_key(detail: &str) -> Option<&str> {
    let key = detail.strip_prefix("an empty `")?.split('`').next()?;
    key.strip_suffix(':').filter(|k| !k.is_empty())
}

fn duplicated_key(detail: &str) -> Option<&str> {
    let key = match detail.strip_prefix("duplicate field `") {
        Some(rest) => rest.split('`').next(),
        None => detail
            .strip_prefix("duplicate entry with key \"")
            .and_then(|rest| rest.split('"').next()),
    };
    key.filter(|k| !k.is_empty())
}

/// A file that is not UTF-8 text, whichever kind of input it was.
pub(super) fn not_utf8(
    message: String,
    path: &std::path::Path,
    at: crate::text::BadByte,
) -> Diagnostic {
    Diagnostic::error(E0105_NOT_UTF8, message)
        .at_position(path.display().to_string(), at.line, at.col)
        .help("save the file as UTF-8 (`iconv -f LATIN1 -t UTF-8`, for one)")
}

/// A numaplan file of another kind than the command takes, and the command that takes it.
pub(super) fn wrong_kind(e: &crate::yaml::WrongKind) -> Diagnostic {
    Diagnostic::error(E0106_WRONG_KIND, e.to_string())
        .in_file(&e.file)
        .help(e.help())
}
