//! `SourceMap`: where each key and value of a YAML document sits (line and column), so errors
//! found after parsing (by path, like `nodes[2].cpus`) can point at the text.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A position in a file: 1-based line and column, and the width to underline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spot {
    pub line: usize,
    pub col: usize,
    pub width: usize,
}

/// Where a file's keys and values are, by path (`nodes[2].l3_groups[0].threads[1]`).
#[derive(Clone, Debug, Default)]
pub struct Positions {
    values: BTreeMap<String, Spot>,
    keys: BTreeMap<String, Spot>,
}

impl Positions {
    pub fn record_value(&mut self, path: String, spot: Spot) {
        self.values.insert(path, spot);
    }

    pub fn record_key(&mut self, path: String, spot: Spot) {
        self.keys.insert(path, spot);
    }
}

/// One file's text and the positions of its keys and values. The positions are found when
/// first asked for (a second parse of the text, which only errors need), by `locate`.
#[derive(Clone, Debug)]
pub struct SourceMap {
    file: String,
    text: String,
    positions: OnceLock<Positions>,
    locate: fn(&str) -> Positions,
}

impl Default for SourceMap {
    fn default() -> Self {
        SourceMap::new("", "", Positions::default())
    }
}

impl SourceMap {
    /// A map with its positions known.
    pub fn new(file: impl Into<String>, text: impl Into<String>, positions: Positions) -> Self {
        SourceMap {
            file: file.into(),
            text: text.into(),
            positions: OnceLock::from(positions),
            locate: |_| Positions::default(),
        }
    }

    /// A map whose positions `locate` finds in the text when first needed.
    pub fn lazy(
        file: impl Into<String>,
        text: impl Into<String>,
        locate: fn(&str) -> Positions,
    ) -> Self {
        SourceMap {
            file: file.into(),
            text: text.into(),
            positions: OnceLock::new(),
            locate,
        }
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    fn positions(&self) -> &Positions {
        self.positions.get_or_init(|| (self.locate)(&self.text))
    }

    /// The value at `path`, or failing that the nearest enclosing value that has a position.
    pub fn value(&self, path: &str) -> Option<Spot> {
        let values = &self.positions().values;
        let mut p = path;
        loop {
            if let Some(s) = values.get(p) {
                return Some(*s);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }

    /// The value at exactly `path`, if the file has it.
    pub fn exact(&self, path: &str) -> Option<Spot> {
        self.positions().values.get(path).copied()
    }

    /// The key of the entry at `path` (falls back to its value).
    pub fn key(&self, path: &str) -> Option<Spot> {
        self.positions()
            .keys
            .get(path)
            .copied()
            .or_else(|| self.value(path))
    }

    /// A spot moved onto the text: a parser's position past the end of a truncated file becomes
    /// the end of its last line.
    pub fn clamp(&self, spot: Spot) -> Spot {
        let count = self.text.lines().count();
        if spot.line <= count || count == 0 {
            return spot;
        }
        let last = self.text.lines().last().unwrap_or_default();
        Spot {
            line: count,
            col: last.chars().count() + 1,
            width: 1,
        }
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> Option<String> {
        self.text
            .lines()
            .nth(line.checked_sub(1)?)
            .map(|l| l.to_string())
    }
}
