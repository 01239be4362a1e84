//! A memory policy as `/proc/PID/numa_maps` shows it, typed: what `verify` compares a rank's
//! memory policy by, and what its JSON reports.

use std::fmt;

use crate::cpuset::CpuSet;
use crate::ids::{NodeId, node_list};

/// A memory policy as numa_maps spells it (`bind:3`, `interleave:0-3`, `default`): the kernel's
/// word for the mode, with its flags (`bind=static`), and the nodes after the colon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownPolicy {
    pub mode: String,
    pub nodes: Vec<NodeId>,
}

impl ShownPolicy {
    /// numa_maps' text as a policy; text whose node list does not read is all mode, so that it
    /// prints as it was read.
    pub fn parse(text: &str) -> ShownPolicy {
        let whole = || ShownPolicy {
            mode: text.to_string(),
            nodes: Vec::new(),
        };
        let Some((mode, list)) = text.rsplit_once(':') else {
            return whole();
        };
        match list.parse::<CpuSet>() {
            Ok(nodes) if !nodes.is_empty() && node_list(&ids(&nodes)) == list => ShownPolicy {
                mode: mode.to_string(),
                nodes: ids(&nodes),
            },
            _ => whole(),
        }
    }
}

fn ids(nodes: &CpuSet) -> Vec<NodeId> {
    nodes.iter().map(NodeId).collect()
}

impl fmt::Display for ShownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.nodes.is_empty() {
            true => f.write_str(&self.mode),
            false => write!(f, "{}:{}", self.mode, node_list(&self.nodes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_reads_into_mode_and_nodes_and_prints_as_read() {
        let shown = |text: &str| {
            let p = ShownPolicy::parse(text);
            assert_eq!(p.to_string(), text);
            (p.mode, p.nodes.iter().map(|n| n.0).collect::<Vec<_>>())
        };
        assert_eq!(shown("bind:3"), ("bind".into(), vec![3]));
        assert_eq!(
            shown("interleave:0-2,5"),
            ("interleave".into(), vec![0, 1, 2, 5])
        );
        assert_eq!(shown("bind=static:1"), ("bind=static".into(), vec![1]));
        assert_eq!(
            shown("prefer (many):0-1"),
            ("prefer (many)".into(), vec![0, 1])
        );
        assert_eq!(shown("default"), ("default".into(), vec![]));
        // Not the kernel's spelling of a list: kept whole.
        assert_eq!(shown("bind:1,0"), ("bind:1,0".into(), vec![]));
        assert_eq!(shown("weird:"), ("weird:".into(), vec![]));
    }
}
