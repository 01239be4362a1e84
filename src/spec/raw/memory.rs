//! `memory:` as written: the policy and its nodes in any of the forms a user writes them.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryOptions {
    /// `preferred` (default for `auto`), `bind`, `interleave` or `none` (default for the
    /// compatibility policies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<MemPolicyName>,
    /// The NUMA nodes of the policy: a node list ("0,2"), `local` (each rank's home node),
    /// `local+N` (the node whose id is the home node's plus N: the HBM node of a Xeon Max in
    /// flat mode is `local+8`), or several of these separated by commas; default `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "local"))]
    pub nodes: Option<NodeList>,
    /// Whether a rank that cannot have its memory policy (a container's seccomp profile
    /// without `CAP_SYS_NICE`) is an error before anything starts (`true`), or runs with its
    /// CPUs bound and no memory policy, with warning W0217 (`false`). Default: `true` for a
    /// policy written here, `false` for the family's default one, which no one asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// `memory.nodes` as written: a string (`"0,2"`, `"local+8"`), one node number, or a list of
/// either (`[0, 2]`, `[local, local+8]`), kept as the comma-separated text `validate/` parses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NodeList(pub String);

impl<'de> Deserialize<'de> for NodeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor, not an untagged enum: an error then carries the key's own path.
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a NUMA node list such as \"0,2\", \"local\" or \"local+8\", or a list of them",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeList, E> {
                Ok(NodeList(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeList, E> {
                Ok(NodeList(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeList, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<NodeItem>()? {
                    items.push(item.0);
                }
                Ok(NodeList(items.join(",")))
            }
        }
        d.deserialize_any(V)
    }
}

/// One element of a `memory.nodes` list: a node number or a word (`local+8`).
struct NodeItem(String);

impl<'de> Deserialize<'de> for NodeItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NodeItem;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a NUMA node number, `local` or `local+N`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeItem, E> {
                Ok(NodeItem(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeItem, E> {
                Ok(NodeItem(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for NodeList {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NodeList".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let item = "([0-9]+(-[0-9]+(:[0-9]+)?)?|local(\\+[0-9]+)?)";
        schemars::json_schema!({
            "description": "NUMA nodes: \"0,2\", \"0-3\", \"local\", \"local+8\", one node number, or a list of these.",
            "anyOf": [
                {"type": "string", "pattern": format!("^\\s*{item}\\s*(,\\s*{item}\\s*)*$")},
                {"type": "integer", "minimum": 0},
                {"type": "array", "minItems": 1, "items": {"anyOf": [
                    {"type": "string", "pattern": format!("^\\s*{item}\\s*$")},
                    {"type": "integer", "minimum": 0}
                ]}}
            ]
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MemPolicyName {
    /// MPOL_PREFERRED: pages on the node while it has free memory, then elsewhere.
    Preferred,
    /// MPOL_BIND: pages only on the nodes (allocation fails past them).
    Bind,
    /// MPOL_INTERLEAVE: pages round-robin over the nodes.
    Interleave,
    /// The inherited policy (the kernel's default: the node of the CPU that touches a page).
    None,
}
