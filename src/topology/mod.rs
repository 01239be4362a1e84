//! Topology: what the machine is. Sources: numaplan's YAML fixtures and hwloc XML exports,
//! detected by content; the model they both produce; the text summary.

pub mod cpu_kinds;
pub mod devices;
pub mod error;
pub mod fixture;
pub mod fixture_file;
pub mod hwloc;
mod hwloc_v3;
pub mod kfd;
pub mod matrix;
pub mod model;
pub mod nvml;
pub mod summary;
pub mod xml_precheck;

use std::path::Path;

use crate::text::TextError;

pub use error::TopologyError;
pub use model::Topology;

/// Loads a topology file, telling hwloc XML from a YAML fixture by its content.
pub fn load_file(path: &Path) -> Result<Topology, TopologyError> {
    let text = crate::text::read(path).map_err(|e| match e {
        TextError::Io(source) => TopologyError::Read {
            path: path.to_path_buf(),
            source,
        },
        TextError::NotUtf8(at) => TopologyError::NotUtf8 {
            path: path.to_path_buf(),
            at,
        },
    })?;
    let file = path.display().to_string();
    if text.trim_start().starts_with('<') {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        hwloc::load_xml(&file, &name, &text)
    } else {
        fixture::load(&file, &text)
    }
}

/// This machine's name; an unnamed one (a bare kernel says `(none)`) still needs one for its
/// plans and messages.
pub fn hostname() -> String {
    use std::io::Read as _;
    // One read (`read_to_string` asks for the size first and reads twice): `bind` asks on every
    // rank's start.
    let mut buf = [0u8; 256];
    std::fs::File::open("/proc/sys/kernel/hostname")
        .and_then(|mut f| f.read(&mut buf))
        .ok()
        .and_then(|n| {
            std::str::from_utf8(&buf[..n])
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty() && h != "(none)")
        .unwrap_or_else(|| "this-machine".into())
}
