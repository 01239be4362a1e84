//! `TopologyError`: everything that can go wrong reading a topology source.

use std::path::PathBuf;

use super::model::ModelError;
use crate::yaml::FileError;

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file could not be read.
    #[error("cannot read topology file `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Larger than a topology can be.
    #[error("topology file `{}` is larger than {}, more than any machine's topology", path.display(), crate::phrase::mib(*limit >> 20))]
    TooLarge { path: PathBuf, limit: u64 },
    /// Another kind of numaplan file (a plan, a job spec).
    #[error(transparent)]
    WrongKind(#[from] crate::yaml::WrongKind),
    /// The file is not UTF-8 text.
    #[error("topology file `{}` is not UTF-8 text: {at}", path.display())]
    NotUtf8 {
        path: PathBuf,
        at: crate::text::BadByte,
    },
    /// Not YAML, not a fixture's shape, or facts that are wrong or contradict each other.
    #[error(transparent)]
    File(#[from] FileError),
    /// An XML file that is not an hwloc export (e.g. an NCCL topology file).
    #[error("`{file}` is {found}, not an hwloc topology export")]
    NotHwloc { file: String, found: String },
    /// An hwloc XML of a format version numaplan cannot import (newer than 3.x).
    #[error("`{file}` is hwloc XML version {version}, which numaplan cannot import")]
    XmlVersion {
        file: String,
        version: String,
        linked: String,
    },
    /// numaplan's pre-check refused an object of the XML before hwloc saw it (hwloc would crash
    /// on it, or take minutes).
    #[error("`{file}` cannot be imported: {detail}")]
    XmlObjectRefused {
        file: String,
        detail: String,
        line: usize,
        col: usize,
    },
    /// hwloc refused the XML.
    #[error("hwloc cannot import `{file}`: {detail}")]
    XmlRejected { file: String, detail: String },
    /// hwloc could not read this machine.
    #[error("hwloc cannot discover this machine: {detail}")]
    Discover { detail: String },
    /// The source loaded but the machine it describes is impossible.
    #[error("`{file}` describes an impossible machine: {error}")]
    Inconsistent { file: String, error: ModelError },
}
