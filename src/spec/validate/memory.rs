//! The memory side of the spec (`memory:`): the policy and, for an explicit one, its nodes.

use super::Problems;
use crate::cpuset::{CpuSet, CpuSetParseError};
use crate::ids::NodeId;
use crate::spec::raw::{self, JobSpec};
use crate::spec::{MemPolicy, MemoryNode, MemorySpec};

pub(super) fn memory_spec(raw: &JobSpec, p: &mut Problems) -> MemorySpec {
    let memory = raw.memory.clone().unwrap_or_default();
    let nodes = match &memory.nodes {
        None => None,
        Some(text) => match parse_memory_nodes(&text.0) {
            Ok(nodes) if nodes.is_empty() => {
                p.add(
                    "memory.nodes",
                    "the node list is empty".into(),
                    "no nodes",
                    "remove `nodes` to use each rank's home node",
                );
                None
            }
            Ok(nodes) => Some(nodes),
            Err(e) => {
                p.add(
                    "memory.nodes",
                    format!("invalid node list `{}`: {e}", text.0),
                    "not a node list",
                    "write nodes such as \"0\", \"0,2\", \"local\", \"local,local+8\" or [local, local+8]",
                );
                None
            }
        },
    };
    let policy = memory.policy.map(|p| match p {
        raw::MemPolicyName::Preferred => MemPolicy::Preferred,
        raw::MemPolicyName::Bind => MemPolicy::Bind,
        raw::MemPolicyName::Interleave => MemPolicy::Interleave,
        raw::MemPolicyName::None => MemPolicy::None,
    });
    if policy == Some(MemPolicy::None) && nodes.is_some() {
        p.add(
            "memory.nodes",
            "`memory.nodes` has no effect with `policy: none`".into(),
            "ignored",
            "remove `nodes`, or choose `preferred`, `bind` or `interleave`",
        );
    }
    MemorySpec {
        policy,
        nodes,
        required: memory.required,
    }
}

/// `memory.nodes`: comma-separated node ids and ranges (`0-3`), `local` and `local+N`.
fn parse_memory_nodes(text: &str) -> Result<Vec<MemoryNode>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let node = if let Some(rest) = item.strip_prefix("local") {
            let offset = match rest.strip_prefix('+') {
                None if rest.is_empty() => 0,
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n
                    .parse::<u32>()
                    .map_err(|_| format!("`{item}`: the offset is too large"))?,
                _ => return Err(format!("`{item}` is neither `local` nor `local+N`")),
            };
            vec![MemoryNode::Local(offset)]
        } else {
            item.parse::<CpuSet>()
                .map_err(|e| match e {
                    CpuSetParseError::NotANumber(word) => {
                        format!("`{word}` is not a NUMA node number, `local` or `local+N`")
                    }
                    CpuSetParseError::TooLarge(n) => format!("there is no NUMA node {n}"),
                    e => e.to_string(),
                })?
                .iter()
                .map(|n| MemoryNode::Node(NodeId(n)))
                .collect()
        };
        for n in node {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}
