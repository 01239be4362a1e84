//! `RankError`: why a process cannot tell which rank of the plan it is, or why the launcher that
//! started it runs another job than the plan's. Fields are typed; the wording is in `Display`.

use std::fmt;

use super::group::GroupShape;
use crate::plan::MachineShape;

#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error("no launcher variable says which local rank this process is")]
    NoLocalRank {
        /// The variables looked at, in order.
        looked: Vec<&'static str>,
    },
    #[error(
        "the variables that say this process's local rank disagree: {}",
        list(claims)
    )]
    LocalRankDisagree { claims: Vec<Claim> },
    #[error(
        "torchrun's variables disagree: LOCAL_RANK={local_rank}, but RANK={global} - {} gives {}",
        match start {
            None => format!("GROUP_RANK={group} x LOCAL_WORLD_SIZE={size}"),
            Some((rank, node)) => format!(
                "(the group's first rank {rank} + (GROUP_RANK={group} - its first node {node}) \
                 x LOCAL_WORLD_SIZE={size})"
            ),
        },
        match derived {
            Some(d) => format!("local rank {d}"),
            None => "no local rank of this node".into(),
        }
    )]
    TorchrunLocalRank {
        local_rank: u32,
        global: u32,
        group: u32,
        size: u32,
        /// Of a group of a plan of several: its first global rank and node.
        start: Option<(u64, u64)>,
        /// The local rank RANK, GROUP_RANK and LOCAL_WORLD_SIZE give, if any on this node.
        derived: Option<u32>,
    },
    #[error("`{var}={value}` is not a count")]
    LauncherVariable { var: String, value: String },
    #[error("local rank {rank} ({var}) is at or past the local size {size} ({size_var})")]
    LocalRankPastSize {
        var: String,
        rank: u32,
        size_var: String,
        size: u32,
    },
    #[error("the launcher runs {launcher} local ranks ({var}), and the plan has {plan} per node")]
    LocalSizeMismatch {
        var: String,
        launcher: u32,
        plan: u32,
    },
    #[error(
        "the launcher runs {launcher} ranks ({var}), and the plan is for {}",
        match groups {
            None => format!("{nodes} node(s) x {ranks_per_node} ranks"),
            Some(world) => format!("{world} ranks in its groups"),
        }
    )]
    WorldSizeMismatch {
        var: String,
        launcher: u64,
        nodes: u32,
        ranks_per_node: u32,
        /// Of a plan of several groups: the ranks of all its groups.
        groups: Option<u64>,
    },
    #[error("`{var}={value}` is neither a local rank (0, 1, ...) nor `gpu`")]
    LocalRankValue { var: String, value: String },
    #[error("no GPU is visible to this process: {why}")]
    NoGpuVisible { why: NothingVisible },
    #[error("`{entry}` in `{via}` names no GPU of the plan: {why}")]
    VisibleGpuUnknown {
        via: String,
        entry: String,
        why: UnknownGpu,
        ranks: Vec<RankGpus>,
    },
    #[error(
        "no rank of the plan has exactly the {} this process sees ({via})",
        gpu_list(gpus)
    )]
    NoRankForGpus {
        via: String,
        gpus: Vec<u32>,
        ranks: Vec<RankGpus>,
    },
    #[error(
        "several ranks of the plan ({}) have exactly the {} this process sees ({via})",
        list(sharing),
        gpu_list(gpus)
    )]
    RanksShareGpus {
        via: String,
        gpus: Vec<u32>,
        /// The local ranks that have them.
        sharing: Vec<u32>,
        ranks: Vec<RankGpus>,
    },
    #[error("local rank {rank} (from {via}) is past the plan's {ranks} ranks per node")]
    LocalRankPastPlan { rank: u32, via: String, ranks: u32 },
    #[error("the plan has no group `{name}` ({via})")]
    GroupUnknown {
        name: String,
        via: String,
        groups: Vec<GroupShape>,
    },
    #[error(
        "{} of the plan's groups has this node's shape ({})",
        match matching.len() { 0 => "none".to_string(), n => format!("more than one ({n}: {})", matching.join(", ")) },
        shape.text()
    )]
    GroupNotFound {
        shape: MachineShape,
        /// The groups of this shape (none, or several).
        matching: Vec<String>,
        groups: Vec<GroupShape>,
    },
    #[error(
        "the heterogeneous Slurm job has {components} components (SLURM_HET_SIZE), and the \
         plan {} groups",
        groups.len()
    )]
    GroupComponents {
        components: usize,
        groups: Vec<GroupShape>,
    },
}

/// A launcher variable's local rank: `LOCAL_RANK=1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub var: String,
    pub rank: u32,
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.var, self.rank)
    }
}

/// Why no GPU is visible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NothingVisible {
    /// None of the visibility variables is set.
    NoneSet,
    /// This one is set to nothing.
    Empty(&'static str),
    /// This one hides every GPU (`-1`, `NoDevFiles`).
    NoDevice(&'static str, String),
}

impl fmt::Display for NothingVisible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NothingVisible::NoneSet => write!(
                f,
                "none of {} is set",
                crate::variables::VISIBILITY.join(", ")
            ),
            NothingVisible::Empty(var) => write!(f, "{var} is set to nothing"),
            NothingVisible::NoDevice(var, value) => {
                write!(f, "{var}={value} hides every GPU")
            }
        }
    }
}

/// Why a visibility entry names no GPU of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownGpu {
    /// An index past the machine's GPUs (`gpus`: how many it has).
    PastMachine { gpus: u32 },
    /// An index past what an outer variable left visible.
    PastVisible { left: usize },
    /// A UUID, and the plan's topology has none.
    NoUuids,
    /// A MIG instance's own UUID, which does not name its GPU.
    MigInstance,
    /// A UUID no GPU of the plan has.
    NoSuchUuid,
    /// The start of several GPUs' UUIDs.
    AmbiguousUuid,
}

impl fmt::Display for UnknownGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownGpu::PastMachine { gpus: 0 } => f.write_str("the plan's machine has no GPU"),
            UnknownGpu::PastMachine { gpus } => {
                write!(f, "the plan's machine has GPUs 0 to {}", gpus - 1)
            }
            UnknownGpu::PastVisible { left } => {
                write!(f, "only {left} GPUs are left visible to it")
            }
            UnknownGpu::NoUuids => f.write_str(
                "the plan knows its GPUs by index only (its topology has no UUIDs: compile it on \
                 the machine, where NVML gives them)",
            ),
            UnknownGpu::MigInstance => f.write_str(
                "it is a MIG instance's own UUID, which does not name its GPU; use the GPU's \
                 index or UUID",
            ),
            UnknownGpu::NoSuchUuid => f.write_str("no GPU of the plan's ranks has that UUID"),
            UnknownGpu::AmbiguousUuid => f.write_str("it is the start of several GPUs' UUIDs"),
        }
    }
}

/// A rank of the plan and its GPUs, for a message that lists them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankGpus {
    pub local_rank: u32,
    pub gpus: Vec<u32>,
}

impl fmt::Display for RankGpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.gpus.is_empty() {
            true => write!(f, "{}: no GPU", self.local_rank),
            false => write!(f, "{}: {}", self.local_rank, gpu_list(&self.gpus)),
        }
    }
}

/// `GPU 3`, `GPUs 2, 3`.
pub fn gpu_list(gpus: &[u32]) -> String {
    match gpus {
        [one] => format!("GPU {one}"),
        _ => format!("GPUs {}", list(gpus)),
    }
}

/// Items joined by `, `.
pub fn list<T: fmt::Display>(items: &[T]) -> String {
    let all: Vec<String> = items.iter().map(T::to_string).collect();
    all.join(", ")
}

/// The plan's ranks with their GPUs: `0: GPU 0; 1: GPU 1; 2: no GPU`.
pub fn ranks_text(ranks: &[RankGpus]) -> String {
    let each: Vec<String> = ranks.iter().map(RankGpus::to_string).collect();
    each.join("; ")
}
