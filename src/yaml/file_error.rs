//! `FileError`: a file of one of numaplan's YAML formats (a job spec, a topology fixture, a
//! plan) that does not say what its format must: not YAML, or not of the format's shape
//! (`Yaml`), or a value that is wrong (`Invalid`, at the value's path). Each format's loader
//! returns it; `error/yaml.rs` words it with that format's codes.

use super::YamlError;
use crate::diag::SourceMap;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{}", error.message)]
    Yaml {
        map: Box<SourceMap>,
        error: YamlError,
    },
    /// A value no file of the format may have (a bad CPU list, facts that contradict each
    /// other); `path` locates it (`ranks[3].cpus`), `help` says how to fix it where the format's
    /// own advice would not.
    #[error("{message}")]
    Invalid {
        map: Box<SourceMap>,
        path: String,
        message: String,
        help: Option<String>,
    },
}

impl FileError {
    /// The wrong value at `path` of the file `map` locates.
    pub fn invalid(map: &SourceMap, path: &str, message: String, help: Option<String>) -> Self {
        FileError::Invalid {
            map: Box::new(map.clone()),
            path: path.to_string(),
            message,
            help,
        }
    }
}

impl From<(YamlError, Box<SourceMap>)> for FileError {
    /// What `parse` returns when the text is not YAML of the expected shape.
    fn from((error, map): (YamlError, Box<SourceMap>)) -> Self {
        FileError::Yaml { map, error }
    }
}
