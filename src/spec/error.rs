//! `SpecError`: every problem of a spec file, all collected before stopping.

use crate::diag::SourceMap;
use crate::yaml::FileError;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read job spec `{}`: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("job spec `{}` is not UTF-8 text: {at}", path.display())]
    NotUtf8 {
        path: std::path::PathBuf,
        at: crate::text::BadByte,
    },
    /// Larger than a job spec can be.
    #[error("job spec `{}` is larger than {}, more than any job spec", path.display(), crate::phrase::mib(*limit >> 20))]
    TooLarge {
        path: std::path::PathBuf,
        limit: u64,
    },
    /// Not YAML, or not a spec's shape (unknown key, wrong type).
    #[error(transparent)]
    File(#[from] FileError),
    /// Another kind of numaplan file (a plan, a topology).
    #[error(transparent)]
    WrongKind(#[from] crate::yaml::WrongKind),
    /// Values that are well-formed but not acceptable; every one found.
    #[error("{} problems in the job spec", problems.len())]
    Invalid {
        map: Box<SpecMaps>,
        problems: Vec<SpecProblem>,
    },
}

/// One bad value: where (a path such as `cpu.reserve`), what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecProblem {
    pub path: String,
    pub message: String,
    pub label: String,
    pub help: String,
}

/// Where a spec's values were written: the file, or a `--set` of the command line.
#[derive(Clone, Debug)]
pub struct SpecMaps {
    pub file: SourceMap,
    /// The `--set` arguments, one per line (file `--set`).
    pub sets: SourceMap,
}

impl SpecMaps {
    /// The map that locates `path`: the `--set` that wrote it (or an enclosing key), else the
    /// file.
    pub fn for_path(&self, path: &str) -> &SourceMap {
        match self.sets.value(path) {
            Some(_) => &self.sets,
            None => &self.file,
        }
    }
}
