//! An hwloc XML export read through hwloc: prechecked, imported and converted in a sandboxed
//! child, which sends back the topology as fixture JSON or its error.

use hwlocality::topology::builder::{BuildFlags, TypeFilter};

use super::convert::convert;
use super::object::text;
use super::settings::{Check, with_hwloc_settings};
use crate::sys::sandbox::Outcome;
use crate::topology::error::TopologyError;
use crate::topology::model::{self, Topology};
use crate::topology::tree::{CpuTree, HwlocTree, Reading};
use crate::topology::{fixture, hwloc_v3, xml_precheck};

/// Loads an hwloc XML export given as text (already read from `file`). hwloc imports it in a
/// child process (`sandbox`): libhwloc segfaults on some malformed files, and numaplan must not
/// die of a signal on any input.
pub fn load_xml(
    file: &str,
    name: &str,
    text: &str,
    reading: Reading,
) -> Result<Topology, TopologyError> {
    let translated;
    let checked = xml_precheck::precheck_xml(file, text)?;
    let text = match checked.major {
        3 => {
            translated = hwloc_v3::to_v2(file, text)?;
            translated.as_str()
        }
        _ => text,
    };
    // hwloc's consistency check marks every object id in a bitmap as large as the largest id:
    // `gp_index="-1"` took 526 MB (lstopo, without the check: 8 MB). hwloc numbers objects from
    // 1, so an id past this bound is no export of hwloc's, and is read without the check.
    const CHECKABLE_IDS: u64 = 1 << 24;
    let check = match checked.largest_id < CHECKABLE_IDS {
        true => Check::Consistency,
        false => Check::None,
    };
    let rejected = |detail: String| TopologyError::XmlRejected {
        file: file.to_string(),
        detail,
    };
    // The variables are set here, before the fork: the child must take no lock.
    let ended = with_hwloc_settings(check, || {
        crate::sys::sandbox::in_child(import_budget(text), || {
            encode(import_xml(file, name, text, reading))
        })
    })
    .map_err(|e| rejected(format!("cannot start the importing process: {e}")))?;
    // What hwloc said (a failed assertion, an out-of-order object), in one line.
    let said = hwloc_said(&ended.stderr);
    match ended.outcome {
        Outcome::Returned(bytes) => {
            let mut topo = decode(file, &bytes)?;
            if let Some(said) = said {
                topo.add_note(format!("hwloc warned while importing `{file}`: {said}"));
            }
            if matches!(check, Check::None) {
                topo.add_note(format!(
                    "hwloc's consistency check was skipped for `{file}`: its object ids \
                     (gp_index) are not hwloc's (the largest is {})",
                    match checked.largest_id {
                        u64::MAX => "not a number".to_string(),
                        id => id.to_string(),
                    }
                ));
            }
            Ok(topo)
        }
        Outcome::Crashed { signal } => Err(rejected(match said {
            Some(said) => {
                format!("hwloc crashed reading it (signal {signal}: {said}); the XML is malformed")
            }
            None => format!("hwloc crashed reading it (signal {signal}); the XML is malformed"),
        })),
        Outcome::Panicked => Err(rejected(
            "hwloc's bindings failed on an object it describes: the XML is malformed".into(),
        )),
    }
}

/// The memory the importing child may take beyond its start: 32 MiB and 32 bytes per byte of
/// XML. hwloc takes about 5 per byte of a real export (a 350 KB one, under 2 MiB more than an
/// empty one); a malformed one it grows on fails at this bound, as an input error.
fn import_budget(text: &str) -> u64 {
    (32 << 20) + 32 * text.len() as u64
}

/// hwloc's message on standard error, without its banner of asterisks: the failed assertion
/// (its last line) or the first line of a warning.
fn hwloc_said(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim().trim_start_matches('*').trim())
        .filter(|l| !l.is_empty())
        .collect();
    let assertion = lines.iter().rev().find(|l| l.contains("Assertion"));
    assertion
        .or(lines.first())
        .map(|l| l.trim_start_matches("numaplan: ").to_string())
}

/// What the importing child sends in the tree's place when it was not asked for it.
const NOT_READ: &str = "-";

/// What the importing child sends back: the topology as fixture JSON, or its error.
fn encode(result: Result<Topology, TopologyError>) -> Vec<u8> {
    let (tag, body) = match result {
        // The fixture, then hwloc's tree after a NUL (which JSON text never holds), or
        // `-` where it was not asked for.
        Ok(t) => (
            b'T',
            format!(
                "{}\0{}",
                fixture::dump_json(&t),
                match t.hwloc_tree() {
                    HwlocTree::Read(tree) => tree.encode(),
                    _ => NOT_READ.to_string(),
                }
            ),
        ),
        Err(TopologyError::Inconsistent { error, .. }) => (b'I', error.message),
        Err(TopologyError::XmlRejected { detail, .. }) => (b'R', detail),
        Err(e) => (b'R', e.to_string()),
    };
    let mut out = vec![tag];
    out.extend_from_slice(body.as_bytes());
    out
}

fn decode(file: &str, bytes: &[u8]) -> Result<Topology, TopologyError> {
    let text = String::from_utf8_lossy(bytes.get(1..).unwrap_or_default());
    let cannot_read_back = |e: String| TopologyError::XmlRejected {
        file: file.to_string(),
        detail: format!("numaplan cannot read back its conversion of it: {e}"),
    };
    match bytes.first() {
        Some(b'T') => {
            let (fixture, tree) = text.split_once('\0').unwrap_or((&text, ""));
            let mut topo =
                fixture::load(file, fixture).map_err(|e| cannot_read_back(e.to_string()))?;
            let tree = match tree {
                NOT_READ => HwlocTree::NotRead,
                text => HwlocTree::Read(
                    CpuTree::decode(text).ok_or_else(|| cannot_read_back("hwloc's tree".into()))?,
                ),
            };
            topo.set_hwloc_tree(tree);
            Ok(topo)
        }
        Some(b'I') => Err(TopologyError::Inconsistent {
            file: file.to_string(),
            error: model::model_error(model::Subject::Machine, text),
        }),
        _ => Err(TopologyError::XmlRejected {
            file: file.to_string(),
            detail: text.into_owned(),
        }),
    }
}

/// hwloc's import and numaplan's conversion, in the importing child.
fn import_xml(
    file: &str,
    name: &str,
    text: &str,
    reading: Reading,
) -> Result<Topology, TopologyError> {
    let rejected = |detail: String| TopologyError::XmlRejected {
        file: file.to_string(),
        detail,
    };
    // An export's `allowed_cpuset` (a cgroup, `lstopo --allow`) narrows only the allowed set:
    // without INCLUDE_DISALLOWED hwloc would delete the other CPUs, changing cores, node CPU
    // lists and GPU localities.
    let topo = hwlocality::Topology::builder()
        .from_xml(text)
        .map_err(|_| rejected("the XML is malformed or truncated".into()))?
        .with_flags(BuildFlags::INCLUDE_DISALLOWED)
        .map_err(|e| rejected(e.to_string()))?
        .with_io_type_filter(TypeFilter::KeepImportant)
        .map_err(|e| rejected(e.to_string()))?
        .build()
        // hwloc's own XML parser finds a malformed or truncated file while loading it.
        .map_err(|_| rejected("the XML is malformed or truncated".into()))?;
    // Named as hwloc names the machine (its root's HostName), else after the file.
    let host = self::text(topo.root_object().info("HostName")).filter(|h| !h.trim().is_empty());
    let parts = convert(
        &topo,
        host.as_deref().unwrap_or(name),
        &format!("imported from the hwloc XML export `{file}`"),
        &[],
        reading,
    );
    Topology::build(parts).map_err(|error| TopologyError::Inconsistent {
        file: file.to_string(),
        error,
    })
}
