//! `ResolveError`: the first constraint a plan cannot meet, with the numbers. Each kind has one
//! E02xx code; `path` is the spec key it concerns (mapped to a line by the diagnostics), `notes`
//! the topology facts behind it.

use crate::cpuset::CpuSet;
use crate::ids::{NodeId, node_list};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ResolveError {
    pub kind: ResolveErrorKind,
    /// The spec key the problem is about, e.g. `ranks_per_node` or `cpu.min_cores`.
    pub path: SpecKey,
    pub notes: Vec<String>,
    pub help: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveErrorKind {
    #[error("{ranks} ranks need {needed} GPUs ({per_rank} per rank), but {available} are selected")]
    NotEnoughGpus {
        ranks: u32,
        per_rank: u32,
        needed: u64,
        available: u32,
    },
    #[error("`gpus: {asked}` asks for {asked} GPUs, but topology `{topology}` has {available}")]
    TooManyGpus {
        asked: u32,
        available: u32,
        topology: String,
    },
    #[error("{who} has unknown NUMA locality, which PyTorch reads as node 0, but {why}")]
    UnknownLocality { who: String, why: String },
    #[error("GPU {index} does not exist on `{topology}`")]
    UnknownGpu { index: u32, topology: String },
    #[error("NUMA node {node} of GPU {gpu} has no allowed CPUs")]
    NodeWithoutCpus { gpu: u32, node: u32 },
    #[error("{peers} ranks need exclusive cores on NUMA node {node}, which has {cores} allowed")]
    ExclusiveTooFew { node: u32, cores: u32, peers: u32 },
    #[error("{who} would get {}, fewer than `min_cores: {min}`", crate::phrase::plural(*got as usize, "core", "cores"))]
    MinCores { who: String, got: u32, min: u32 },
    #[error("no unused core is left for GPU {gpu} under `single-unique`")]
    NoUniqueCore { gpu: u32 },
    #[error("GPUs {a} and {b} have overlapping but different {scope} CPU sets")]
    OverlappingNodeSets { a: u32, b: u32, scope: &'static str },
    #[error("the allowed CPUs leave {what} nothing")]
    NothingAllowed { what: String },
    #[error("memory node {node} does not exist on `{topology}`")]
    UnknownMemoryNode { node: u32, topology: String },
    #[error("`preferred` memory takes one node, but {count} are listed")]
    PreferredManyNodes { count: usize },
    #[error("GPU {gpu} has unknown NUMA locality and no node is left for it")]
    UnplacedGpu { gpu: u32 },
    #[error(
        "{nodes} nodes x {per_node} ranks per node are {total} ranks, more than `WORLD_SIZE` can count"
    )]
    TooManyRanks {
        nodes: u32,
        per_node: usize,
        total: u64,
    },
    #[error("rank {rank} has {}; `cpu.helpers: {helpers}` leaves none for compute", crate::phrase::plural(*cores as usize, "core", "cores"))]
    HelpersTakeAllCores { rank: u32, cores: u32, helpers: u32 },
    #[error(
        "rank {rank}'s {name} would be {len} bytes, over the kernel's 128 KiB for one variable"
    )]
    VariableTooLong {
        rank: u32,
        name: &'static str,
        len: usize,
    },
    /// `detail` starts with the setting: `CUDA_VISIBLE_DEVICES=9: there is no GPU 9`.
    #[error("{detail}")]
    VisibleDevices { detail: String },
    #[error("`cpu.smt: {smt}` is more hardware threads per core than the machine's {level}")]
    MpibindSmt { smt: u32, level: u32 },
    #[error("{0}")]
    MpibindRestriction(MpibindRestriction),
    #[error(
        "mpibind would give each task {wanted} PU(s) of {}, which has {} ({cpus}) within the \
         allowed CPUs",
        slot(*.core_of, .cpus),
        .cpus.len()
    )]
    MpibindSlotTooSmall {
        /// The slot's allowed CPUs.
        cpus: CpuSet,
        /// The slot's first CPU where it is a core (else another level of the tree).
        core_of: Option<u32>,
        wanted: usize,
    },
    /// An hwloc machine loaded without its object tree reached `policy: mpibind`: a bug.
    #[error("`policy: mpibind` was given topology `{topology}` without hwloc's object tree")]
    TreeNotRead { topology: Box<str> },
    /// `asked`: `gpus: all`, `gpus: visible`, `gpus_per_rank: 2`.
    #[error("`{asked}` asks for GPUs, and topology `{topology}` has none")]
    NoGpus { asked: Box<str>, topology: Box<str> },
}

/// A slot of mpibind's mapping as a user finds it: `the core of CPU 8`, else its CPUs.
fn slot(core_of: Option<u32>, cpus: &CpuSet) -> String {
    match core_of {
        Some(cpu) => format!("the core of CPU {cpu}"),
        None => format!("the slot of CPUs {cpus}"),
    }
}

/// The spec key a problem is about: the top level's (`cpu.min_cores`), or in a job of several
/// groups the key of a group's entry where the group wrote it (`groups[1].cpu.min_cores`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecKey {
    /// The group's index in `groups:`, where the key is the group's own.
    pub group: Option<u32>,
    pub key: Box<str>,
}

impl SpecKey {
    /// The same key in group `index`'s entry.
    pub fn in_group(&self, index: usize) -> SpecKey {
        SpecKey {
            group: u32::try_from(index).ok(),
            key: self.key.clone(),
        }
    }
}

impl std::fmt::Display for SpecKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.group {
            Some(i) => write!(f, "groups[{i}].{}", self.key),
            None => f.write_str(&self.key),
        }
    }
}

/// What a restriction of `policy: mpibind` leaves that mpibind cannot map (§3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MpibindRestriction {
    /// `cpu.allowed_nodes` names none of the machine's NUMA nodes (within the allowed CPUs).
    #[error("`cpu.allowed_nodes: {}` names no NUMA node of `{topology}`", node_list(.named))]
    NoNamedNode {
        named: Vec<NodeId>,
        topology: Box<str>,
    },
    /// Nothing with CPUs is left.
    #[error("the restriction leaves no NUMA node with CPUs")]
    NoNodeWithCpus,
}

impl ResolveError {
    pub fn new(kind: ResolveErrorKind, path: &str, help: impl Into<String>) -> Self {
        ResolveError {
            kind,
            path: SpecKey {
                group: None,
                key: path.into(),
            },
            notes: Vec::new(),
            help: help.into(),
        }
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The error of group `name` (the `index`-th): said of the group, its `--set` help the
    /// group's key; and the key as the group would write it (`groups[1].cpu.policy`), which the
    /// spec's loader points at where the group wrote it (else at the top level's key).
    pub fn of_group(self, index: usize, name: &str) -> (ResolveError, SpecKey) {
        let in_group = self.path.in_group(index);
        let mut error = self.note(format!("in group `{name}`"));
        error.help = error
            .help
            .replace("`--set ", &format!("`--set groups.{name}."));
        (error, in_group)
    }
}
