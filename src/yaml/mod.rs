//! The YAML edge: the only module that knows serde_yaml (archived upstream, so kept where it can
//! be swapped) and yaml-rust2 (used for positions).
//!
//! `parse` deserializes a document and returns a `SourceMap` of every key and value
//! (`positions`); `overrides` applies `--set` to a parsed document; `emit` serializes one.

mod emit;
mod file_error;
mod kind;
mod overrides;
mod parse;
mod plain;
mod positions;

pub use emit::emit;
pub use file_error::FileError;
pub use kind::{Kind, WrongKind, kind_of};
pub use overrides::{Culprit, Override, parse_with_overrides};
pub use parse::{
    YamlError, YamlErrorKind, fast_reader_agrees, has_top_level_key, parse, unique_keys,
};
