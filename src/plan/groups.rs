//! A planned job of several groups (`groups:`): each group's plan, its name and its first
//! global rank; the job's world size. `resolve::groups` makes it, `plan_file::groups` writes it.

use super::Plan;

/// One group of a planned job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedGroup {
    pub name: String,
    /// The global rank of its node 0's local rank 0.
    pub first_rank: u64,
    pub plan: Plan,
}

/// A planned job of several groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupedPlan {
    pub name: Option<String>,
    pub world_size: u64,
    pub groups: Vec<PlannedGroup>,
}
