//! Where every key and value of a YAML text is: a second parse with yaml-rust2, whose events
//! carry positions (serde_yaml reports positions only for its own errors), recorded by path
//! (`nodes[2].cpus`) for `SourceMap`.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use crate::diag::{Positions, Spot};

/// The positions of every key and value of `text` (up to a syntax error).
pub(super) fn positions(text: &str) -> Positions {
    let mut recorder = Recorder::new(text);
    let _ = Parser::new_from_str(text).load(&mut recorder, false);
    recorder.positions
}

enum Frame {
    Mapping { path: String, key: Option<String> },
    Sequence { path: String, index: usize },
}

pub(super) struct Recorder<'t> {
    positions: Positions,
    stack: Vec<Frame>,
    /// The text's lines, to measure quoted scalars as written (`"a\0b"` is 6 columns).
    lines: Vec<&'t str>,
    /// One line's character offsets (the line, then the byte of each character).
    offsets: Option<(usize, Vec<usize>)>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'t> Recorder<'t> {
    pub(super) fn new(text: &'t str) -> Recorder<'t> {
        Recorder {
            positions: Positions::default(),
            stack: Vec::new(),
            lines: text.lines().collect(),
            offsets: None,
        }
    }

    /// Line `line` (1-based) from its character column `col` on. A column counts characters,
    /// so the byte where it starts is looked up in the line's character offsets, made once per
    /// line (scalars come in order): measuring every scalar of a long flow list from the start
    /// of its line took time quadratic in the line's length.
    fn rest_of_line(&mut self, line: usize, col: usize) -> Option<&'t str> {
        let text: &'t str = self.lines.get(line.checked_sub(1)?)?;
        if text.len() < 256 && text.is_ascii() {
            return text.get(col..);
        }
        if self.offsets.as_ref().is_none_or(|(l, _)| *l != line) {
            let offsets = text.char_indices().map(|(i, _)| i).collect();
            self.offsets = Some((line, offsets));
        }
        let (_, offsets) = self.offsets.as_ref()?;
        let start = offsets.get(col).copied().unwrap_or(text.len());
        text.get(start..)
    }

    /// The columns a quoted scalar starting at `mark` takes as written, quotes and escapes
    /// included, when it ends on its line.
    fn quoted_width(&mut self, mark: Marker) -> Option<usize> {
        let rest = self.rest_of_line(mark.line(), mark.col())?;
        let mut chars = rest.chars().peekable();
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
                    if quote == '\'' && chars.peek() == Some(&'\'') {
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
