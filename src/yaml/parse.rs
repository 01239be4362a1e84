//! Reading a YAML (or JSON) document into a type: two scans that refuse at once what the
//! parsers take long over (a second document, nesting past 100 levels), then serde_json or
//! serde_yaml, and errors that say what is wrong and where.

use serde::de::DeserializeOwned;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use super::positions::{Recorder, positions};
use crate::diag::{SourceMap, Spot};

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
    /// Well-formed, but its aliases expand it past what a document of its size may be.
    TooLarge,
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
    if let Some(error) = indented_first_key(text)
        .or_else(|| too_deep(text))
        .or_else(|| expands_too_far(text))
    {
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
    // The block YAML numaplan writes, read in a fraction of libyaml's time where it reads as
    // serde_yaml would (`plain.rs`); anything else, and every error, is serde_yaml's.
    if let Some(value) = super::plain::read::<T>(text) {
        return Ok((value, map));
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

/// Whether the fast reader (`plain.rs`) reads `text` as serde_yaml does, both untyped and as a
/// `T`: `None` where it declines, else `Err` with both readings where they differ. For the
/// tests, which ask it of every corpus file and its mutations (`tests/fuzz.rs`).
#[doc(hidden)]
pub fn fast_reader_agrees<T>(text: &str) -> Option<Result<(), String>>
where
    T: DeserializeOwned + serde::Serialize,
{
    let untyped = super::plain::read::<serde_yaml::Value>(text);
    let typed = super::plain::read::<T>(text);
    if untyped.is_none() && typed.is_none() {
        return None;
    }
    fn json(v: &impl serde::Serialize) -> String {
        serde_json::to_string(v).unwrap_or_else(|e| format!("(no JSON: {e})"))
    }
    let mut differ = Vec::new();
    if let Some(fast) = untyped {
        let slow = serde_yaml::from_str::<serde_yaml::Value>(text).map_err(|e| e.to_string());
        if slow.as_ref().ok() != Some(&fast) {
            differ.push(format!("untyped: fast {fast:?}, serde_yaml {slow:?}"));
        }
    }
    if let Some(fast) = typed {
        let slow = serde_yaml::from_str::<T>(text).map_err(|e| e.to_string());
        let slow = slow.map(|v| json(&v));
        if slow.as_ref().ok() != Some(&json(&fast)) {
            differ.push(format!("typed: fast {}, serde_yaml {slow:?}", json(&fast)));
        }
    }
    Some(match differ.is_empty() {
        true => Ok(()),
        false => Err(differ.join("; ")),
    })
}

/// Whether `text` (YAML or JSON, in any layout: one line, pretty, flow or block) is a mapping
/// with the top-level key `key`; `None` where it does not parse (truncated, too deep), so the
/// caller can fall back on how the text looks.
pub fn has_top_level_key(text: &str, key: &str) -> Option<bool> {
    if second_document(text).is_some()
        || too_deep(text).is_some()
        || expands_too_far(text).is_some()
    {
        return None;
    }
    if text.trim_start().starts_with('{') {
        if let Ok(map) =
            serde_json::from_str::<std::collections::HashMap<String, serde::de::IgnoredAny>>(text)
        {
            return Some(map.contains_key(key));
        }
    }
    match serde_yaml::from_str::<serde_yaml::Value>(text).ok()? {
        serde_yaml::Value::Mapping(m) => Some(m.contains_key(key)),
        _ => Some(false),
    }
}

/// A first key indented further than a later one (`  topology: x` above `command: [a]`):
/// YAML then ends the first mapping at the later key and takes what follows for a second
/// document, which says nothing of the cause. Found by scanning lines; the error points at
/// the first key and names the later one.
fn indented_first_key(text: &str) -> Option<YamlError> {
    let content = |line: &&str| {
        let t = line.trim_start();
        !t.is_empty() && !t.starts_with('#') && !t.starts_with('%') && *line != "---"
    };
    let mut lines = text.lines().enumerate().filter(|(_, l)| content(l));
    let (first_at, first) = lines.next()?;
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let depth = indent(first);
    if depth == 0 || first.trim_start().starts_with(['{', '[', '-', '"', '\'']) {
        return None;
    }
    let (later_at, later) = lines.find(|(_, l)| indent(l) < depth)?;
    let key = |l: &str| {
        let t = l.trim_start();
        t.split(':').next().unwrap_or(t).trim().to_string()
    };
    let first_key = key(first);
    Some(YamlError {
        kind: YamlErrorKind::Syntax,
        message: format!(
            "the first key `{first_key}` is indented by {depth} space(s), and `{}` on line {} by \
             {}: a document's top-level keys start in one column",
            key(later),
            later_at + 1,
            indent(later)
        ),
        spot: Some(Spot {
            line: first_at + 1,
            col: depth + 1,
            width: first_key.len().max(1),
        }),
    })
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

/// How many nodes a document may have once its aliases are expanded, per byte of its text (a
/// node takes at least two: `a,`), and a floor for small documents. A spec that reuses an anchor (`x-common: &c {...}`, `<<: *c` in
/// each group) stays far under it; nine aliases of nine aliases, thirty levels deep (a
/// 50 KB "billion laughs"), would expand to 9^30 nodes, which serde_yaml builds as it reads.
const EXPANSION_PER_BYTE: u64 = 4;
const EXPANSION_FLOOR: u64 = 10_000;

/// Where a document's aliases first expand it past `EXPANSION_PER_BYTE` nodes per byte, if
/// they do: counted on yaml-rust2's events, which never expand an alias (linear in the text).
/// Only a text with an alias (`*`) is parsed for it.
fn expands_too_far(text: &str) -> Option<YamlError> {
    if !text.contains('*') {
        return None;
    }
    let limit =
        EXPANSION_FLOOR.saturating_add((text.len() as u64).saturating_mul(EXPANSION_PER_BYTE));
    let mut count = Expansion {
        limit,
        ..Expansion::default()
    };
    // A syntax error is serde_yaml's to report, with the rest.
    let _ = Parser::new_from_str(text).load(&mut count, false);
    let (mark, size) = count.over?;
    Some(YamlError {
        kind: YamlErrorKind::TooLarge,
        message: format!(
            "its aliases expand it to {} nodes or more by here, more than a document of its \
             size may have ({limit}): an alias bomb, or anchors nested too deep",
            size
        ),
        spot: Some(Spot {
            line: mark.line(),
            col: mark.col() + 1,
            width: 1,
        }),
    })
}

/// The size of every node with its aliases expanded: each anchor's size, the collections open
/// now with their sizes so far, and where a collection first grew past `limit` (and to what).
#[derive(Default)]
struct Expansion {
    limit: u64,
    anchors: std::collections::HashMap<usize, u64>,
    open: Vec<(usize, u64)>,
    over: Option<(Marker, u64)>,
}

impl Expansion {
    /// A node of `size` (with its anchor, 0 for none) ends inside the innermost open collection.
    fn add(&mut self, anchor: usize, size: u64, mark: Marker) {
        if anchor > 0 {
            self.anchors.insert(anchor, size);
        }
        if let Some((_, so_far)) = self.open.last_mut() {
            *so_far = so_far.saturating_add(size);
            if *so_far > self.limit && self.over.is_none() {
                self.over = Some((mark, *so_far));
            }
        }
    }
}

impl MarkedEventReceiver for Expansion {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                self.open.push((anchor, 1));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some((anchor, size)) = self.open.pop() {
                    self.add(anchor, size, mark);
                }
            }
            Event::Scalar(_, _, anchor, _) => self.add(anchor, 1, mark),
            Event::Alias(anchor) => {
                let size = self.anchors.get(&anchor).copied().unwrap_or(1);
                self.add(0, size, mark);
            }
            _ => {}
        }
    }
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

/// Where `text` stops being well-formed YAML, if it does.
fn syntax_error(text: &str) -> Option<YamlError> {
    let mut recorder = Recorder::new(text);
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
    YamlError {
        message: without_position(e.to_string()),
        kind: match e.classify() {
            serde_json::error::Category::Data => YamlErrorKind::Shape,
            _ => YamlErrorKind::JsonSyntax,
        },
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
    YamlError {
        kind: YamlErrorKind::Shape,
        message: without_position(e.to_string()),
        spot,
    }
}

/// A parser's message without the position it ends with (` at line 3 column 7`): the
/// diagnostic shows the position as a snippet.
fn without_position(mut message: String) -> String {
    if let Some(at) = message.find(" at line ") {
        message.truncate(at);
    }
    message
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
