//! A planned job: its groups' plans, in spec order. A spec without `groups:` is a job of one
//! group (`Shape::OneGroup`), written and shown as a plan of one group always was; a spec with
//! `groups:` keeps that shape, even with one group. Every group's plan carries its place in the
//! job (`place::Place`: its first global rank and node, and of a job of several, its name).
//! `resolve::job` makes it, `plan_file` writes and reads it, `emit` launches it.

use super::Plan;
use super::place::Group;

/// How a job was asked for, and so how it is written and shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A spec without `groups:`: one group, unnamed.
    OneGroup,
    /// `groups:`: named groups, each with its place in the job.
    Groups,
}

/// A planned job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPlan {
    pub name: Option<String>,
    pub shape: Shape,
    /// The job's ranks: the sum over its groups.
    pub world_size: u64,
    /// In spec order, each with its place.
    pub groups: Vec<Plan>,
}

impl JobPlan {
    /// The groups of a job of several groups, with their names (none for a job of one).
    pub fn named(&self) -> impl Iterator<Item = (&Group, &Plan)> {
        self.groups.iter().filter_map(|p| Some((p.group()?, p)))
    }
}
