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
    let mut from = 0;
    while let Some(lt) = text[from..].find('<') {
        let at = from + lt;
        from = at + 1;
        if !text[at..].starts_with("<object ") {
            continue;
        }
        // One pass over the tag: exports have tens of thousands of objects.
        let (o, end) = ObjectTag::read(text, at + "<object ".len());
        from = end;
        let kind = o.kind.unwrap_or_default();
        if let Some(id) = o.gp_index {
            largest_id = largest_id.max(id.parse::<u64>().unwrap_or(u64::MAX));
        }
        if kind == "PU"
            && let Some(index) = o.os_index
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
        for (set, value) in [
            ("cpuset", o.cpuset),
            ("complete_cpuset", o.complete_cpuset),
            ("allowed_cpuset", o.allowed_cpuset),
            ("online_cpuset", o.online_cpuset),
        ] {
            if value.is_some_and(|v| v.len() > widest) {
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
        for (set, has, complete, has_complete) in [
            ("cpuset", o.cpuset, "complete_cpuset", o.complete_cpuset),
            ("nodeset", o.nodeset, "complete_nodeset", o.complete_nodeset),
        ] {
            if has.is_some() && has_complete.is_none() {
                return refuse(
                    at,
                    format!("the {kind} object has a {set} but no {complete}"),
                );
            }
        }
    }
    Ok(largest_id)
}

/// The attributes of an `<object ...>` tag the precheck reads (the first of each name).
#[derive(Default)]
struct ObjectTag<'a> {
    kind: Option<&'a str>,
    gp_index: Option<&'a str>,
    os_index: Option<&'a str>,
    cpuset: Option<&'a str>,
    complete_cpuset: Option<&'a str>,
    allowed_cpuset: Option<&'a str>,
    online_cpuset: Option<&'a str>,
    nodeset: Option<&'a str>,
    complete_nodeset: Option<&'a str>,
}

impl<'a> ObjectTag<'a> {
    /// The tag whose attributes start at `from` in `text`, and where it ends (its `>`).
    fn read(text: &'a str, from: usize) -> (ObjectTag<'a>, usize) {
        let mut o = ObjectTag::default();
        let mut attrs = Attributes { text, at: from };
        for (name, value) in attrs.by_ref() {
            let slot = match name {
                "type" => &mut o.kind,
                "gp_index" => &mut o.gp_index,
                "os_index" => &mut o.os_index,
                "cpuset" => &mut o.cpuset,
                "complete_cpuset" => &mut o.complete_cpuset,
                "allowed_cpuset" => &mut o.allowed_cpuset,
                "online_cpuset" => &mut o.online_cpuset,
                "nodeset" => &mut o.nodeset,
                "complete_nodeset" => &mut o.complete_nodeset,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        (o, attrs.at)
    }
}

/// The `name="value"` attributes of an XML tag from `at` to its `>`, in order (hwloc writes no
/// quote inside a value). Each value is skipped by one search for its closing quote: a scan of
/// the tag per attribute, or a string searcher set up for each, took a tenth of an import of
/// an export of 2,048 CPUs. `at` ends at the tag's `>` (the text's end if there is none).
struct Attributes<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        loop {
            let Some(eq) = text[self.at..].find(['=', '>']).map(|e| self.at + e) else {
                self.at = text.len();
                return None;
            };
            if bytes[eq] == b'>' {
                self.at = eq;
                return None;
            }
            if bytes.get(eq + 1) != Some(&b'"') {
                self.at = eq + 1;
                continue;
            }
            let segment = &text[self.at..eq];
            let name = segment.rfind(char::is_whitespace).map_or(segment, |w| {
                let width = segment[w..].chars().next().map_or(1, char::len_utf8);
                &segment[w + width..]
            });
            let start = eq + 2;
            let Some(len) = text[start..].find('"') else {
                self.at = text.len();
                return None;
            };
            self.at = start + len + 1;
            return Some((name, &text[start..start + len]));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An object tag's attributes are read to its `>` (a `>` inside a value is the value's), the
    /// first of a name counts, a name is what follows the last white space before its `=`, and
    /// the next tag starts where the object's ends.
    #[test]
    fn an_object_tag_is_read_to_its_end() {
        let text = "<object type=\"PU\" junk gp_index=\"7\" cpuset=\"0x1>\" gp_index=\"9\"/><info name=\"x\"/>";
        let (o, end) = ObjectTag::read(text, "<object ".len());
        assert_eq!(o.kind, Some("PU"));
        assert_eq!(o.gp_index, Some("7"));
        assert_eq!(o.cpuset, Some("0x1>"));
        assert_eq!(o.complete_cpuset, None);
        assert_eq!(&text[end..end + 2], "><");
        // No closing quote, or no `>`: the tag runs to the text's end.
        let (o, end) = ObjectTag::read("<object type=\"PU", "<object ".len());
        assert_eq!((o.kind, end), (None, 16));
    }

    /// A cpuset without its complete set is refused at the object's line and column.
    #[test]
    fn an_object_without_its_complete_cpuset_is_refused_where_it_starts() {
        let text = "<topology version=\"2.0\">\n  <object type=\"Package\" cpuset=\"0x1\"/>\n";
        match precheck_xml("x.xml", text) {
            Err(TopologyError::XmlObjectRefused { line, col, .. }) => {
                assert_eq!((line, col), (2, 3));
            }
            other => panic!("{other:?}"),
        }
    }
}
