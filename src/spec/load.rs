//! Reads a spec: YAML -> `raw::JobSpec` with a `SourceMap`, the command line's `--set`
//! overrides applied, then validation.

use std::path::Path;

use super::error::{SpecError, SpecMaps};
use super::raw::JobSpec;
use super::{Spec, validate};
use crate::yaml::{self, FileError, Override};

/// A loaded spec with the positions of its text, kept for pointing resolve errors at lines.
pub struct LoadedSpec {
    pub spec: Spec,
    pub map: SpecMaps,
}

pub fn load_file(path: &Path) -> Result<LoadedSpec, SpecError> {
    let text = read(path)?;
    load_str(&path.display().to_string(), &text)
}

/// A job spec's text: an unreadable file is `Read` (the environment), bytes that are not UTF-8
/// are `NotUtf8` (the input).
pub fn read(path: &Path) -> Result<String, SpecError> {
    crate::text::read(path).map_err(|e| match e {
        crate::text::TextError::Io(source) => SpecError::Read {
            path: path.to_path_buf(),
            source,
        },
        crate::text::TextError::NotUtf8(at) => SpecError::NotUtf8 {
            path: path.to_path_buf(),
            at,
        },
        crate::text::TextError::TooLarge { limit } => SpecError::TooLarge {
            path: path.to_path_buf(),
            limit,
        },
    })
}

pub fn load_str(file: &str, text: &str) -> Result<LoadedSpec, SpecError> {
    load_with(file, text, &[])
}

/// A spec's text with `--set` overrides applied, in order.
pub fn load_with(file: &str, text: &str, overrides: &[Override]) -> Result<LoadedSpec, SpecError> {
    yaml::WrongKind::check(file, text, yaml::Kind::JobSpec)?;
    let (raw, file_map, sets) = yaml::parse_with_overrides::<JobSpec>(file, text, overrides)
        .map_err(|(error, map, _)| FileError::from((error, map)))?;
    let map = SpecMaps {
        file: file_map,
        sets,
    };
    match validate::validate(&raw) {
        Ok(spec) => Ok(LoadedSpec { spec, map }),
        Err(problems) => Err(SpecError::Invalid {
            map: Box::new(map),
            problems,
        }),
    }
}
