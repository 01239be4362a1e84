//! Reading an input file as text: UTF-8, or where the first byte is that is not part of a UTF-8
//! character (an encoding error in the input, not a failure to read it).

use std::path::Path;

/// Why a file could not be read as text.
#[derive(Debug)]
pub enum TextError {
    /// The file could not be read (missing, unreadable): the environment.
    Io(std::io::Error),
    /// The file is not UTF-8: the input.
    NotUtf8(BadByte),
    /// The input is larger than any of numaplan's files can be (`/dev/zero`, a disk image):
    /// the input, refused before it fills memory.
    TooLarge { limit: u64 },
}

/// The most an input is read: a plan of 4,096 ranks is 3 MiB, the largest hwloc export of a
/// real machine some 20 MiB.
pub const LIMIT: u64 = 128 << 20;

/// The first byte of a text that is not part of a UTF-8 character: its 0-based offset, and its
/// 1-based line and column (in characters) for the diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadByte {
    pub offset: usize,
    pub line: usize,
    pub col: usize,
}

impl std::fmt::Display for BadByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "byte {} (line {}, column {}) is not part of a UTF-8 character",
            self.offset, self.line, self.col
        )
    }
}

pub fn read(path: &Path) -> Result<String, TextError> {
    let file = std::fs::File::open(path).map_err(TextError::Io)?;
    // A regular file's size, where it has one, sizes the buffer: one read instead of a read per
    // doubling from 32 bytes (`bind` reads its plan at every rank's start).
    let size = file.metadata().map_or(0, |m| m.len()).min(LIMIT + 1);
    read_capped(file, size as usize)
}

/// Standard input, read whole.
pub fn read_stdin() -> Result<String, TextError> {
    read_capped(std::io::stdin(), 0)
}

/// All of `from` up to `LIMIT` bytes (`size`: as many as it is expected to hold); more is
/// `TooLarge`, after reading one byte past it.
fn read_capped(from: impl std::io::Read, size: usize) -> Result<String, TextError> {
    let mut bytes = Vec::with_capacity(size + 1);
    std::io::Read::read_to_end(&mut from.take(LIMIT + 1), &mut bytes).map_err(TextError::Io)?;
    if bytes.len() as u64 > LIMIT {
        return Err(TextError::TooLarge { limit: LIMIT });
    }
    decode(bytes)
}

pub fn decode(bytes: Vec<u8>) -> Result<String, TextError> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let before = std::str::from_utf8(&e.as_bytes()[..offset]).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        TextError::NotUtf8(BadByte {
            offset,
            line: before.matches('\n').count() + 1,
            col: before[line_start..].chars().count() + 1,
        })
    })
}

/// `text` cut into pieces of at most `size` bytes (at least one character each), at character
/// boundaries.
pub fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_byte_is_found_by_offset_line_and_column() {
        let Err(TextError::NotUtf8(at)) = decode(b"nodes: 1\ncommand: [caf\xe9]\n".to_vec()) else {
            panic!("Latin-1 accepted as UTF-8");
        };
        assert_eq!((at.offset, at.line, at.col), (22, 2, 14));
        let Err(TextError::NotUtf8(at)) = decode("é\u{0}\u{ff}".bytes().chain([0xff]).collect())
        else {
            panic!("a lone 0xff accepted");
        };
        assert_eq!((at.offset, at.line, at.col), (5, 1, 4));
        assert!(decode(b"fine\n".to_vec()).is_ok());
    }

    #[test]
    fn chunks_cut_at_character_boundaries_and_join_back() {
        let text = "aé€😀".repeat(50);
        for size in [1, 2, 3, 5, 64, 1000] {
            let parts: Vec<&str> = chunks(&text, size).collect();
            assert_eq!(parts.concat(), text, "size {size}");
            assert!(
                parts
                    .iter()
                    .all(|p| p.len() <= size.max(4) && !p.is_empty())
            );
        }
        assert_eq!(chunks("", 4).count(), 0);
    }
}
