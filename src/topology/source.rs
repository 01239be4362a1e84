//! `Source`: where a topology comes from, this machine (`discover`) or a file, as `--topology`
//! and a spec's `topology:` name it.

use std::fmt;
use std::path::{Path, PathBuf};

use super::tree::Reading;
use super::{Topology, TopologyError, fixture, hwloc};
use crate::text::TextError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This machine, read live (hwloc, NVML).
    Discover,
    /// A fixture or an hwloc XML export, told apart by content.
    File(PathBuf),
}

impl Source {
    /// `discover` names this machine; anything else is a file's path.
    pub fn named(text: &str) -> Source {
        match text {
            "discover" => Source::Discover,
            path => Source::File(PathBuf::from(path)),
        }
    }

    /// The file, for a file.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Source::Discover => None,
            Source::File(path) => Some(path),
        }
    }

    /// A file's path taken relative to `dir` (a spec's `topology:` is relative to the spec).
    pub fn relative_to(&self, dir: &Path) -> Source {
        match self {
            Source::Discover => Source::Discover,
            Source::File(path) => Source::File(dir.join(path)),
        }
    }

    /// The machine with hwloc's object tree (where the source is hwloc): what every policy
    /// reads.
    pub fn load(&self) -> Result<Topology, TopologyError> {
        self.load_for(Reading::ModelAndTree)
    }

    /// The machine, with hwloc's object tree only where `reading` asks for it: a policy that
    /// never reads the tree spares its walk, and its plan's fingerprint does not cover it.
    pub fn load_for(&self, reading: Reading) -> Result<Topology, TopologyError> {
        match self {
            Source::Discover => hwloc::discover(reading),
            Source::File(path) => load_file_for(path, reading),
        }
    }
}

impl std::str::FromStr for Source {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Source, Self::Err> {
        Ok(Source::named(text))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Discover => f.write_str("discover"),
            Source::File(path) => path.display().fmt(f),
        }
    }
}

/// Loads a topology file, telling hwloc XML from a YAML fixture by its content; with hwloc's
/// object tree (`Source::load`).
pub fn load_file(path: &Path) -> Result<Topology, TopologyError> {
    load_file_for(path, Reading::ModelAndTree)
}

/// Loads a topology file, with hwloc's object tree only where `reading` asks for it.
pub fn load_file_for(path: &Path, reading: Reading) -> Result<Topology, TopologyError> {
    let text = crate::text::read(path).map_err(|e| match e {
        TextError::Io(source) => TopologyError::Read {
            path: path.to_path_buf(),
            source,
        },
        TextError::NotUtf8(at) => TopologyError::NotUtf8 {
            path: path.to_path_buf(),
            at,
        },
        TextError::TooLarge { limit } => TopologyError::TooLarge {
            path: path.to_path_buf(),
            limit,
        },
    })?;
    let file = path.display().to_string();
    if text.trim_start().starts_with('<') {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        hwloc::load_xml(&file, &name, &text, reading)
    } else {
        fixture::load(&file, &text)
    }
}
