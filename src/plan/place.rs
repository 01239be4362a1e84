//! Where a group's plan sits in a job of several groups (`groups:`): what a rank of it needs to
//! know of the rest of the world (its global rank and node, the world's size).

/// A group's place in its job, on each group's `Plan` (`None` for a job of one group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlace {
    pub name: String,
    /// Its index among the job's groups, in spec order.
    pub index: usize,
    /// The global rank of its node 0's local rank 0.
    pub first_rank: u64,
    /// The job's node number of its node 0: the groups before it have this many nodes.
    pub first_node: u64,
    /// Ranks and nodes of the whole job.
    pub world_size: u64,
    pub world_nodes: u64,
}

impl GroupPlace {
    /// The group's global ranks, given how many it has: `ranks 16-19`, `rank 20`.
    pub fn span(&self, ranks: u64) -> String {
        match ranks {
            0 => "no ranks".to_string(),
            1 => format!("rank {}", self.first_rank),
            n => format!("ranks {}-{}", self.first_rank, self.first_rank + n - 1),
        }
    }
}
