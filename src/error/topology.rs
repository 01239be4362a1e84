//! How a topology that cannot be read, or is not consistent, reads.

use super::yaml::not_utf8;
use super::yaml::{FIXTURE_CODES, file_error, wrong_kind};
use crate::diag::Diagnostic;
use crate::diag::codes::*;
use crate::topology::TopologyError;

pub(super) fn topology(e: &TopologyError) -> Diagnostic {
    match e {
        TopologyError::NotUtf8 { path, at } => not_utf8(e.to_string(), path, *at),
        TopologyError::Read { path, source } => Diagnostic::error(
            E0300_TOPOLOGY_READ,
            format!("cannot read topology file `{}`: {source}", path.display()),
        )
        .help("check the path given to `--topology` or the spec's `topology:` key"),
        TopologyError::TooLarge { .. } => Diagnostic::error(E0441_TOO_LARGE, e.to_string())
            .note("numaplan stopped reading there: it holds its inputs in memory")
            .help("give the topology file itself: `numaplan topo --format yaml` writes one, `lstopo --of xml` another"),
        TopologyError::File(e) => file_error(e, FIXTURE_CODES),
        TopologyError::WrongKind(e) => wrong_kind(e),
        TopologyError::NotHwloc { file, found } => Diagnostic::error(
            E0303_XML_NOT_HWLOC,
            format!("`{file}` is {found}, not an hwloc topology export"),
        )
        .in_file(file)
        .help("export the machine with `lstopo --of xml machine.xml` on it, or write a numaplan fixture (see examples/topologies/)"),
        TopologyError::XmlVersion {
            file,
            version,
            linked,
        } => Diagnostic::error(
            E0304_XML_VERSION,
            format!("`{file}` is hwloc XML version {version}, which numaplan cannot import"),
        )
        .in_file(file)
        .note(format!("numaplan reads the hwloc 1.x, 2.x and 3.x XML formats (with hwloc {linked}, translating 3.x)"))
        .help("re-export with hwloc 2.x or 3.x (`lstopo --of xml`), or with `--export-xml-flags v2` where the newer lstopo offers it"),
        TopologyError::XmlObjectRefused { file, line, col, .. } => Diagnostic::error(E0305_XML_REJECTED, e.to_string())
            .at_position(file.clone(), *line, *col)
            .note("numaplan refuses such an object before hwloc reads it: hwloc would crash on it, or take minutes")
            .help("re-export the topology with `lstopo --of xml`"),
        TopologyError::XmlRejected { file, detail } => Diagnostic::error(
            E0305_XML_REJECTED,
            format!("hwloc cannot import `{file}`: {detail}"),
        )
        .in_file(file)
        .help("re-export the topology with `lstopo --of xml`"),
        TopologyError::Discover { detail } => Diagnostic::error(
            E0307_DISCOVER,
            format!("hwloc cannot discover this machine: {detail}"),
        )
        .help("pass a fixture with `--topology FILE`"),
        TopologyError::Inconsistent { file, error } => Diagnostic::error(
            E0306_TOPOLOGY_INCONSISTENT,
            format!("`{file}` describes an impossible machine: {error}"),
        )
        .in_file(file),
    }
}
