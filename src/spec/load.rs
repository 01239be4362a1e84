//! Reads a spec file: YAML -> `raw::JobSpec` with a `SourceMap`, then validation.

use std::path::Path;

use super::error::SpecError;
use super::raw::JobSpec;
use super::{Spec, validate};
use crate::diag::SourceMap;
use crate::yaml;

/// A loaded spec with the positions of its text, kept for pointing resolve errors at lines.
pub struct LoadedSpec {
    pub spec: Spec,
    pub map: SourceMap,
}

pub fn load_file(path: &Path) -> Result<LoadedSpec, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    load_str(&path.display().to_string(), &text)
}

pub fn load_str(file: &str, text: &str) -> Result<LoadedSpec, SpecError> {
    let (raw, map) = yaml::parse::<JobSpec>(file, text)
        .map_err(|(error, map)| SpecError::Yaml { map, error })?;
    match validate::validate(&raw) {
        Ok(spec) => Ok(LoadedSpec { spec, map }),
        Err(problems) => Err(SpecError::Invalid {
            map: Box::new(map),
            problems,
        }),
    }
}
