//! `--set KEY=VALUE`: overrides applied to a parsed document, each error about the override
//! that does not fit, with positions in the overrides' own source (`--set`, one line each).

use serde::de::DeserializeOwned;

use super::parse::{YamlError, YamlErrorKind, parse};
use crate::diag::{Positions, SourceMap, Spot};

/// One `--set KEY=VALUE` of the command line: a dotted key (`cpu.policy`) and a YAML value
/// (`exclusive`, `4`, `[0, 1]`); or a flag that stands for one (`--nproc-per-node 4` is
/// `ranks_per_node=4`), so that an error shows what the user typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub key: String,
    pub value: String,
    pub flag: Option<&'static str>,
    /// The flag's value as typed, where it is not `value` (`--nproc-per-node gpu` is
    /// `gpus=all`).
    pub typed_value: Option<&'static str>,
}

impl Override {
    /// `--set KEY=VALUE`.
    pub fn set(key: impl Into<String>, value: impl Into<String>) -> Override {
        Override {
            key: key.into(),
            value: value.into(),
            flag: None,
            typed_value: None,
        }
    }

    /// `KEY=VALUE`, as `--set` takes it.
    pub fn text(&self) -> String {
        format!("{}={}", self.key, self.value)
    }

    /// The argument as the user typed it: `--set KEY=VALUE`, or the flag and its value.
    pub fn typed(&self) -> String {
        match self.flag {
            Some(flag) => format!("{flag} {}", self.typed_value.unwrap_or(&self.value)),
            None => format!("--set {}", self.text()),
        }
    }

    /// Where the key (or the flag) starts in `typed`, 1-based, and its width.
    fn key_spot(&self) -> (usize, usize) {
        match self.flag {
            Some(flag) => (1, flag.chars().count()),
            None => ("--set ".len() + 1, self.key.chars().count()),
        }
    }
}

/// Where an error of `parse_with_overrides` is: in the file, or in one of the overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Culprit {
    File,
    Override,
}

/// `parse`, then each override applied in order to the document; a value that does not fit
/// (unknown key, wrong type) is an error about that override, with positions in `overrides`'
/// own map (file `--set`, one line per override). Returns the value, the file's map and the
/// overrides' map.
#[allow(clippy::type_complexity)]
pub fn parse_with_overrides<T: DeserializeOwned>(
    file: &str,
    text: &str,
    overrides: &[Override],
) -> Result<(T, SourceMap, SourceMap), (YamlError, Box<SourceMap>, Culprit)> {
    // An empty spec (`exec` without one) is an empty mapping.
    let text_or_empty = if text.trim().is_empty() { "{}" } else { text };
    let (base, map) = parse::<T>(file, text_or_empty).map_err(|(e, m)| (e, m, Culprit::File))?;
    let sets = overrides_map(overrides, &[]);
    if overrides.is_empty() {
        return Ok((base, map, sets));
    }
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(text_or_empty).expect("invariant: `parse` accepted the text");
    let mut value = None;
    let mut keys = Vec::new();
    for (i, o) in overrides.iter().enumerate() {
        let fail = |(kind, message)| {
            let spot = sets.value(&o.key);
            (
                YamlError {
                    kind,
                    message,
                    spot,
                },
                Box::new(sets.clone()),
                Culprit::Override,
            )
        };
        keys.push(apply_override(&mut doc, o).map_err(fail)?);
        // Each override is checked as it is applied, so that an error names the first that
        // does not fit.
        let t = match serde_yaml::from_value::<T>(doc.clone()) {
            Ok(t) => t,
            Err(e) => as_in_a_file(&mut doc, o).ok_or_else(|| fail(override_shape_error(o, &e)))?,
        };
        if i + 1 == overrides.len() {
            value = Some(t);
        }
    }
    Ok((
        value.expect("invariant: the last override was applied"),
        map,
        overrides_map(overrides, &keys),
    ))
}

/// The overrides as a source of their own (`command line`, one argument per line, as typed),
/// for positions in errors; each also under its key with list entries by index (`keys`, where
/// known: `groups.trainers.cpu` is `groups[0].cpu` too).
fn overrides_map(overrides: &[Override], keys: &[String]) -> SourceMap {
    let mut positions = Positions::default();
    for (i, o) in overrides.iter().enumerate() {
        let line = i + 1;
        let (key_col, key_width) = o.key_spot();
        let key_spot = Spot {
            line,
            col: key_col,
            width: key_width,
        };
        positions.record_key(o.key.clone(), key_spot);
        let canonical = keys.get(i).filter(|k| **k != o.key);
        if let Some(k) = canonical {
            positions.record_key(k.clone(), key_spot);
        }
        let value_width = match (o.flag, o.typed_value) {
            (Some(_), Some(typed)) => typed.chars().count(),
            _ => o.value.chars().count(),
        };
        let value_spot = Spot {
            line,
            col: o.typed().chars().count() - value_width + 1,
            width: value_width.max(1),
        };
        positions.record_value(o.key.clone(), value_spot);
        if let Some(k) = canonical {
            positions.record_value(k.clone(), value_spot);
        }
    }
    let text: Vec<String> = overrides.iter().map(Override::typed).collect();
    SourceMap::new("command line", text.join("\n"), positions)
}

/// Parses the override's value as YAML and puts it at its key.
/// Returns the key with list entries by index (`groups[1].cpu`).
fn apply_override(
    doc: &mut serde_yaml::Value,
    o: &Override,
) -> Result<String, (YamlErrorKind, String)> {
    let v: serde_yaml::Value = serde_yaml::from_str(&o.value).map_err(|e| {
        (
            YamlErrorKind::Syntax,
            format!("`{}` is not a YAML value: {e}", o.value),
        )
    })?;
    set_path(doc, &o.key, v).map_err(|why| (YamlErrorKind::Shape, format!("{}: {why}", o.key)))
}

/// The document read as a file's text is read, where read as a value it did not fit: in a
/// file, a number or a boolean where a string is expected (`env: {OMP_NUM_THREADS: 4}`,
/// `command: [true]`) is its text, and `--set env.X=4` must mean the same. A scalar override
/// is tried first as the text it was typed as (`0x10` stays `0x10`, not 16). Leaves `doc` as
/// read when it fits.
fn as_in_a_file<T: DeserializeOwned>(doc: &mut serde_yaml::Value, o: &Override) -> Option<T> {
    let reread = |doc: &serde_yaml::Value| {
        let text = serde_yaml::to_string(doc).ok()?;
        serde_yaml::from_str::<T>(&text).ok()
    };
    let typed: Option<serde_yaml::Value> = serde_yaml::from_str(&o.value).ok();
    if let Some(serde_yaml::Value::Number(_) | serde_yaml::Value::Bool(_)) = typed {
        let mut text = doc.clone();
        set_path(
            &mut text,
            &o.key,
            serde_yaml::Value::String(o.value.clone()),
        )
        .ok()?;
        if let Some(t) = reread(&text) {
            *doc = text;
            return Some(t);
        }
    }
    reread(doc)
}

/// Why the document no longer fits after the override: an unknown key is about the mapping
/// that holds it, anything else about the value itself.
fn override_shape_error(o: &Override, e: &serde_yaml::Error) -> (YamlErrorKind, String) {
    let message = e.to_string();
    let path = match message.starts_with("unknown field") {
        true => o
            .key
            .rsplit_once('.')
            .map_or(String::new(), |(p, _)| p.to_string()),
        false => o.key.clone(),
    };
    let message = match path.is_empty() {
        true => message,
        false => format!("{path}: {message}"),
    };
    (YamlErrorKind::Shape, message)
}

/// Puts `value` at the dotted `key` of `doc`, creating mappings on the way. A part
/// `groups[1]` is the second entry of the list `groups`, and a part `trainers` inside a list
/// is its entry named so (`groups.trainers.ranks_per_node`). Returns the key with every entry
/// by its index (`groups[1].ranks_per_node`), as errors about the document name it; `Err`:
/// why the key does not fit the document.
fn set_path(
    doc: &mut serde_yaml::Value,
    key: &str,
    value: serde_yaml::Value,
) -> Result<String, String> {
    let mut at = doc;
    let mut canonical = String::new();
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let (name, index) = indexed(part)?;
        if let serde_yaml::Value::Sequence(list) = at {
            let (j, entry) = named_entry(list, name, &canonical)?;
            canonical.push_str(&format!("[{j}]"));
            at = entry;
        } else {
            if at.is_null() {
                *at = serde_yaml::Value::Mapping(serde_yaml::Mapping::new());
            }
            let serde_yaml::Value::Mapping(m) = at else {
                return Err(format!(
                    "`{canonical}` is not a mapping, so it has no key `{name}`"
                ));
            };
            if !canonical.is_empty() {
                canonical.push('.');
            }
            canonical.push_str(name);
            let k = serde_yaml::Value::String(name.to_string());
            if i + 1 == parts.len() && index.is_none() {
                m.insert(k, value);
                return Ok(canonical);
            }
            at = m.entry(k).or_insert(serde_yaml::Value::Null);
        }
        if let Some(j) = index {
            let serde_yaml::Value::Sequence(list) = at else {
                return Err(format!(
                    "`{canonical}` is not a list, so it has no entry [{j}]"
                ));
            };
            let count = list.len();
            at = list.get_mut(j).ok_or_else(|| {
                format!("`{canonical}` has {count} entries, so it has no entry [{j}]")
            })?;
            canonical.push_str(&format!("[{j}]"));
        }
        if i + 1 == parts.len() {
            *at = value;
            return Ok(canonical);
        }
    }
    Ok(canonical)
}

/// A part of a key: `groups[1]` is `("groups", Some(1))`, `cpu` is `("cpu", None)`.
fn indexed(part: &str) -> Result<(&str, Option<usize>), String> {
    let Some(open) = part.find('[') else {
        return Ok((part, None));
    };
    let (name, rest) = part.split_at(open);
    rest.strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse().ok())
        .map(|j| (name, Some(j)))
        .ok_or_else(|| {
            format!("`{part}` is not a key: an entry of a list is `{name}[N]`, N from 0")
        })
}

/// The entry of `list` (at `path`) whose `name:` is `name`, and its index.
fn named_entry<'a>(
    list: &'a mut [serde_yaml::Value],
    name: &str,
    path: &str,
) -> Result<(usize, &'a mut serde_yaml::Value), String> {
    let name_of =
        |v: &serde_yaml::Value| v.get("name").and_then(|n| n.as_str()).map(str::to_string);
    let names: Vec<String> = list.iter().filter_map(name_of).collect();
    match list
        .iter()
        .position(|v| name_of(v).as_deref() == Some(name))
    {
        Some(j) => Ok((j, &mut list[j])),
        None => Err(format!(
            "`{path}` has no entry named `{name}` (its names: {}); an entry is also `{path}[N]`",
            match names.is_empty() {
                true => "none".to_string(),
                false => names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        )),
    }
}
