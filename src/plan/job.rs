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
    /// The job of a spec without `groups:`, whose one plan it is.
    pub fn of_one_group(plan: Plan) -> JobPlan {
        JobPlan {
            name: plan.name.clone(),
            shape: Shape::OneGroup,
            world_size: plan.world_size(),
            groups: vec![plan],
        }
    }

    /// The warning codes every group's spec allows: what a warning of the whole job's launch
    /// (W0221) is allowed by.
    pub fn allowed_warnings(&self) -> Vec<crate::diag::Code> {
        let mut allowed = self.groups[0].allowed_warnings.clone();
        allowed.retain(|c| self.groups.iter().all(|g| g.allowed_warnings.contains(c)));
        allowed
    }

    /// The groups of a job of several groups, with their names (none for a job of one).
    pub fn named(&self) -> impl Iterator<Item = (&Group, &Plan)> {
        self.groups.iter().filter_map(|p| Some((p.group()?, p)))
    }
}
