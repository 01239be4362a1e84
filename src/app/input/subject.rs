//! What reading a command's input hands back: each group's plan, with its topology where the
//! command wants one, and how a plan's machine is wanted.

use crate::plan::Plan;
use crate::topology::Topology;

/// A plan under review, with the topology it is drawn on when known.
pub(crate) struct Subject {
    /// The input as given (`plan.yaml`, `env:NUMAPLAN_PLAN`, `(command line)`), for messages.
    pub input: String,
    pub label: String,
    pub plan: Plan,
    pub fingerprint: String,
    pub topology: Option<Topology>,
    /// Facts to tell the reader (a fingerprint that differs from the topology given).
    pub notes: Vec<String>,
}

/// `plan.yaml on nvidia-dgx-a100`: diffs across machines say which side is on which.
pub(super) fn label(arg: &str, topology: Option<&Topology>) -> String {
    match topology {
        Some(t) => format!("{arg} on {}", t.name()),
        None => arg.to_string(),
    }
}

/// Whether a plan's machine is wanted, and what to do when its topology (given, or named by the
/// plan) has another fingerprint than the machine the plan was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlanMachine {
    /// Not wanted (`exec`, `verify` run from the plan alone).
    NotNeeded,
    /// A mismatch is an error (`explain`: reasons drawn on the wrong machine would be invented).
    Strict,
    /// A mismatch is noted (`diff`, `explain --force`).
    Lenient,
}
