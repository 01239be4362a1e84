//! hwloc 3.0 XML exports, translated into the 2.x format that the linked libhwloc 2.x imports.
//! hwloc 3.0 is what new systems export; its format differs from 2.x in a few places, and
//! only those are rewritten (hwloc's own importer, `topology-xml.c`, reads 2.x files into 3.0
//! the other way round):
//!
//! - `<topology version="3.0">` becomes 2.0;
//! - the topology's own `<info>` (Backend, HostName, Architecture...) go back to the root
//!   object, where 2.x keeps them;
//! - PCI locality: 3.0 puts host bridges under the root object and says in
//!   `<pci_locality domain bus_min bus_max cpuset>` which CPUs each bus range is close to; 2.x
//!   says it by where the bridge sits. Each top-level bridge or PCI device moves under the
//!   highest object whose cpuset is its range's (none: it stays, of unknown locality);
//! - an OS device's `osdev_type` is a bit set in 3.0 (GPU|COPROC for NVML) and one kind in
//!   2.x (GPU, COPROC for CUDA, OpenCL and Level Zero, Net, OpenFabrics, DMA, Block);
//! - what 2.x does not know is left out: `<pci_locality>`, `<memtier>`, the topology-level
//!   `<page_type>`, `<memattr>` (numaplan reads distances, not memory attributes), and the
//!   objects' `id` and `cache_inclusive` attributes (2.x would warn about each).

use std::fmt::Write as _;

use roxmltree::{Document, Node, ParsingOptions};

use super::error::TopologyError;

/// `text` (an hwloc 3.x export) in the 2.x format.
pub fn to_v2(file: &str, text: &str) -> Result<String, TopologyError> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc =
        Document::parse_with_options(text, options).map_err(|e| TopologyError::XmlRejected {
            file: file.to_string(),
            detail: format!("it is not well-formed XML: {e}"),
        })?;
    let topology = doc.root_element();
    let localities: Vec<Locality> = topology
        .children()
        .filter(|n| n.has_tag_name("pci_locality"))
        .filter_map(Locality::parse)
        .collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str("<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n");
    let topology_infos: Vec<Node> = topology
        .children()
        .filter(|n| n.has_tag_name("info"))
        .collect();
    for child in topology.children().filter(Node::is_element) {
        match child.tag_name().name() {
            "object" => {
                let moves = io_moves(child, &localities);
                write_object(&mut out, child, &topology_infos, &moves, true);
            }
            "info" | "pci_locality" | "memtier" | "page_type" | "memattr" => {}
            _ => write_plain(&mut out, child),
        }
    }
    out.push_str("</topology>\n");
    Ok(out)
}

/// One `<pci_locality>`: PCI buses `bus_min..=bus_max` of `domain` are close to `cpuset`.
struct Locality {
    domain: u32,
    buses: std::ops::RangeInclusive<u32>,
    cpuset: Vec<u32>,
}

impl Locality {
    fn parse(node: Node) -> Option<Locality> {
        let hex = |name: &str| {
            u32::from_str_radix(node.attribute(name)?.trim_start_matches("0x"), 16).ok()
        };
        Some(Locality {
            domain: hex("domain")?,
            buses: hex("bus_min")?..=hex("bus_max")?,
            cpuset: bitmap(node.attribute("cpuset")?),
        })
    }
}

/// An hwloc bitmap (`0xffffffff,0x00000003`) as its 32-bit words, most significant first,
/// without leading zero words, so that equal sets compare equal however they were written.
fn bitmap(text: &str) -> Vec<u32> {
    let words: Vec<u32> = text
        .split(',')
        .map(|w| u32::from_str_radix(w.trim().trim_start_matches("0x"), 16).unwrap_or(0))
        .collect();
    let first = words.iter().position(|&w| w != 0).unwrap_or(words.len());
    words[first..].to_vec()
}

/// The PCI domain and bus of a top-level I/O object: a host bridge's secondary bus
/// (`bridge_pci="0000:[2b-3b]"`), or a PCI device's own (`pci_busid="0000:2b:00.0"`).
fn domain_and_bus(node: Node) -> Option<(u32, u32)> {
    let text = node
        .attribute("bridge_pci")
        .or_else(|| node.attribute("pci_busid"))?;
    let (domain, rest) = text.split_once(':')?;
    let bus = rest.trim_start_matches('[');
    let bus = &bus[..bus.find([':', '-', ']'])?];
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u32::from_str_radix(bus, 16).ok()?,
    ))
}

/// The I/O object and the object it moves under.
type Move<'a> = (Node<'a, 'a>, Node<'a, 'a>);

/// For the root's I/O children with a known locality, the object they move under: the highest
/// one whose cpuset is the locality's (the first in document order: a parent comes before the
/// children that share its cpuset).
fn io_moves<'a>(root: Node<'a, 'a>, localities: &[Locality]) -> Vec<Move<'a>> {
    let located: Vec<(Node, &Locality)> = root
        .children()
        .filter(|n| is_io(*n))
        .filter_map(|io| {
            let (domain, bus) = domain_and_bus(io)?;
            let locality = localities
                .iter()
                .find(|l| l.domain == domain && l.buses.contains(&bus))?;
            Some((io, locality))
        })
        .collect();
    if located.is_empty() {
        return Vec::new();
    }
    // One pass over the tree, not one per I/O object (a 4096-CPU machine has thousands of
    // objects and dozens of host bridges).
    let mut by_cpuset: std::collections::HashMap<Vec<u32>, Node> = std::collections::HashMap::new();
    for n in root
        .descendants()
        .filter(|n| n.has_tag_name("object") && !is_io(*n) && *n != root)
    {
        if let Some(c) = n.attribute("cpuset") {
            by_cpuset.entry(bitmap(c)).or_insert(n);
        }
    }
    located
        .into_iter()
        .filter_map(|(io, l)| Some((io, *by_cpuset.get(&l.cpuset)?)))
        .collect()
}

fn is_io(node: Node) -> bool {
    node.has_tag_name("object")
        && matches!(
            node.attribute("type"),
            Some("Bridge" | "PCIDev" | "OSDev" | "Misc")
        )
}

/// Writes `node` and its subtree; the root gets the topology's infos first, and objects
/// gain the I/O subtrees that move under them (`moves`) and lose those that move away.
fn write_object(out: &mut String, node: Node, root_infos: &[Node], moves: &[Move], is_root: bool) {
    let attribute = |name: &str, value: &str| match name {
        "osdev_type" => Some(v2_osdev_type(node, value)),
        // 3.0's own: an object's XML id, whether a cache is inclusive.
        "id" | "cache_inclusive" => None,
        _ => Some(value.to_string()),
    };
    let gains = moves.iter().any(|(_, target)| *target == node);
    let whole = is_empty(node) && !gains && (!is_root || root_infos.is_empty());
    open_tag(out, node, attribute, whole);
    if whole {
        return;
    }
    if is_root {
        for info in root_infos {
            write_plain(out, *info);
        }
    }
    for child in node.children() {
        if child.is_text() {
            escape(out, child.text().unwrap_or(""));
            continue;
        }
        if !child.is_element() || (is_root && moves.iter().any(|(io, _)| *io == child)) {
            continue;
        }
        if child.has_tag_name("object") {
            write_object(out, child, &[], moves, false);
        } else {
            write_plain(out, child);
        }
    }
    for (io, _) in moves.iter().filter(|(_, target)| *target == node) {
        write_object(out, *io, &[], moves, false);
    }
    let _ = write!(out, "</{}>", node.tag_name().name());
}

/// 3.0's bit set (storage 1, memory 2, GPU 4, coprocessor 8, network 16, OpenFabrics 32, DMA
/// 64) as 2.x's kind (block 0, GPU 1, network 2, OpenFabrics 3, DMA 4, coprocessor 5).
fn v2_osdev_type(node: Node, value: &str) -> String {
    let bits: u64 = value.parse().unwrap_or(0);
    let compute_api = matches!(
        node.attribute("subtype"),
        Some("CUDA" | "OpenCL" | "LevelZero")
    );
    let kind = if bits & 32 != 0 {
        3
    } else if bits & 16 != 0 {
        2
    } else if bits & 8 != 0 && compute_api {
        5
    } else if bits & 4 != 0 {
        1
    } else if bits & 8 != 0 {
        5
    } else if bits & 64 != 0 {
        4
    } else {
        0
    };
    kind.to_string()
}

/// An element other than an object, as it is.
fn write_plain(out: &mut String, node: Node) {
    let whole = is_empty(node);
    open_tag(out, node, |_, value| Some(value.to_string()), whole);
    if whole {
        return;
    }
    for child in node.children() {
        if child.is_text() {
            escape(out, child.text().unwrap_or(""));
        } else if child.is_element() {
            write_plain(out, child);
        }
    }
    let _ = write!(out, "</{}>", node.tag_name().name());
}

/// Whether an element has no content but blanks.
fn is_empty(node: Node) -> bool {
    node.children()
        .all(|c| !c.is_element() && (!c.is_text() || c.text().is_none_or(|t| t.trim().is_empty())))
}

/// Writes `node`'s start tag, or with `whole` the element without content (`<support .../>`),
/// as hwloc writes it. hwloc 2.x's own XML parser takes an end tag after `<support>` for the
/// end of the document and silently drops everything after it: the CPU kinds, which hwloc 3
/// writes after the supports.
fn open_tag(
    out: &mut String,
    node: Node,
    value: impl Fn(&str, &str) -> Option<String>,
    whole: bool,
) {
    let _ = write!(out, "<{}", node.tag_name().name());
    for attr in node.attributes() {
        if let Some(v) = value(attr.name(), attr.value()) {
            let _ = write!(out, " {}=\"", attr.name());
            escape(out, &v);
            out.push('"');
        }
    }
    out.push_str(if whole { "/>" } else { ">" });
}

fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two packages; a host bridge with a GPU under the root, which `<pci_locality>` places
    /// near package 1; a topology-level info; 3.0-only elements and attributes.
    const V3: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="3.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" gp_index="1" id="obj1">
    <object type="Package" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" gp_index="2" id="obj2">
      <object type="L3Cache" cpuset="0x00000001" cache_size="1" depth="3" cache_inclusive="1" gp_index="3"/>
    </object>
    <object type="Package" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" gp_index="4"/>
    <object type="Bridge" gp_index="5" bridge_type="0-1" depth="0" bridge_pci="0000:[b0-b7]">
      <object type="PCIDev" gp_index="6" pci_busid="0000:b7:00.0" pci_type="0302 [10de:1db8] [10de:131d] a1 00">
        <object type="OSDev" gp_index="7" name="nvml0" osdev_type="12"/>
        <object type="OSDev" gp_index="8" name="cuda0" subtype="CUDA" osdev_type="12"/>
      </object>
    </object>
    <object type="Bridge" gp_index="9" bridge_type="0-1" depth="0" bridge_pci="0001:[00-01]"/>
  </object>
  <memtier nodeset="0x1"/>
  <pci_locality domain="0x0" bus_min="0xb0" bus_max="0xb7" cpuset="0x2"/>
  <info name="HostName" value="a&amp;b"/>
</topology>
"#;

    fn translated() -> String {
        to_v2("t.xml", V3).unwrap()
    }

    #[test]
    fn bridges_move_under_the_object_of_their_locality() {
        let text = translated();
        let doc = Document::parse_with_options(
            &text,
            ParsingOptions {
                allow_dtd: true,
                ..ParsingOptions::default()
            },
        )
        .unwrap();
        let parent_of = |gp: &str| {
            let node = doc
                .descendants()
                .find(|n| n.attribute("gp_index") == Some(gp))
                .unwrap();
            node.parent_element()
                .unwrap()
                .attribute("gp_index")
                .unwrap()
                .to_string()
        };
        // cpuset 0x2 (written 0x00000002 on the package): package 1.
        assert_eq!(parent_of("5"), "4");
        // No locality for domain 1: it stays under the root, of unknown locality.
        assert_eq!(parent_of("9"), "1");
    }

    #[test]
    fn the_rest_becomes_2x() {
        let text = translated();
        assert!(text.contains(r#"<topology version="2.0">"#));
        // The topology's info goes to the root object, escaped again.
        assert!(
            text.contains(r#"gp_index="1"><info name="HostName" value="a&amp;b"/>"#),
            "{text}"
        );
        for gone in ["memtier", "pci_locality", "cache_inclusive", " id="] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        // NVML's GPU|COPROC is a 2.x GPU; CUDA's a 2.x coprocessor.
        assert!(text.contains(r#"name="nvml0" osdev_type="1""#), "{text}");
        assert!(
            text.contains(r#"name="cuda0" subtype="CUDA" osdev_type="5""#),
            "{text}"
        );
    }

    #[test]
    fn elements_without_content_are_written_whole() {
        // hwloc 3's lstopo writes `<support>` before the CPU kinds; hwloc 2.x's parser ends the
        // document at a `</support>` end tag and loses the kinds after it.
        let v3 = r#"<topology version="3.0">
  <object type="Machine" os_index="0" cpuset="0x3" complete_cpuset="0x3" gp_index="1"/>
  <support name="discovery.pu"/>
  <support name="custom.exported_support"></support>
  <cpukind cpuset="0x1" forced_efficiency="0">
    <info name="CoreType" value="IntelAtom"/>
  </cpukind>
</topology>"#;
        let text = to_v2("t.xml", v3).unwrap();
        assert!(
            text.contains(
                r#"<support name="discovery.pu"/><support name="custom.exported_support"/><cpukind"#
            ),
            "{text}"
        );
        assert!(!text.contains("</support>"), "{text}");
        assert!(text.contains(r#"gp_index="1"/>"#), "a leaf object: {text}");
        assert!(text.contains(r#"value="IntelAtom"/>"#), "{text}");
        assert!(text.contains("</cpukind>"), "{text}");
    }

    #[test]
    fn osdev_kinds() {
        let doc = Document::parse(r#"<object subtype="OpenCL"/>"#).unwrap();
        let opencl = doc.root_element();
        let doc = Document::parse("<object/>").unwrap();
        let plain = doc.root_element();
        let cases = [
            (plain, "1", "0"),   // storage: block
            (plain, "2", "0"),   // memory (dax): block
            (plain, "4", "1"),   // GPU (DRM card)
            (opencl, "12", "5"), // OpenCL GPU: coprocessor
            (plain, "8", "5"),   // coprocessor
            (plain, "16", "2"),  // network
            (plain, "48", "3"),  // network + OpenFabrics
            (plain, "64", "4"),  // DMA
        ];
        for (node, bits, kind) in cases {
            assert_eq!(v2_osdev_type(node, bits), kind, "{bits}");
        }
    }

    #[test]
    fn bitmaps_compare_by_value() {
        assert_eq!(bitmap("0x00000002"), bitmap("0x2"));
        assert_eq!(bitmap("0x0,0x00000003"), bitmap("0x3"));
        assert_ne!(bitmap("0x1,0x0"), bitmap("0x1"));
    }

    #[test]
    fn malformed_xml_is_an_error() {
        assert!(matches!(
            to_v2("t.xml", "<topology version=\"3.0\"><object"),
            Err(TopologyError::XmlRejected { .. })
        ));
    }
}
