//! What numaplan checks in an hwloc XML export's text before hwloc reads it: that it is hwloc's
//! (not an NCCL topology file), its format version, and no object hwloc would crash on or take
//! minutes over. A scan of the text, one pass per object tag; hwloc itself is not involved.

use super::error::TopologyError;
use super::hwloc::linked_version;

/// What the scan found in an export that hwloc may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prechecked {
    /// The format's major version (1 or 2: hwloc imports it; 3: `hwloc_v3` translates it).
    pub major: u32,
    /// The largest object id (`gp_index`) of the file; `u64::MAX` for one that is not a number
    /// (`-1`). hwloc's consistency check marks every id in a bitmap as large as the largest.
    pub largest_id: u64,
}

/// Recognises XML that hwloc would import as an empty machine or refuse with a cryptic message.
pub fn precheck_xml(file: &str, text: &str) -> Result<Prechecked, TopologyError> {
    let root = text
        .split('<')
        .skip(1)
        .map(|t| t.trim_start())
        .find(|t| !t.starts_with('?') && !t.starts_with('!'));
    let Some(root) = root else {
        return Err(TopologyError::XmlRejected {
            file: file.to_string(),
            detail: "the file has no XML root element (empty or truncated)".into(),
        });
    };
    let tag: String = root
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    match tag.as_str() {
        "topology" => {}
        "system" => {
            return Err(TopologyError::NotHwloc {
                file: file.to_string(),
                found: "an NCCL topology file (root element `<system>`)".into(),
            });
        }
        other => {
            return Err(TopologyError::NotHwloc {
                file: file.to_string(),
                found: format!("XML with root element `<{other}>`"),
            });
        }
    }
    let head = &root[..root.find('>').unwrap_or(root.len())];
    // hwloc 1.x wrote no version.
    let version = attribute(head, "version").unwrap_or("1.0");
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major > 3 {
        return Err(TopologyError::XmlVersion {
            file: file.to_string(),
            version: version.to_string(),
            linked: linked_version(),
        });
    }
    let largest_id = precheck_objects(file, text)?;
    Ok(Prechecked { major, largest_id })
}

/// What hwloc must never see: objects it crashes on or that would make it allocate without
/// bound. Each `<object ...>` tag is checked for a PU numbered past numaplan's CPU cap (the
/// fixture loader's limit), a CPU set wider than that cap, and a cpuset or nodeset without its
/// complete set (libhwloc 2.9 segfaults on a cache, package or NUMA node without one). Not
/// complete: what it misses, the importing child contains. Returns the largest object id.
fn precheck_objects(file: &str, text: &str) -> Result<u64, TopologyError> {
    let refuse = |at: usize, detail: String| {
        let before = &text[..at];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Err(TopologyError::XmlObjectRefused {
            file: file.to_string(),
            detail,
            line: before.matches('\n').count() + 1,
            col: before[line_start..].chars().count() + 1,
        })
    };
    // A cpuset of MAX_CPU CPUs: MAX_CPU/32 words of `0x%08x,`.
    let widest = (crate::cpuset::MAX_CPU as usize / 32) * 11;
    let mut largest_id = 0;
    for (at, _) in text.match_indices("<object ") {
        let tag = &text[at..text[at..].find('>').map_or(text.len(), |e| at + e)];
        // One pass over the tag: exports have tens of thousands of objects.
        let attrs = attributes(tag);
        let get = |name: &str| {
            attrs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| *value)
        };
        let kind = get("type").unwrap_or_default();
        if let Some(id) = get("gp_index") {
            largest_id = largest_id.max(id.parse::<u64>().unwrap_or(u64::MAX));
        }
        if kind == "PU"
            && let Some(index) = get("os_index")
            && index
                .parse::<u64>()
                .map_or(true, |i| i > u64::from(crate::cpuset::MAX_CPU))
        {
            return refuse(
                at,
                format!(
                    "CPU {index} is larger than the supported maximum {}",
                    crate::cpuset::MAX_CPU
                ),
            );
        }
        for set in [
            "cpuset",
            "complete_cpuset",
            "allowed_cpuset",
            "online_cpuset",
        ] {
            if get(set).is_some_and(|v| v.len() > widest) {
                return refuse(
                    at,
                    format!(
                        "the {kind} object's {set} is wider than the supported {} CPUs",
                        crate::cpuset::MAX_CPU
                    ),
                );
            }
        }
        // Every export pairs them (hwloc 1.x and 2.x); libhwloc 2.9 segfaults without the
        // complete set (a cache, a package, a NUMA node).
        for (set, complete) in [
            ("cpuset", "complete_cpuset"),
            ("nodeset", "complete_nodeset"),
        ] {
            if get(set).is_some() && get(complete).is_none() {
                return refuse(
                    at,
                    format!("the {kind} object has a {set} but no {complete}"),
                );
            }
        }
    }
    Ok(largest_id)
}

/// The `name="value"` attributes of an XML tag, in order (hwloc writes no quote inside a value).
fn attributes(tag: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::with_capacity(12);
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let name = rest[..eq]
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or_default();
        let start = eq + 2;
        let Some(len) = rest[start..].find('"') else {
            break;
        };
        out.push((name, &rest[start..start + len]));
        rest = &rest[start + len + 1..];
    }
    out
}

/// The value of the attribute `name` in an XML tag (`cpuset` does not match `complete_cpuset`).
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let pattern = format!("{name}=\"");
    let (at, _) = tag
        .match_indices(&pattern)
        .find(|(i, _)| tag[..*i].ends_with(char::is_whitespace))?;
    let start = at + pattern.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}
