//! `cpu:` (the binding policy and its options) and `openmp:` as written.

use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::topology::fixture::CpuList;

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuOptions {
    /// The binding policy (default `auto`): numaplan's own, or one of torchrun's or NVIDIA
    /// gpu_affinity's, computed exactly as they do (docs/policies.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "auto"))]
    pub policy: Option<PolicyName>,
    /// `node` (default) or `socket`: the CPUs a GPU may draw from (gpu_affinity modes, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "node"))]
    pub scope: Option<ScopeName>,
    /// `all` (default): every SMT sibling of a rank's cores; `one`: one CPU per core; a number
    /// N: the first N siblings of each core. Under `mpibind`, mpibind's smt: the hardware
    /// threads per core it maps to (default: its own choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "all"))]
    pub smt: Option<SmtValue>,
    /// Give every rank the same number of cores (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub balanced: Option<bool>,
    /// Fail when a rank would get fewer cores (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1))]
    pub min_cores: Option<u32>,
    /// Give no rank more cores than this (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_cores: Option<u32>,
    /// CPUs whose whole cores are never handed out (cpulist, e.g. "0,64"); `auto` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_cpus: Option<CpuList>,
    /// Leave the last N cores of every NUMA node with CPUs unused (by hardware position, e.g. 1
    /// for the operating system's daemons); `auto` only (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub reserve_cores: Option<u32>,
    /// Deprecated spelling of `reserve_cpus` (it names CPUs, not a count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<CpuList>,
    /// Leave the first N cores of every L3 group unused (LUMI/Frontier low-noise mode: 1);
    /// `auto` only (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub reserve_per_l3: Option<u32>,
    /// Restrict the plan to these CPUs, as a cgroup cpuset or `taskset` would (cpulist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<CpuList>,
    /// Restrict the plan to the CPUs of these NUMA nodes, by OS index (a list such as "0-1");
    /// under `mpibind`, its memory restriction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_nodes: Option<CpuList>,
    /// Cores of each rank set aside for helper threads (data-loader workers, tokenizers): the
    /// last N cores of the rank's share, in one L3 group where possible (default 0). The rank
    /// may still run on them; OpenMP places leave them out, and NUMAPLAN_HELPER_CPUS and
    /// NUMAPLAN_COMPUTE_CPUS name the two sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub helpers: Option<u32>,
    /// `mpibind` only: give tasks whole NUMA domains when there are fewer tasks than domains
    /// (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub greedy: Option<bool>,
    /// `mpibind` only: share the tasks out over the NUMA domains by their GPUs rather than
    /// their CPUs (default true; off on a machine without GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub gpu_optim: Option<bool>,
    /// `mpibind` only: threads per task (mpibind's in_nthreads; default: mpibind's own choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub threads: Option<u32>,
}

/// `openmp:`: where a rank's OpenMP threads run, inside its compute cores.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenMpOptions {
    /// `cores` (default): one place per compute core, with its SMT siblings; `threads`: one
    /// place per CPU; `none`: no OMP_PLACES (the runtime's own places).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "cores"))]
    pub places: Option<PlacesName>,
    /// OMP_PROC_BIND: `close` (default: consecutive places), `spread` (spread over the places,
    /// and so over the rank's L3 groups), `master` (every thread on the first place), `none`
    /// (threads not bound: OMP_PROC_BIND=false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "close"))]
    pub bind: Option<BindName>,
    /// OMP_NUM_THREADS: a number, `cores` (default: one per compute core) or `cpus` (one per
    /// compute CPU). An OMP_NUM_THREADS in `env:` sets it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "cores"))]
    pub threads: Option<ThreadCount>,
    /// Also set KMP_AFFINITY, which the Intel and LLVM runtimes read in place of OMP_PLACES and
    /// OMP_PROC_BIND (default true; they print a warning that they ignore the two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub kmp_affinity: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PlacesName {
    /// One place per compute core, with its SMT siblings.
    Cores,
    /// One place per compute CPU.
    Threads,
    /// No OMP_PLACES: the runtime's own places.
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BindName {
    /// Threads on consecutive places.
    Close,
    /// Threads spread over the places, and so over the rank's L3 groups.
    Spread,
    /// Every thread on the first place.
    Master,
    /// Threads not bound (OMP_PROC_BIND=false).
    None,
}

/// `threads:`: a count, `cores` or `cpus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ThreadCount {
    /// This many threads.
    Count(#[schemars(range(min = 1))] u32),
    /// `cores` or `cpus`.
    Keyword(ThreadKeyword),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadKeyword {
    /// One thread per compute core.
    Cores,
    /// One thread per compute CPU.
    Cpus,
}

impl<'de> Deserialize<'de> for ThreadCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ThreadCount;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a thread count, `cores` or `cpus`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ThreadCount, E> {
                match v {
                    "cores" => Ok(ThreadCount::Keyword(ThreadKeyword::Cores)),
                    "cpus" => Ok(ThreadCount::Keyword(ThreadKeyword::Cpus)),
                    other => Err(E::unknown_variant(other, &["cores", "cpus"])),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ThreadCount, E> {
                u32::try_from(v)
                    .map(ThreadCount::Count)
                    .map_err(|_| E::custom(format!("{v} threads is out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ThreadCount, E> {
                Err(E::custom(format!(
                    "a thread count cannot be negative ({v})"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyName {
    /// numaplan's own: each rank on its GPU's NUMA node, the node's cores shared among its
    /// ranks by L3 group; honours every `cpu:` option.
    Auto,
    /// torchrun --numa-binding=node: every CPU of the GPU's NUMA node.
    Node,
    /// torchrun --numa-binding=socket: every CPU of the GPU's socket.
    Socket,
    /// torchrun --numa-binding=exclusive: the GPU's node's cores split among its GPUs, none
    /// shared.
    Exclusive,
    /// torchrun --numa-binding=core-complex: one L3 group (CCX/CCD) of the GPU's node per rank.
    CoreComplex,
    /// gpu_affinity all: every CPU of the GPU's NUMA node (or socket, with `scope: socket`).
    All,
    /// gpu_affinity single: the first core of the GPU's node.
    Single,
    /// gpu_affinity single_unique: one core per GPU that no earlier GPU took.
    SingleUnique,
    /// gpu_affinity unique_contiguous: the node's cores split into one contiguous block per
    /// GPU.
    UniqueContiguous,
    /// gpu_affinity unique_interleaved: the node's cores dealt round-robin to its GPUs.
    UniqueInterleaved,
    /// LLNL mpibind: tasks shared out over the NUMA domains by their GPUs (or CPUs), whole
    /// domains when there are fewer tasks than domains, mpibind's threads and GPUs per task.
    Mpibind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeName {
    /// The CPUs of the GPU's NUMA node.
    Node,
    /// The CPUs of the GPU's socket.
    Socket,
}

/// `smt:`: `all`, `one` or a number of hardware threads per core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SmtValue {
    /// This many hardware threads of each core (its first ones).
    Count(#[schemars(range(min = 1))] u32),
    /// `all` or `one`.
    Keyword(SmtName),
}

impl<'de> Deserialize<'de> for SmtValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SmtValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`all`, `one` or a number of hardware threads per core")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SmtValue, E> {
                match v {
                    "all" => Ok(SmtValue::Keyword(SmtName::All)),
                    "one" => Ok(SmtValue::Keyword(SmtName::One)),
                    other => Err(E::unknown_variant(other, &["all", "one"])),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SmtValue, E> {
                u32::try_from(v)
                    .map(SmtValue::Count)
                    .map_err(|_| E::custom(format!("{v} threads per core is out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SmtValue, E> {
                Err(E::custom(format!(
                    "a number of threads per core cannot be negative ({v})"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SmtName {
    /// Every SMT sibling of a rank's cores.
    All,
    /// One CPU per core.
    One,
}
