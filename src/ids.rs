//! Typed identifiers, so that a NUMA node id is never confused with a GPU index or a CPU.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A NUMA node, by its OS index (what `numactl` and `/sys/devices/system/node` call it).
    NodeId
);
id_type!(
    /// A processor package (socket), by its OS index.
    PackageId
);
id_type!(
    /// An L3 group (the CPUs sharing the highest-level data cache), numbered in topology order.
    L3Id
);
id_type!(
    /// A GPU, by the index `nvidia-smi`/`rocm-smi` give it.
    GpuIndex
);

/// `0, 1`: the packages a NUMA node spans.
pub fn package_names(packages: &[PackageId]) -> String {
    let names: Vec<String> = packages.iter().map(|p| p.to_string()).collect();
    names.join(", ")
}

/// Node ids in cpulist syntax (`4-11`, `0,2`), the notation numactl and the kernel use for node
/// lists; empty for none.
pub fn node_list(nodes: &[NodeId]) -> String {
    nodes
        .iter()
        .map(|n| n.0)
        .collect::<crate::cpuset::CpuSet>()
        .to_string()
}

/// A running rank: its local rank in the plan and the process that is it. Ordered by rank,
/// then pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankPid {
    pub rank: u32,
    pub pid: u32,
}

/// FNV-1a (64 bits) of `bytes`, as 16 hex digits: the same in every build and release of
/// numaplan (std's hashers promise neither), for fingerprints and plan ids that files and
/// running processes keep.
pub fn fnv1a(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A plan's identity: the `fnv1a` of its content (`plan_file::id`), the same whichever file,
/// variable or spec it came from. Each rank carries it in its `Mark`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlanId(pub String);

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What says that a process is a plan's rank: `PLAN_ID:LOCAL_RANK`, the value of
/// `NUMAPLAN_BOUND`, which `exec` and `bind` set in every rank before it starts and
/// `numaplan.bind()` writes to a mark file (`/tmp/numaplan-UID/rank-PID`), since the environment
/// `/proc` shows is the one the process started with. `PLAN_ID:LOCAL_RANK:no-memory-policy`: the
/// rank runs without its memory policy by design (refused, and not required: W0217).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    pub plan: PlanId,
    pub local_rank: u32,
    /// Whether the rank runs without the plan's memory policy, which was refused.
    pub without_memory: bool,
}

/// The mark's third field.
const WITHOUT_MEMORY: &str = "no-memory-policy";

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.plan, self.local_rank)?;
        match self.without_memory {
            true => write!(f, ":{WITHOUT_MEMORY}"),
            false => Ok(()),
        }
    }
}

impl std::str::FromStr for Mark {
    type Err = ();

    /// `0123456789abcdef:3`, or `...:3:no-memory-policy`; anything else (a hand-set value) is no
    /// mark.
    fn from_str(s: &str) -> Result<Mark, ()> {
        let mut fields = s.trim().split(':');
        let (plan, rank) = (fields.next().ok_or(())?, fields.next().ok_or(())?);
        let without_memory = match (fields.next(), fields.next()) {
            (None, _) => false,
            (Some(WITHOUT_MEMORY), None) => true,
            _ => return Err(()),
        };
        let hex = plan.len() == 16 && plan.bytes().all(|b| b.is_ascii_hexdigit());
        match (hex, rank.parse()) {
            (true, Ok(local_rank)) => Ok(Mark {
                plan: PlanId(plan.to_string()),
                local_rank,
                without_memory,
            }),
            _ => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_as_written_and_nothing_else_is_one() {
        let mark = Mark {
            plan: PlanId(fnv1a(b"plan")),
            local_rank: 3,
            without_memory: false,
        };
        assert_eq!(mark.to_string().parse::<Mark>(), Ok(mark.clone()));
        let without = Mark {
            without_memory: true,
            ..mark
        };
        assert!(without.to_string().ends_with(":3:no-memory-policy"));
        assert_eq!(without.to_string().parse::<Mark>(), Ok(without));
        for not in [
            "",
            "3",
            "abc:3",
            "0123456789abcdef",
            "0123456789abcdef:x",
            "0123456789abcdeg:1",
        ] {
            assert!(not.parse::<Mark>().is_err(), "{not}");
        }
        // FNV-1a's published value for "a": a fingerprint must never change.
        assert_eq!(fnv1a(b"a"), "af63dc4c8601ec8c");
    }
}
