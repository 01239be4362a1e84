//! Where a plan sits in its job: every plan has a place (a spec without `groups:` is a job of
//! one group, its first rank 0), and a plan of a job of several groups (`groups:`) also its
//! group's name. What a rank needs to know of the rest of the world: its global rank and node,
//! the world's size.

use super::MachineShape;

/// A plan's place in its job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Its group in a job of several groups; `None` for the one group of a spec without
    /// `groups:`, which has no name.
    pub group: Option<Group>,
    /// The global rank of its node 0's local rank 0.
    pub first_rank: u64,
    /// The job's node number of its node 0: the groups before it have this many nodes.
    pub first_node: u64,
    /// Ranks and nodes of the whole job.
    pub world_size: u64,
    pub world_nodes: u64,
}

/// A group of a job of several groups: its name and its index among them, in spec order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub index: usize,
}

impl Place {
    /// The place of a job of one group: all of the job, `nodes` x `ranks_per_node` ranks.
    pub fn whole_job(nodes: u32, ranks_per_node: u32) -> Place {
        Place {
            group: None,
            first_rank: 0,
            first_node: 0,
            world_size: u64::from(nodes) * u64::from(ranks_per_node),
            world_nodes: u64::from(nodes),
        }
    }

    /// The plan's global ranks, given how many it has: `ranks 16-19`, `rank 20`.
    pub fn span(&self, ranks: u64) -> String {
        match ranks {
            0 => "no ranks".to_string(),
            1 => format!("rank {}", self.first_rank),
            n => format!("ranks {}-{}", self.first_rank, self.first_rank + n - 1),
        }
    }
}

/// A group of a plan of several as `rank::group` finds a node's and its errors list them:
/// its name, node count and machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub name: String,
    pub nodes: u32,
    pub topology: String,
    pub shape: MachineShape,
}
