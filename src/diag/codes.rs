//! Error codes and their long explanations (`numaplan codes E0301`).
//!
//! E01xx spec, E02xx resolve, E03xx topology, E04xx emit/exec and the environment.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Code(pub &'static str);

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

pub const E0300_TOPOLOGY_READ: Code = Code("E0300");
pub const E0301_YAML_SYNTAX: Code = Code("E0301");
pub const E0302_FIXTURE_INVALID: Code = Code("E0302");
pub const E0303_XML_NOT_HWLOC: Code = Code("E0303");
pub const E0304_XML_VERSION: Code = Code("E0304");
pub const E0305_XML_REJECTED: Code = Code("E0305");
pub const E0306_TOPOLOGY_INCONSISTENT: Code = Code("E0306");
pub const E0307_DISCOVER: Code = Code("E0307");
pub const E0400_OUTPUT_WRITE: Code = Code("E0400");
pub const E0401_UNKNOWN_CODE: Code = Code("E0401");

/// Every code with its explanation, in order.
pub const ALL: &[(Code, &str)] = &[
    (
        E0300_TOPOLOGY_READ,
        "The topology file could not be read (missing, unreadable, or not UTF-8 text).\n\
         Check the path given to `--topology` or the spec's `topology:` key. Exit code 3.",
    ),
    (
        E0301_YAML_SYNTAX,
        "The file is not well-formed YAML, or it is truncated. The message carries the parser's \
         position; fix the text there. A fixture written by `numaplan topo --format yaml` is \
         always well-formed.",
    ),
    (
        E0302_FIXTURE_INVALID,
        "The YAML is well-formed but is not a valid numaplan topology fixture: an unknown key, a \
         missing required key, a value of the wrong type, a malformed CPU list or PCI address, or \
         facts that contradict each other (a node's `cpus` that differ from its L3 groups, a CPU \
         in two cores). `schemas/topology.schema.json` documents the format.",
    ),
    (
        E0303_XML_NOT_HWLOC,
        "The XML file is not an hwloc topology export. NCCL's topology files (root element \
         `<system>`, as shipped for AWS and Azure instances) and other XML describe only part of \
         a machine. Produce an hwloc export on the machine with `lstopo --of xml machine.xml`, \
         or write a numaplan fixture.",
    ),
    (
        E0304_XML_VERSION,
        "The hwloc XML was written by a newer hwloc major version than the library numaplan is \
         linked with can import (hwloc 2.x reads the 1.x and 2.x formats). Re-export it with \
         hwloc 2.x (`lstopo --of xml`), or with `--export-xml-flags v2` where the newer lstopo \
         offers it.",
    ),
    (
        E0305_XML_REJECTED,
        "hwloc refused to import the XML: it is malformed or truncated. Re-export it with \
         `lstopo --of xml`.",
    ),
    (
        E0306_TOPOLOGY_INCONSISTENT,
        "The topology source loaded but describes an impossible machine: no CPUs, a CPU in two \
         cores, a device on a NUMA node that does not exist. The message names the part.",
    ),
    (
        E0307_DISCOVER,
        "hwloc could not read the machine numaplan runs on (no /sys, a restricted container). \
         Use a fixture with `--topology FILE` instead, made where discovery works with \
         `numaplan topo --format yaml -o node.yaml`. Exit code 3.",
    ),
    (
        E0400_OUTPUT_WRITE,
        "The output file could not be written. numaplan writes to a temporary file beside the \
         target and renames it, so a failure leaves neither a partial nor a stale file. Exit \
         code 3.",
    ),
    (
        E0401_UNKNOWN_CODE,
        "`numaplan codes CODE` was given a code that does not exist; `numaplan codes` lists all.",
    ),
];

pub fn explain(code: &str) -> Option<&'static str> {
    ALL.iter()
        .find(|(c, _)| c.0.eq_ignore_ascii_case(code))
        .map(|(_, text)| *text)
}
