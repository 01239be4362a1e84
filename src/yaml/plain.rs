//! A fast reader of the block YAML numaplan writes (`emit.rs`: block mappings and sequences,
//! flow sequences of scalars, plain and single-quoted scalars, whole-line comments), read into
//! the caller's type as serde_yaml reads it. `bind` reads its plan at every rank's start, where
//! libyaml (serde_yaml) spends some ten times the instructions on it
//! (BENCHMARKS.md, "The launch paths' cost (issue 56)").
//!
//! It declines (`None`) whatever it does not know to read as serde_yaml does: double quotes,
//! block scalars, anchors, tags, flow mappings, a scalar serde_yaml would read as a float, a
//! non-decimal number or a boolean of another spelling, any error of the type's. `parse` then
//! reads the text with serde_yaml as it always did: every error, and every position an error
//! shows, is still serde_yaml's. `tests/fuzz.rs` compares the two readers on every example,
//! fixture and plan and on thousands of mutations of them.

use std::borrow::Cow;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

/// `text` read as a `T`, where this reader reads it as serde_yaml would; `None` otherwise.
pub(super) fn read<T: DeserializeOwned>(text: &str) -> Option<T> {
    let mut reader = Reader::new(text)?;
    let node = reader.block(reader.lines.first()?.indent, 0)?;
    if reader.at != reader.lines.len() {
        return None;
    }
    T::deserialize(&node).ok()
}

/// Why the reader declines `text` as a `T` (for its tests).
#[cfg(test)]
fn why<T: DeserializeOwned>(text: &str) -> String {
    let mut reader = Reader::new(text).expect("lines");
    let node = reader.block(reader.lines[0].indent, 0).expect("blocks");
    assert_eq!(reader.at, reader.lines.len(), "every line read");
    T::deserialize(&node).err().map(|e| e.0).unwrap_or_default()
}

/// A node of the document.
#[derive(Debug)]
enum Node<'a> {
    Plain(&'a str),
    Quoted(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(&'a str, Node<'a>)>),
}

/// A line of content: its indentation and what follows it, trailing blanks left out, and its
/// place among all the document's lines (`Reader::raw`).
struct Line<'a> {
    indent: usize,
    text: &'a str,
    row: usize,
}

/// How deep blocks may nest before the reader declines (numaplan's formats nest a handful).
const MAX_DEPTH: usize = 32;

struct Reader<'a> {
    /// Every line of the document, as a literal block scalar's content is read.
    raw: Vec<&'a str>,
    /// Its lines of content (blank lines and comments left out), and the next one to read.
    lines: Vec<Line<'a>>,
    at: usize,
}

impl<'a> Reader<'a> {
    /// The document's lines of content; `None` for what only serde_yaml reads (tabs, carriage
    /// returns, directives, document markers).
    fn new(text: &'a str) -> Option<Reader<'a>> {
        // What libyaml refuses (control characters) or reads as a line break where this reader
        // would not (U+0085, U+2028, U+2029), and a byte order mark.
        let odd = |c: char| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
        };
        if text.contains(odd) {
            return None;
        }
        let raw: Vec<&str> = text.lines().collect();
        let mut lines = Vec::new();
        for (row, line) in raw.iter().enumerate() {
            let text = line.trim_start_matches(' ');
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            if line.starts_with("---") || line.starts_with("...") || line.starts_with('%') {
                return None;
            }
            lines.push(Line {
                indent: line.len() - text.len(),
                text: text.trim_end_matches(' '),
                row,
            });
        }
        Some(Reader { raw, lines, at: 0 })
    }

    fn item(text: &str) -> Option<&str> {
        match text {
            "-" => Some(""),
            _ => text.strip_prefix("- "),
        }
    }

    /// The block at `indent` from the current line: a sequence or a mapping.
    fn block(&mut self, indent: usize, depth: usize) -> Option<Node<'a>> {
        let line = self.lines.get(self.at)?;
        if line.indent != indent || depth > MAX_DEPTH {
            return None;
        }
        match Self::item(line.text) {
            Some(_) => self.seq(indent, depth),
            None => self.map(indent, depth),
        }
    }

    /// A block sequence: `- ` items at `indent`, each a scalar or a mapping that starts on
    /// the item's line.
    fn seq(&mut self, indent: usize, depth: usize) -> Option<Node<'a>> {
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent != indent {
                break;
            }
            // A key at the sequence's indentation: the mapping it is in goes on.
            let Some(rest) = Self::item(line.text) else {
                break;
            };
            if rest.is_empty() || rest.starts_with([' ', '-']) {
                return None;
            }
            if key_of(rest).is_some() {
                // The item's mapping: its first key on the item's line, two columns in.
                self.lines[self.at] = Line {
                    indent: indent + 2,
                    text: rest,
                    row: line.row,
                };
                items.push(self.map(indent + 2, depth + 1)?);
            } else {
                items.push(scalar(rest)?);
                self.at += 1;
            }
        }
        Some(Node::Seq(items))
    }

    /// A block mapping: `key: value` lines at `indent`, a value of its own lines under a `key:`
    /// (deeper, or a sequence at the key's indentation, as serde_yaml writes them).
    fn map(&mut self, indent: usize, depth: usize) -> Option<Node<'a>> {
        let mut entries = Vec::new();
        while let Some(line) = self.lines.get(self.at) {
            if line.indent < indent || (line.indent == indent && Self::item(line.text).is_some()) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let (key, rest) = key_of(line.text)?;
            let row = line.row;
            self.at += 1;
            let value = match rest {
                "|" | "|-" => self.literal(row, indent, rest == "|")?,
                "" => {
                    let next = self.lines.get(self.at)?;
                    let nested = next.indent > indent
                        || (next.indent == indent && Self::item(next.text).is_some());
                    if !nested {
                        return None;
                    }
                    self.block(next.indent, depth + 1)?
                }
                _ => scalar(rest)?,
            };
            entries.push((key, value));
        }
        Some(Node::Map(entries))
    }
}

impl<'a> Reader<'a> {
    /// A literal block scalar (`key: |-`, `key: |`) whose key, on row `row`, is at `indent`:
    /// the more indented lines that follow, less their first line's indentation, joined by
    /// newlines; `|` keeps one newline at the end. Comments and blank lines in it are its text.
    fn literal(&mut self, row: usize, indent: usize, clip: bool) -> Option<Node<'a>> {
        let mut text: Vec<&str> = Vec::new();
        let mut content: Option<usize> = None;
        let mut end = row + 1;
        for (i, raw) in self.raw.iter().enumerate().skip(row + 1) {
            let trimmed = raw.trim_start_matches(' ');
            let at = raw.len() - trimmed.len();
            if trimmed.is_empty() {
                // Spaces past the content's indentation on a blank line are its text.
                if content.is_some_and(|c| at > c) || content.is_none() && at > indent {
                    return None;
                }
                text.push("");
                continue;
            }
            if at <= indent {
                break;
            }
            let c = *content.get_or_insert(at);
            if at < c {
                return None;
            }
            text.push(&raw[c..]);
            end = i + 1;
        }
        content?;
        while text.last() == Some(&"") {
            text.pop();
        }
        while self.lines.get(self.at).is_some_and(|l| l.row < end) {
            self.at += 1;
        }
        let mut joined = text.join("\n");
        if clip {
            joined.push('\n');
        }
        Some(Node::Quoted(Cow::Owned(joined)))
    }
}

/// `key: value` or `key:` as a plain key and the rest (empty after `key:`); `None` for any other
/// line (a scalar, a quoted or complex key).
fn key_of(text: &str) -> Option<(&str, &str)> {
    let (key, rest) = match text.split_once(": ") {
        Some((key, rest)) => (key, rest.trim_start_matches(' ')),
        None => (text.strip_suffix(':')?, ""),
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_-./".contains(&b);
    (!key.is_empty() && key.bytes().all(plain) && !key.starts_with('-')).then_some((key, rest))
}

/// A value on one line: a flow sequence of scalars, `{}`, a single-quoted or a plain scalar.
fn scalar(text: &str) -> Option<Node<'_>> {
    match text.as_bytes().first()? {
        b'[' => flow_seq(text.strip_prefix('[')?.strip_suffix(']')?),
        b'{' => (text == "{}").then(|| Node::Map(Vec::new())),
        b'\'' => quoted(text),
        // YAML's indicators, which a plain scalar cannot start with (`#` starts a comment).
        b'"' | b'|' | b'>' | b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b'?' | b']' | b'}'
        | b',' | b'#' | b':' => None,
        _ if text.contains(": ") || text.contains(" #") || text.ends_with(':') => None,
        _ if text.starts_with("- ") || text == "-" => None,
        _ => Some(Node::Plain(text)),
    }
}

/// The items of a flow sequence, each plain (no flow indicator) or single-quoted.
fn flow_seq(inner: &str) -> Option<Node<'_>> {
    let mut items = Vec::new();
    let mut rest = inner.trim_matches(' ');
    while !rest.is_empty() {
        let (item, after) = match rest.starts_with('\'') {
            true => {
                let end = quoted_end(rest)?;
                (&rest[..end], &rest[end..])
            }
            false => rest.split_at(rest.find(',').unwrap_or(rest.len())),
        };
        let item = item.trim_end_matches(' ');
        if item.contains(['[', ']', '{', '}']) {
            return None;
        }
        items.push(scalar(item)?);
        rest = match after.trim_start_matches(' ').strip_prefix(',') {
            Some(next) => next.trim_start_matches(' '),
            None if after.trim().is_empty() => "",
            None => return None,
        };
    }
    Some(Node::Seq(items))
}

/// Where a single-quoted scalar at the start of `text` ends (past its closing quote); `''` is a
/// quote inside it.
fn quoted_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        if bytes[i] == b'\'' {
            if bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// A single-quoted scalar that is the whole of `text`.
fn quoted(text: &str) -> Option<Node<'_>> {
    if quoted_end(text)? != text.len() {
        return None;
    }
    let inner = &text[1..text.len() - 1];
    Some(Node::Quoted(match inner.contains('\'') {
        true => Cow::Owned(inner.replace("''", "'")),
        false => Cow::Borrowed(inner),
    }))
}

/// What a plain scalar is, as serde_yaml resolves one it is asked for anything: null, a
/// boolean, an unsigned decimal integer, a string; `Other` for the forms only serde_yaml reads
/// (other spellings, negative, hexadecimal, octal, binary, floats), which the reader declines.
#[derive(Debug, PartialEq)]
enum Resolved {
    Null,
    Bool(bool),
    Unsigned(u64),
    Str,
    Other,
}

fn resolve(s: &str) -> Resolved {
    match s {
        "null" | "~" => return Resolved::Null,
        "true" => return Resolved::Bool(true),
        "false" => return Resolved::Bool(false),
        "Null" | "NULL" | "True" | "TRUE" | "False" | "FALSE" => return Resolved::Other,
        _ => {}
    }
    let decimal =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    match s.parse() {
        Ok(n) if decimal => Resolved::Unsigned(n),
        _ if number(s) => Resolved::Other,
        _ => Resolved::Str,
    }
}

/// Whether serde_yaml reads a plain scalar as a number (its `visit_untagged_scalar`): an
/// integer, `+` or `-` signed, decimal (no leading zeros), `0x`, `0o` or `0b`; or a finite
/// float Rust parses, or `.inf`, `.nan` and their spellings.
fn number(s: &str) -> bool {
    let unsigned = match s.strip_prefix(['+', '-']) {
        Some(rest) if rest.starts_with(['+', '-']) => return false,
        Some(rest) => rest,
        None => s,
    };
    let radix = [("0x", 16), ("0o", 8), ("0b", 2)]
        .into_iter()
        .find_map(|(prefix, radix)| Some((unsigned.strip_prefix(prefix)?, radix)));
    if let Some((digits, radix)) = radix {
        return !digits.starts_with(['+', '-']) && u128::from_str_radix(digits, radix).is_ok();
    }
    let leading_zeros = unsigned.len() > 1
        && unsigned.starts_with('0')
        && unsigned.bytes().all(|b| b.is_ascii_digit());
    if leading_zeros {
        return false;
    }
    let special = [".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"];
    unsigned.parse::<u128>().is_ok()
        || special.contains(&unsigned)
        || unsigned.parse::<f64>().is_ok_and(f64::is_finite)
}

/// The reader declined: `parse` reads the text with serde_yaml. (The type's own message, where
/// it has one, for a reader of this code.)
#[derive(Debug)]
struct Decline(String);

const DECLINE: Decline = Decline(String::new());

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "declined: {}", self.0)
    }
}

impl std::error::Error for Decline {}

impl de::Error for Decline {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Decline(message.to_string())
    }
}

impl<'de> de::Deserializer<'de> for &Node<'_> {
    type Error = Decline;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        match self {
            Node::Plain(s) => match resolve(s) {
                Resolved::Null => v.visit_unit(),
                Resolved::Bool(b) => v.visit_bool(b),
                Resolved::Unsigned(n) => v.visit_u64(n),
                Resolved::Str => v.visit_str(s),
                Resolved::Other => Err(DECLINE),
            },
            Node::Quoted(s) => v.visit_str(s),
            Node::Seq(items) => v.visit_seq(de::value::SeqDeserializer::new(items.iter())),
            Node::Map(entries) => v.visit_map(de::value::MapDeserializer::new(
                entries.iter().map(|(k, value)| (Key(k), value)),
            )),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        match self {
            Node::Plain(s) if matches!(resolve(s), Resolved::Null | Resolved::Bool(_)) => {
                Err(DECLINE)
            }
            Node::Plain(s) => v.visit_str(s),
            Node::Quoted(s) => v.visit_str(s),
            _ => Err(DECLINE),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        self.deserialize_str(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        match self {
            Node::Plain(s) if resolve(s) == Resolved::Null => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Decline> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Decline> {
        match self {
            Node::Plain(s) => v.visit_enum(s.into_deserializer()),
            Node::Quoted(s) => v.visit_enum(s.as_ref().into_deserializer()),
            _ => Err(DECLINE),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        v.visit_unit()
    }

    // serde_yaml takes a mapping only where the type is one, a sequence only where it is one.
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        match self {
            Node::Map(_) => self.deserialize_any(v),
            _ => Err(DECLINE),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Decline> {
        self.deserialize_map(v)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        match self {
            Node::Seq(_) => self.deserialize_any(v),
            _ => Err(DECLINE),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit
        unit_struct tuple tuple_struct identifier
    }
}

impl<'de> IntoDeserializer<'de, Decline> for &Node<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// A mapping's key: a plain scalar, read as serde_yaml reads keys (`0: [10, 21]` a number
/// where the type asks for one, a string where it asks for a string).
struct Key<'a>(&'a str);

impl<'de> IntoDeserializer<'de, Decline> for Key<'_> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = Decline;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        (&Node::Plain(self.0)).deserialize_any(v)
    }

    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        (&Node::Plain(self.0)).deserialize_str(v)
    }

    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        self.deserialize_str(v)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Decline> {
        v.visit_str(self.0)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Option<serde_yaml::Value> {
        read(text)
    }

    #[test]
    fn reads_numaplans_block_yaml() {
        let text = "# a comment\nname: x\nnotes: |-\n  one\n\n  # two\n    three\nclip: |\n  x\nnodes: 2\nranks:\n- rank: 0\n  gpus: [0, 1]\n  \
                    pci: ['0000:07:00.0']\n  env:\n    A: '=x'\n    B: it''s\n  none: null\n\
                    - rank: 1\n  gpus: []\n  env: {}\nlist:\n  - a\n  - 'b c'\n";
        let fast = value(text).expect("read");
        assert_eq!(
            fast,
            serde_yaml::from_str::<serde_yaml::Value>(text).unwrap()
        );
    }

    #[test]
    fn declines_what_only_serde_yaml_reads() {
        for text in [
            "a: \"x\"\n",
            "a: >\n  x\n",
            "a: |+\n  x\n",
            "a: |2\n  x\n",
            "a: &x 1\nb: *x\n",
            "a: !tag x\n",
            "a: {b: 1}\n",
            "a: 1.5\n",
            "a: 0x10\n",
            "a: -0\n",
            "a: True\n",
            "a: .inf\n",
            "a: x # comment\n",
            "a: #x\n",
            "a: ,x\n",
            "a: :x\n",
            "- #x\n",
            "a:\tx\n",
            "a: x\u{2028}b: y\n",
            "- - x\n",
            "-  x\n",
            "a: 'open\n",
            "? a\n: b\n",
            "a:\n",
            "---\na: 1\n",
        ] {
            assert!(value(text).is_none(), "{text:?}");
        }
    }

    #[test]
    fn a_type_takes_only_what_serde_yaml_gives_it() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            a: u32,
        }
        assert!(read::<S>("a: 7\n").is_some_and(|s| s.a == 7));
        assert!(read::<S>("- 7\n").is_none());
        assert!(read::<S>("a: '7'\n").is_none());
        // Declined by the type (with its message), or by the reader (a form it leaves alone).
        assert!(why::<S>("a: x\n").contains("invalid type"));
        assert_eq!(why::<S>("a: 0x7\n"), "");
        type Map = std::collections::BTreeMap<String, Option<String>>;
        let map = read::<Map>("a: a-b\nb: 7\nc: null\n").expect("read");
        assert_eq!(map["a"].as_deref(), Some("a-b"));
        assert_eq!(map["b"].as_deref(), Some("7"));
        assert_eq!(map["c"], None);
        // A document of one scalar is serde_yaml's to read.
        assert!(read::<String>("a-b\n").is_none());
    }
}
