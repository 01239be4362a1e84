//! A planned job of several groups (`groups:`): each group's plan, which carries its place in
//! the job (`place::GroupPlace`: its name, first global rank and node); the job's world size.
//! `resolve::groups` makes it, `plan_file::groups` writes and reads it.

use super::Plan;
use super::place::GroupPlace;

/// A planned job of several groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupedPlan {
    pub name: Option<String>,
    pub world_size: u64,
    /// In spec order; each plan's `group` is its place.
    pub groups: Vec<Plan>,
}

impl GroupedPlan {
    /// The groups with their places.
    pub fn places(&self) -> impl Iterator<Item = (&GroupPlace, &Plan)> {
        self.groups
            .iter()
            .filter_map(|p| Some((p.group.as_ref()?, p)))
    }
}
