//! The manifests' YAML, written from a tree: a manifest is data, not a script, so it is built
//! as values (`Yaml`) and written here in block style, each key with the comment that says why
//! it is there. Every string goes through [`scalar`], which writes it plain only where YAML
//! reads it back as that same string, else double-quoted (JSON's escapes, which YAML shares);
//! a multi-line text (the plan in its ConfigMap) is a literal block.

/// A YAML value.
#[derive(Clone, Debug, PartialEq)]
pub enum Yaml {
    Str(String),
    Int(i64),
    Bool(bool),
    /// A text of several lines, written as a literal block (`|`).
    Text(String),
    List(Vec<Yaml>),
    Map(Vec<Entry>),
}

/// A mapping's entry, with the comment written above it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub value: Yaml,
    pub comment: Option<String>,
}

/// A mapping built entry by entry.
#[derive(Default)]
pub struct Map(Vec<Entry>);

impl Map {
    pub fn new() -> Map {
        Map(Vec::new())
    }

    /// Adds `key: value`.
    pub fn set(mut self, key: &str, value: impl Into<Yaml>) -> Map {
        self.0.push(Entry {
            key: key.into(),
            value: value.into(),
            comment: None,
        });
        self
    }

    /// Adds `key: value` under a `# why` comment.
    pub fn why(mut self, key: &str, value: impl Into<Yaml>, why: impl Into<String>) -> Map {
        self.0.push(Entry {
            key: key.into(),
            value: value.into(),
            comment: Some(why.into()),
        });
        self
    }

    /// Adds `key: value` where there is a value.
    pub fn maybe(self, key: &str, value: Option<impl Into<Yaml>>) -> Map {
        match value {
            Some(v) => self.set(key, v),
            None => self,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Map> for Yaml {
    fn from(m: Map) -> Yaml {
        Yaml::Map(m.0)
    }
}

impl From<&str> for Yaml {
    fn from(s: &str) -> Yaml {
        Yaml::Str(s.into())
    }
}

impl From<String> for Yaml {
    fn from(s: String) -> Yaml {
        Yaml::Str(s)
    }
}

impl From<&String> for Yaml {
    fn from(s: &String) -> Yaml {
        Yaml::Str(s.clone())
    }
}

impl From<i64> for Yaml {
    fn from(n: i64) -> Yaml {
        Yaml::Int(n)
    }
}

impl From<u32> for Yaml {
    fn from(n: u32) -> Yaml {
        Yaml::Int(i64::from(n))
    }
}

impl From<bool> for Yaml {
    fn from(b: bool) -> Yaml {
        Yaml::Bool(b)
    }
}

impl<T: Into<Yaml>> From<Vec<T>> for Yaml {
    fn from(items: Vec<T>) -> Yaml {
        Yaml::List(items.into_iter().map(Into::into).collect())
    }
}

/// Documents as one stream after the stream's `header` comment lines, each after `---`, each
/// preceded by its comment lines.
pub fn stream(header: &[String], documents: &[(Vec<String>, Yaml)]) -> String {
    let mut out = String::new();
    for line in header {
        comment_line(&mut out, 0, line);
    }
    for (comments, doc) in documents {
        out.push_str("---\n");
        for line in comments {
            comment_line(&mut out, 0, line);
        }
        write_block(&mut out, doc, 0);
    }
    out
}

fn comment_line(out: &mut String, indent: usize, text: &str) {
    for line in text.lines() {
        out.push_str(&" ".repeat(indent));
        match line.is_empty() {
            true => out.push_str("#\n"),
            false => {
                out.push_str("# ");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// A mapping or list at `indent`, starting on a fresh line; a scalar on its own line.
fn write_block(out: &mut String, value: &Yaml, indent: usize) {
    let pad = " ".repeat(indent);
    match value {
        Yaml::Map(entries) if !entries.is_empty() => {
            for e in entries {
                if let Some(c) = &e.comment {
                    comment_line(out, indent, c);
                }
                out.push_str(&pad);
                write_entry(out, e, indent);
            }
        }
        Yaml::List(items) if !items.is_empty() => {
            for item in items {
                out.push_str(&pad);
                out.push('-');
                write_item(out, item, indent + 2);
            }
        }
        scalar_value => {
            out.push_str(&pad);
            out.push_str(&inline(scalar_value, indent));
            out.push('\n');
        }
    }
}

/// `key: value`, the cursor after the indentation.
fn write_entry(out: &mut String, e: &Entry, indent: usize) {
    out.push_str(&scalar(&e.key));
    out.push(':');
    match &e.value {
        Yaml::Map(m) if !m.is_empty() => {
            out.push('\n');
            write_block(out, &e.value, indent + 2);
        }
        Yaml::List(l) if !l.is_empty() => {
            out.push('\n');
            write_block(out, &e.value, indent + 2);
        }
        v => {
            out.push(' ');
            out.push_str(&inline(v, indent));
            out.push('\n');
        }
    }
}

/// A list item after its `-`: a mapping's first entry on the dash's line, the rest under it.
fn write_item(out: &mut String, item: &Yaml, indent: usize) {
    match item {
        Yaml::Map(entries) if !entries.is_empty() => {
            for (i, e) in entries.iter().enumerate() {
                if let Some(c) = &e.comment {
                    if i == 0 {
                        out.push('\n');
                    }
                    comment_line(out, indent, c);
                    out.push_str(&" ".repeat(indent));
                } else if i == 0 {
                    out.push(' ');
                } else {
                    out.push_str(&" ".repeat(indent));
                }
                write_entry(out, e, indent);
            }
        }
        Yaml::List(items) if !items.is_empty() => {
            out.push('\n');
            write_block(out, item, indent);
        }
        v => {
            out.push(' ');
            out.push_str(&inline(v, indent));
            out.push('\n');
        }
    }
}

/// A value written on its key's line: a scalar, `{}`, `[]`, or a literal block's header and
/// lines (at `indent` + 2).
fn inline(value: &Yaml, indent: usize) -> String {
    match value {
        Yaml::Str(s) => scalar(s),
        Yaml::Int(n) => n.to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Map(_) => "{}".into(),
        Yaml::List(_) => "[]".into(),
        Yaml::Text(t) => literal(t, indent + 2),
    }
}

/// A text as a literal block, where YAML keeps it byte for byte: lines of printable
/// characters and tabs, the first not starting with a blank (which would set the block's
/// indentation); else a quoted scalar.
fn literal(text: &str, indent: usize) -> String {
    let printable = text
        .chars()
        .all(|c| c == '\n' || c == '\t' || (!c.is_control() && c != '\u{feff}'));
    let trailing = text.len() - text.trim_end_matches('\n').len();
    let first_blank = text.starts_with([' ', '\t']);
    if !printable || first_blank || text.trim_end_matches('\n').is_empty() {
        return quoted(text);
    }
    let header = match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    };
    let pad = " ".repeat(indent);
    let mut out = header.to_string();
    for line in text.trim_end_matches('\n').split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad);
            out.push_str(line);
        }
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    out
}

/// A string as a YAML scalar: plain where YAML 1.1 and 1.2 read it back as this string (no
/// indicator, number, boolean, null or timestamp look), else double-quoted.
pub fn scalar(s: &str) -> String {
    let plain_chars = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./@".contains(c) || c == ':' || c == '=');
    let first_ok = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_');
    let lower = s.to_ascii_lowercase();
    let special = matches!(
        lower.as_str(),
        "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
    );
    // `key: value` inside a plain scalar would end the key; a colon at the end too.
    let colon_trouble = s.contains(": ") || s.ends_with(':') || s.contains(":/");
    match plain_chars && first_ok && !special && !colon_trouble && !s.contains("=") {
        true => s.to_string(),
        false => quoted(s),
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("invariant: a string serializes")
}

#[cfg(test)]
mod tests {
    use super::{Map, Yaml, scalar, stream};

    #[test]
    fn strings_that_would_read_back_otherwise_are_quoted() {
        for (s, out) in [
            ("Pod", "Pod"),
            ("v1", "v1"),
            ("resource.k8s.io/v1", "resource.k8s.io/v1"),
            ("8", "\"8\""),
            ("1800Gi", "\"1800Gi\""),
            ("yes", "\"yes\""),
            ("Off", "\"Off\""),
            ("null", "\"null\""),
            ("", "\"\""),
            ("a: b", "\"a: b\""),
            ("$(NUMAPLAN_NODE_RANK)", "\"$(NUMAPLAN_NODE_RANK)\""),
            ("--node-rank", "\"--node-rank\""),
            ("say \"hi\"", "\"say \\\"hi\\\"\""),
        ] {
            assert_eq!(scalar(s), out, "{s}");
        }
    }

    #[test]
    fn a_document_in_block_style_with_its_comments() {
        let doc: Yaml = Map::new()
            .set("kind", "ConfigMap")
            .why(
                "data",
                Map::new().set("plan.yaml", Yaml::Text("a: 1\n\nb: 2\n".into())),
                "the plan",
            )
            .set(
                "list",
                vec![
                    Yaml::from(Map::new().set("name", "x").set("n", 1u32)),
                    "y".into(),
                    "z".into(),
                ],
            )
            .set("empty", Map::new())
            .into();
        assert_eq!(
            stream(&["top".into()], &[(vec!["head".into()], doc)]),
            "# top\n---\n# head\nkind: ConfigMap\n# the plan\ndata:\n  plan.yaml: |\n    a: 1\n\n    b: 2\nlist:\n  - name: x\n    \"n\": 1\n  - \"y\"\n  - z\nempty: {}\n"
        );
    }
}
