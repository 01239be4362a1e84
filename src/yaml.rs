//! The YAML edge: the only module that knows serde_yaml (archived upstream, so kept where it can
//! be swapped) and yaml-rust2 (used for positions).
//!
//! `parse` deserializes a document and returns a `SourceMap` of every key and value; `emit`
//! serializes one.

use serde::Serialize;
use serde::de::DeserializeOwned;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use crate::diag::{Positions, SourceMap, Spot};

/// A document that could not be read into the expected type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct YamlError {
    pub kind: YamlErrorKind,
    /// The message without its position.
    pub message: String,
    pub spot: Option<Spot>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YamlErrorKind {
    /// Not well-formed YAML (or truncated).
    Syntax,
    /// Not well-formed JSON: a text read as JSON (it starts with `{`) that breaks off or has
    /// trailing characters.
    JsonSyntax,
    /// Well-formed, but not of the expected shape (unknown key, wrong type, missing key).
    Shape,
}

/// Deserializes `text`; its `SourceMap` finds the positions of its keys and values (a second
/// parse, with yaml-rust2) only when an error asks for one.
///
/// A text that starts with `{` is read as JSON first (serde_json: JSON's escapes, JSON-shaped
/// errors); a YAML flow mapping that is not JSON (`{gpus: none}`) is still read as YAML.
pub fn parse<T: DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<(T, SourceMap), (YamlError, Box<SourceMap>)> {
    let map = SourceMap::lazy(file, text, positions);
    if let Some(line) = second_document(text) {
        let error = YamlError {
            kind: YamlErrorKind::Syntax,
            message: "a second YAML document starts here, and a file holds one".into(),
            spot: Some(Spot {
                line,
                col: 1,
                width: 3,
            }),
        };
        return Err((error, Box::new(map)));
    }
    if let Some(error) = too_deep(text) {
        return Err((error, Box::new(map)));
    }
    if text.trim_start().starts_with('{') {
        match serde_json::from_str::<T>(text) {
            Ok(value) => return Ok((value, map)),
            // Well-formed JSON of the wrong shape, or JSON that breaks off: said as JSON.
            Err(e)
                if !e.is_syntax() || serde_yaml::from_str::<serde_yaml::Value>(text).is_err() =>
            {
                return Err((json_error(&e), Box::new(map)));
            }
            Err(_) => {}
        }
    }
    match serde_yaml::from_str::<T>(text) {
        Ok(value) => Ok((value, map)),
        // Not well-formed YAML is said as yaml-rust2 says it, with its position; otherwise the
        // document has the wrong shape.
        Err(e) => match syntax_error(text) {
            Some(error) => Err((error, Box::new(map))),
            None => Err((shape_error(&e), Box::new(map))),
        },
    }
}

/// The line where a second document starts (`---` after content, or content after `...`), found
/// by scanning lines before any parser runs, so that a long or deeply nested second document
/// costs nothing.
fn second_document(text: &str) -> Option<usize> {
    let mut content = false;
    let mut ended = false;
    for (i, line) in text.lines().enumerate() {
        let marker = |m: &str| {
            line == m
                || line
                    .strip_prefix(m)
                    .is_some_and(|r| r.starts_with([' ', '\t', '#']))
        };
        if marker("---") {
            if content || ended {
                return Some(i + 1);
            }
            continue;
        }
        if marker("...") {
            ended = true;
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || (!content && trimmed.starts_with('%'))
        {
            continue;
        }
        if ended {
            return Some(i + 1);
        }
        content = true;
    }
    None
}

/// How deep collections may nest. numaplan's own formats nest a handful of levels; the limit is
/// there because libyaml's scanner takes time quadratic in the depth of flow collections
/// (`[[[[...`: 100,000 levels take 16 s).
const MAX_DEPTH: usize = 100;

/// Where collections first nest deeper than `MAX_DEPTH`, if they do. Counting brackets gives a
/// bound at once (brackets inside strings count too); only a text over the bound is parsed, by
/// yaml-rust2, which is linear and stops by itself at 255 flow levels.
fn too_deep(text: &str) -> Option<YamlError> {
    let mut open = 0usize;
    let mut bound = 0usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                open += 1;
                bound = bound.max(open);
            }
            b']' | b'}' => open = open.saturating_sub(1),
            _ => {}
        }
    }
    if bound <= MAX_DEPTH {
        return None;
    }
    let mut depth = Depth::default();
    let stopped = Parser::new_from_str(text).load(&mut depth, false).err();
    let mark = depth
        .first_too_deep
        .or_else(|| stopped.map(|e| *e.marker()))?;
    Some(YamlError {
        kind: YamlErrorKind::Syntax,
        message: format!("collections nest more than {MAX_DEPTH} levels deep here"),
        spot: Some(Spot {
            line: mark.line(),
            col: mark.col() + 1,
            width: 1,
        }),
    })
}

/// Follows how deep collections nest, and where they first nest deeper than `MAX_DEPTH`.
#[derive(Default)]
struct Depth {
    depth: usize,
    first_too_deep: Option<Marker>,
}

impl MarkedEventReceiver for Depth {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH && self.first_too_deep.is_none() {
                    self.first_too_deep = Some(mark);
                }
            }
            Event::MappingEnd | Event::SequenceEnd => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }
}

/// Deserializes a map whose keys must be unique (`#[serde(deserialize_with = ...)]`): YAML and
/// JSON readers keep the last of two equal keys, and a spec's `env: {A: 1, A: 2}` must not
/// silently lose one. The error names the key as serde_yaml names a duplicate in a mapping.
pub fn unique_keys<'de, D, K, V>(d: D) -> Result<std::collections::BTreeMap<K, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: serde::Deserialize<'de> + Ord + std::fmt::Display,
    V: serde::Deserialize<'de>,
{
    struct Unique<K, V>(std::marker::PhantomData<(K, V)>);
    impl<'de, K, V> serde::de::Visitor<'de> for Unique<K, V>
    where
        K: serde::Deserialize<'de> + Ord + std::fmt::Display,
        V: serde::Deserialize<'de>,
    {
        type Value = std::collections::BTreeMap<K, V>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = std::collections::BTreeMap::new();
            while let Some((k, v)) = m.next_entry::<K, V>()? {
                let text = k.to_string();
                if out.insert(k, v).is_some() {
                    return Err(serde::de::Error::custom(format!(
                        "duplicate entry with key \"{text}\""
                    )));
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
}

/// The positions of every key and value of `text` (up to a syntax error).
fn positions(text: &str) -> Positions {
    let mut recorder = Recorder {
        positions: Positions::default(),
        stack: Vec::new(),
        lines: text.lines().collect(),
    };
    let _ = Parser::new_from_str(text).load(&mut recorder, false);
    recorder.positions
}

/// Where `text` stops being well-formed YAML, if it does.
fn syntax_error(text: &str) -> Option<YamlError> {
    let mut recorder = Recorder {
        positions: Positions::default(),
        stack: Vec::new(),
        lines: text.lines().collect(),
    };
    let e = Parser::new_from_str(text)
        .load(&mut recorder, false)
        .err()?;
    let m = e.marker();
    Some(YamlError {
        kind: YamlErrorKind::Syntax,
        message: e.info().to_string(),
        spot: Some(Spot {
            line: m.line(),
            col: m.col() + 1,
            width: 1,
        }),
    })
}

fn json_error(e: &serde_json::Error) -> YamlError {
    let full = e.to_string();
    let message = match full.find(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    };
    YamlError {
        kind: match e.classify() {
            serde_json::error::Category::Data => YamlErrorKind::Shape,
            _ => YamlErrorKind::JsonSyntax,
        },
        message,
        spot: (e.line() > 0).then(|| Spot {
            line: e.line(),
            col: e.column().max(1),
            width: 1,
        }),
    }
}

fn shape_error(e: &serde_yaml::Error) -> YamlError {
    let spot = e.location().map(|l| Spot {
        line: l.line(),
        col: l.column(),
        width: 1,
    });
    let full = e.to_string();
    let message = match full.find(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    };
    YamlError {
        kind: YamlErrorKind::Shape,
        message,
        spot,
    }
}

/// One `--set KEY=VALUE` of the command line: a dotted key (`cpu.policy`) and a YAML value
/// (`exclusive`, `4`, `[0, 1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub key: String,
    pub value: String,
}

impl Override {
    /// The text of the argument, as the user typed it.
    pub fn text(&self) -> String {
        format!("{}={}", self.key, self.value)
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
    let sets = overrides_map(overrides);
    if overrides.is_empty() {
        return Ok((base, map, sets));
    }
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(text_or_empty).expect("invariant: `parse` accepted the text");
    let mut value = None;
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
        apply_override(&mut doc, o).map_err(fail)?;
        // Each override is checked as it is applied, so that an error names the first that
        // does not fit.
        let t = serde_yaml::from_value::<T>(doc.clone())
            .map_err(|e| fail(override_shape_error(o, &e)))?;
        if i + 1 == overrides.len() {
            value = Some(t);
        }
    }
    Ok((
        value.expect("invariant: the last override was applied"),
        map,
        sets,
    ))
}

/// The overrides as a source of their own (`--set`, one line each), for positions in errors.
fn overrides_map(overrides: &[Override]) -> SourceMap {
    let mut positions = Positions::default();
    for (i, o) in overrides.iter().enumerate() {
        let line = i + 1;
        positions.record_key(
            o.key.clone(),
            Spot {
                line,
                col: 1,
                width: o.key.chars().count(),
            },
        );
        positions.record_value(
            o.key.clone(),
            Spot {
                line,
                col: o.key.chars().count() + 2,
                width: o.value.chars().count().max(1),
            },
        );
    }
    let text: Vec<String> = overrides.iter().map(Override::text).collect();
    SourceMap::new("--set", text.join("\n"), positions)
}

/// Parses the override's value as YAML and puts it at its key.
fn apply_override(
    doc: &mut serde_yaml::Value,
    o: &Override,
) -> Result<(), (YamlErrorKind, String)> {
    let v: serde_yaml::Value = serde_yaml::from_str(&o.value).map_err(|e| {
        (
            YamlErrorKind::Syntax,
            format!("`{}` is not a YAML value: {e}", o.value),
        )
    })?;
    set_path(doc, &o.key, v).map_err(|parent| {
        (
            YamlErrorKind::Shape,
            format!(
                "{}: `{parent}` is not a mapping, so it has no key `{}`",
                o.key, o.key
            ),
        )
    })
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

/// Puts `value` at the dotted `key` of `doc`, creating mappings on the way; `Err(prefix)` when
/// the prefix holds something else than a mapping.
fn set_path(
    doc: &mut serde_yaml::Value,
    key: &str,
    value: serde_yaml::Value,
) -> Result<(), String> {
    let mut at = doc;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if at.is_null() {
            *at = serde_yaml::Value::Mapping(serde_yaml::Mapping::new());
        }
        let serde_yaml::Value::Mapping(m) = at else {
            return Err(parts[..i].join("."));
        };
        let k = serde_yaml::Value::String(part.to_string());
        if i + 1 == parts.len() {
            m.insert(k, value);
            return Ok(());
        }
        at = m.entry(k).or_insert(serde_yaml::Value::Null);
    }
    Ok(())
}

/// Serializes a value as a YAML document (no leading `---`). Sequences of plain scalars are
/// written in flow style (`threads: ['0-3', '128-131']`, `0: [10, 21]`) so matrices and CPU rows
/// read as one line each.
pub fn emit<T: Serialize>(value: &T) -> String {
    let block =
        serde_yaml::to_string(value).expect("invariant: numaplan's output types always serialize");
    compact_scalar_sequences(&block)
}

/// Rewrites `key:` followed by `- scalar` lines at the key's indentation as `key: [a, b]`.
fn compact_scalar_sequences(block: &str) -> String {
    let lines: Vec<&str> = block.lines().collect();
    let mut out = String::with_capacity(block.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent_of = |l: &str| l.len() - l.trim_start().len();
        if ["|", "|-", "|+", ">", ">-", ">+"]
            .iter()
            .any(|m| line.ends_with(&format!(": {m}")))
        {
            // A block scalar: copy its body verbatim.
            let key_indent = indent_of(line);
            let body = lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || indent_of(l) > key_indent)
                .count();
            for l in &lines[i..=i + body] {
                out.push_str(l);
                out.push('\n');
            }
            i += 1 + body;
            continue;
        }
        if line.ends_with(':') && !line.trim_start().starts_with('#') {
            let indent = line.len() - line.trim_start().len();
            // An item of a sequence that is itself a mapping entry starts with `- key:`; its
            // nested sequence items sit two columns deeper than the `- `.
            let item_indent = if line.trim_start().starts_with("- ") {
                indent + 2
            } else {
                indent
            };
            let prefix = format!("{}- ", " ".repeat(item_indent));
            let items: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with(&prefix))
                .map(|l| &l[prefix.len()..])
                .collect();
            let next = lines.get(i + 1 + items.len());
            let ends_clean = next.is_none_or(|l| {
                let ind = l.len() - l.trim_start().len();
                ind <= item_indent && !l.starts_with(&format!("{}  ", " ".repeat(item_indent)))
            });
            if !items.is_empty() && ends_clean && items.iter().all(|it| flow_safe(it).is_some()) {
                let flow: Vec<String> = items.iter().filter_map(|it| flow_safe(it)).collect();
                out.push_str(line);
                out.push_str(" [");
                out.push_str(&flow.join(", "));
                out.push_str("]\n");
                i += 1 + items.len();
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// The flow-context form of a block scalar, if it is a simple one (numbers, cpulists, words).
fn flow_safe(item: &str) -> Option<String> {
    if item.is_empty() {
        return None;
    }
    if let Some(inner) = item.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        // Prose (a warning, a note) stays one item per line.
        return (!inner.contains('\'') && !inner.contains(' ')).then(|| item.to_string());
    }
    if !item
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.:,+/".contains(&b))
    {
        return None;
    }
    if item.contains(',') || item.contains(':') {
        Some(format!("'{item}'"))
    } else {
        Some(item.to_string())
    }
}

enum Frame {
    Mapping { path: String, key: Option<String> },
    Sequence { path: String, index: usize },
}

struct Recorder<'t> {
    positions: Positions,
    stack: Vec<Frame>,
    /// The text's lines, to measure quoted scalars as written (`"a\0b"` is 6 columns).
    lines: Vec<&'t str>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl Recorder<'_> {
    /// The columns a quoted scalar starting at `mark` takes as written, quotes and escapes
    /// included, when it ends on its line.
    fn quoted_width(&self, mark: Marker) -> Option<usize> {
        let line = self.lines.get(mark.line().checked_sub(1)?)?;
        let mut chars = line.chars().skip(mark.col());
        let quote = chars.next().filter(|c| *c == '"' || *c == '\'')?;
        let mut width = 1;
        while let Some(c) = chars.next() {
            width += 1;
            match c {
                '\\' if quote == '"' => {
                    chars.next()?;
                    width += 1;
                }
                c if c == quote => {
                    // `''` inside single quotes is one quote.
                    if quote == '\'' && line.chars().nth(mark.col() + width) == Some('\'') {
                        chars.next();
                        width += 1;
                        continue;
                    }
                    return Some(width);
                }
                _ => {}
            }
        }
        None
    }

    /// Handles the start of a node (scalar, mapping or sequence) and returns its path, or `None`
    /// when the node is a mapping key (whose text is returned through `key_text`).
    fn node_path(&mut self, spot: Spot, key_text: Option<&str>) -> Option<String> {
        match self.stack.last_mut() {
            None => Some(String::new()),
            Some(Frame::Mapping { path, key }) => match key.take() {
                None => {
                    let k = key_text.unwrap_or("?").to_string();
                    let full = join(path, &k);
                    self.positions.record_key(full, spot);
                    *key = Some(k);
                    None
                }
                Some(k) => Some(join(path, &k)),
            },
            Some(Frame::Sequence { path, index }) => {
                let p = format!("{path}[{index}]");
                *index += 1;
                Some(p)
            }
        }
    }
}

impl MarkedEventReceiver for Recorder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let spot = |width: usize| Spot {
            line: mark.line(),
            col: mark.col() + 1,
            width,
        };
        match ev {
            Event::Scalar(text, ..) => {
                let width = self
                    .quoted_width(mark)
                    .unwrap_or_else(|| text.chars().count());
                if let Some(path) = self.node_path(spot(width), Some(&text)) {
                    self.positions.record_value(path, spot(width.max(1)));
                }
            }
            Event::Alias(_) => {
                if let Some(path) = self.node_path(spot(1), None) {
                    self.positions.record_value(path, spot(1));
                }
            }
            Event::MappingStart(..) => {
                let path = self.node_path(spot(1), None).unwrap_or_default();
                self.positions.record_value(path.clone(), spot(1));
                self.stack.push(Frame::Mapping { path, key: None });
            }
            Event::SequenceStart(..) => {
                let path = self.node_path(spot(1), None).unwrap_or_default();
                self.positions.record_value(path.clone(), spot(1));
                self.stack.push(Frame::Sequence { path, index: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_positions_of_keys_and_values() {
        let text = "name: x\nnodes:\n  - id: 3\n    l3: [a, bb]\n";
        let (_, map) = parse::<serde_yaml::Value>("f.yaml", text).unwrap();
        assert_eq!(
            map.value("name"),
            Some(Spot {
                line: 1,
                col: 7,
                width: 1
            })
        );
        assert_eq!(
            map.key("nodes[0].id"),
            Some(Spot {
                line: 3,
                col: 5,
                width: 2
            })
        );
        assert_eq!(
            map.value("nodes[0].id"),
            Some(Spot {
                line: 3,
                col: 9,
                width: 1
            })
        );
        assert_eq!(
            map.value("nodes[0].l3[1]"),
            Some(Spot {
                line: 4,
                col: 13,
                width: 2
            })
        );
        // Unknown paths fall back to the nearest known parent.
        assert_eq!(map.value("nodes[0].l3[7]"), map.value("nodes[0].l3"));
    }

    #[test]
    fn emit_compacts_scalar_sequences_and_stays_equal() {
        let text = "p: |-\n  x:\n  - y\na:\n  0: [10, 21]\n  1: [21, 10]\nb:\n- id: 0\n  threads: ['0-3,8', '4']\n- id: 1\n  rows:\n  - x: 1\n";
        let (value, _) = parse::<serde_yaml::Value>("f.yaml", text).unwrap();
        let out = emit(&value);
        assert_eq!(
            out,
            "p: |-\n  x:\n  - y\na:\n  0: [10, 21]\n  1: [21, 10]\nb:\n- id: 0\n  threads: ['0-3,8', '4']\n- id: 1\n  rows:\n  - x: 1\n"
        );
        let (again, _) = parse::<serde_yaml::Value>("f.yaml", &out).unwrap();
        assert_eq!(again, value);
    }

    #[test]
    fn quoted_values_are_underlined_as_written() {
        let text = "a: \"x\\0y\"\nb: 'it''s'\nc: plain\nd: \"open\n  more\"\n";
        let (_, map) = parse::<serde_yaml::Value>("f.yaml", text).unwrap();
        let width = |p: &str| map.value(p).unwrap().width;
        assert_eq!((width("a"), width("b"), width("c")), (6, 7, 5));
        // A quoted value over two lines: its decoded length.
        assert_eq!(width("d"), "open more".len());
    }

    #[test]
    fn a_second_document_is_refused_at_its_line() {
        for (text, line) in [
            ("a: 1\n---\nb: 2\n", Some(2)),
            ("---\na: 1\n", None),
            ("# c\n--- # doc\na: 1\n...\n", None),
            ("a: 1\n...\nb: 2\n", Some(3)),
            ("a: |\n  ---\n", None),
            ("a: 1\n--- x\n", Some(2)),
        ] {
            assert_eq!(second_document(text), line, "{text:?}");
        }
    }

    #[test]
    fn syntax_errors_have_positions() {
        let (e, _) = parse::<serde_yaml::Value>("f.yaml", "a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(e.kind, YamlErrorKind::Syntax);
        assert!(e.spot.is_some());
    }
}
