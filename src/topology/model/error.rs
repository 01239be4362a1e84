//! `ModelError`: a broken invariant of a machine, and what in the source it is about.

use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId};

/// What in the parts an invariant violation is about, so each source can point at its own text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    Machine,
    Node(NodeId),
    Core(u32),
    Gpu(GpuIndex),
    /// A GPU's `numa_node`.
    GpuLocality(GpuIndex),
    Nic(String),
    /// A NIC's `numa_node`.
    NicLocality(String),
    Distances,
    Allowed,
    /// The CPU kind with these CPUs.
    CpuKind(CpuSet),
}

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub subject: Subject,
    pub message: String,
}

pub(in crate::topology) fn model_error(subject: Subject, message: impl Into<String>) -> ModelError {
    ModelError {
        subject,
        message: message.into(),
    }
}
