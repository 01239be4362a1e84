//! The job spec exactly as the user writes it (serde + schemars). Strings are allowed here; they
//! become ids and `CpuSet`s in `validate/`. `schemas/job.schema.json` is generated from
//! `JobSpec`.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::diag::suggest::did_you_mean;
use crate::topology::fixture::CpuList;

/// A numaplan job spec: what a distributed job wants from each node.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "numaplan job spec")]
pub struct JobSpec {
    /// The job's name (Slurm job name, log prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The program each rank runs: an argv list, or one string split into words as a POSIX
    /// shell splits them (no shell runs it). Needed only to launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// The topology to plan for (a fixture or hwloc XML, relative to this file); `--topology`
    /// overrides it; default: this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// Number of nodes, all alike (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub nodes: Option<u32>,
    /// Ranks on each node (default: one per selected GPU, or one per NUMA node with CPUs for
    /// CPU-only jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub ranks_per_node: Option<u32>,
    /// Which GPUs to use: `all` (default), `none` (CPU-only ranks), a count, or a list of
    /// indices. Written out, `all` and `visible` require GPUs: on a machine without any they
    /// are an error, where the default plans CPU-only ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "all"))]
    pub gpus: Option<GpuSelection>,
    /// GPUs per rank (default 1); rank i takes the i-th run of that many selected GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1))]
    pub gpus_per_rank: Option<u32>,
    /// GPU options: which GPUs each rank sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuOptions>,
    /// CPU binding: the policy and its options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuOptions>,
    /// Memory policy of every rank: `preferred`, `bind`, `interleave` or `none`, and its nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryOptions>,
    /// NIC choice: the NIC closest to each rank's GPU, and the variables naming it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NicOptions>,
    /// Extra environment for every rank; wins over numaplan's own variables.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::yaml::unique_keys"
    )]
    pub env: BTreeMap<String, String>,
    /// OpenMP placement inside each rank: OMP_PLACES, OMP_PROC_BIND, OMP_NUM_THREADS and
    /// KMP_AFFINITY computed from the rank's compute cores (default: only OMP_NUM_THREADS, one
    /// thread per core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openmp: Option<OpenMpOptions>,
    /// Where ranks meet (torchrun's MASTER_ADDR / MASTER_PORT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendezvous: Option<Rendezvous>,
    /// Options of the Slurm batch file (`--emit sbatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmOptions>,
    /// Options of the `--emit mpirun` script's mpirun command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpirun: Option<MpirunOptions>,
    /// Warning codes accepted after review (`[W0203]`; `numaplan codes` lists them): the plan
    /// keeps such warnings for its reader, but they are not printed and `--deny-warnings`
    /// does not fail on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub allow_warnings: Vec<String>,
}

/// `command:`: `[python, train.py]`, or `"python train.py"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandLine {
    /// The argv, one entry per argument.
    Words(Vec<String>),
    /// A command line, split into words as a POSIX shell splits them (quotes, backslashes; no
    /// expansion).
    Line(String),
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandLine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of arguments, or a command line")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CommandLine, E> {
                Ok(CommandLine::Line(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandLine, A::Error> {
                // Each item as a string, as YAML reads `[true, 3]` into strings.
                let mut words = Vec::new();
                while let Some(w) = seq.next_element::<String>()? {
                    words.push(w);
                }
                Ok(CommandLine::Words(words))
            }
        }
        d.deserialize_any(V)
    }
}

/// Words the `--emit mpirun` script adds to mpirun's command line, before the program. The
/// binding, the rank count and mapping, and the variables passed stay the script's: a word
/// here that would change them (`--bind-to`, `-np`, `--map-by`, `-ppn`, `-genvlist`) is an
/// error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MpirunOptions {
    /// Words for either MPI (`[-x, NCCL_DEBUG]` is Open MPI's and MPICH's alike only where
    /// both take it; prefer the two lists below).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
    /// Words only when the script finds Open MPI (`[--allow-run-as-root, --mca, btl,
    /// "self,tcp", -x, NCCL_DEBUG=INFO]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub openmpi: Vec<String>,
    /// Words only when the script finds MPICH's Hydra (`[-genv, FI_PROVIDER, tcp]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mpich: Vec<String>,
}

/// `#SBATCH` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    /// `#SBATCH --partition` (default: the cluster's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `#SBATCH --account` (default: the user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// Time limit, as Slurm writes it (`01:00:00`, `2-00:00:00`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Ask for whole nodes (default true): other jobs' processes would break the binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub exclusive: Option<bool>,
    /// Extra `#SBATCH` options, one per entry (`--qos=high`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
    /// Make `srun --cpu-bind` verbose, so the job's log shows what Slurm applied (default
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub verbose: Option<bool>,
}

/// `gpus:`: `all`, `none`, `visible` (the GPUs CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES
/// names where numaplan runs; all when neither is set), a count, or a list of GPU indices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum GpuSelection {
    /// `all`, `none` or `visible`.
    Keyword(GpuKeyword),
    /// The first N GPUs.
    Count(u32),
    /// These GPU indices, in this order.
    List(Vec<u32>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GpuKeyword {
    /// Every GPU of the machine.
    All,
    /// No GPU: CPU-only ranks.
    None,
    /// The GPUs CUDA_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES names where numaplan runs; each
    /// rank's environment sets the variable to the same value (with `gpu.visible: all`).
    Visible,
}

const KEYWORDS: &[&str] = &["all", "none", "visible"];

/// What `gpus:` takes, in words.
struct ExpectedGpus;

impl fmt::Display for ExpectedGpus {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`all`, `none`, `visible`, a GPU count or a list of GPU indices")
    }
}

impl<'de> Deserialize<'de> for GpuSelection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GpuSelection;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{ExpectedGpus}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<GpuSelection, E> {
                match v {
                    "all" => Ok(GpuSelection::Keyword(GpuKeyword::All)),
                    "none" => Ok(GpuSelection::Keyword(GpuKeyword::None)),
                    "visible" => Ok(GpuSelection::Keyword(GpuKeyword::Visible)),
                    // A typo of a keyword gets "did you mean"; anything else is told all the
                    // forms, since "expected one of the keywords" would hide counts and lists.
                    other if did_you_mean(other, KEYWORDS.iter().copied()).is_some() => {
                        Err(E::unknown_variant(other, KEYWORDS))
                    }
                    other => Err(E::custom(format!("`{other}` is not {}", ExpectedGpus))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GpuSelection, E> {
                u32::try_from(v)
                    .map(GpuSelection::Count)
                    .map_err(|_| E::custom(format!("{v} GPUs is out of range")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GpuSelection, E> {
                Err(E::custom(format!("a GPU count cannot be negative ({v})")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GpuSelection, A::Error> {
                let mut list = Vec::new();
                while let Some(i) = seq.next_element::<u32>()? {
                    list.push(i);
                }
                Ok(GpuSelection::List(list))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuOptions {
    /// Which GPUs each rank sees: `all` (default, like torchrun) or `own` (sets
    /// CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / ZE_AFFINITY_MASK to the rank's GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "all"))]
    pub visible: Option<VisibleName>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VisibleName {
    /// Every rank sees every GPU (like torchrun).
    All,
    /// Each rank sees only its own GPUs (CUDA_VISIBLE_DEVICES and the like).
    Own,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuOptions {
    /// The binding policy (default `auto`): numaplan's own, or one of torchrun's or NVIDIA
    /// gpu_affinity's, computed exactly as they do (the README's "Job specs and policies").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "auto"))]
    pub policy: Option<PolicyName>,
    /// `node` (default) or `socket`: the CPUs a GPU may draw from (gpu_affinity modes, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "node"))]
    pub scope: Option<ScopeName>,
    /// `all` (default): every SMT sibling of a rank's cores; `one`: one CPU per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "all"))]
    pub smt: Option<SmtName>,
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
    /// Cores of each rank set aside for helper threads (data-loader workers, tokenizers): the
    /// last N cores of the rank's share, in one L3 group where possible (default 0). The rank
    /// may still run on them; OpenMP places leave them out, and NUMAPLAN_HELPER_CPUS and
    /// NUMAPLAN_COMPUTE_CPUS name the two sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub helpers: Option<u32>,
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeName {
    /// The CPUs of the GPU's NUMA node.
    Node,
    /// The CPUs of the GPU's socket.
    Socket,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SmtName {
    /// Every SMT sibling of a rank's cores.
    All,
    /// One CPU per core.
    One,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryOptions {
    /// `preferred` (default for `auto`), `bind`, `interleave` or `none` (default for the
    /// compatibility policies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<MemPolicyName>,
    /// The NUMA nodes of the policy: a node list ("0,2"), `local` (each rank's home node),
    /// `local+N` (the node whose id is the home node's plus N: the HBM node of a Xeon Max in
    /// flat mode is `local+8`), or several of these separated by commas; default `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "local"))]
    pub nodes: Option<NodeList>,
}

/// `memory.nodes` as written: a string (`"0,2"`, `"local+8"`), one node number, or a list of
/// either (`[0, 2]`, `[local, local+8]`), kept as the comma-separated text `validate/` parses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct NodeList(pub String);

impl<'de> Deserialize<'de> for NodeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor, not an untagged enum: an error then carries the key's own path.
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a NUMA node list such as \"0,2\", \"local\" or \"local+8\", or a list of them",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeList, E> {
                Ok(NodeList(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeList, E> {
                Ok(NodeList(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeList, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<NodeItem>()? {
                    items.push(item.0);
                }
                Ok(NodeList(items.join(",")))
            }
        }
        d.deserialize_any(V)
    }
}

/// One element of a `memory.nodes` list: a node number or a word (`local+8`).
struct NodeItem(String);

impl<'de> Deserialize<'de> for NodeItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NodeItem;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a NUMA node number, `local` or `local+N`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NodeItem, E> {
                Ok(NodeItem(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NodeItem, E> {
                Ok(NodeItem(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for NodeList {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NodeList".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let item = "([0-9]+(-[0-9]+(:[0-9]+)?)?|local(\\+[0-9]+)?)";
        schemars::json_schema!({
            "description": "NUMA nodes: \"0,2\", \"0-3\", \"local\", \"local+8\", one node number, or a list of these.",
            "anyOf": [
                {"type": "string", "pattern": format!("^\\s*{item}\\s*(,\\s*{item}\\s*)*$")},
                {"type": "integer", "minimum": 0},
                {"type": "array", "minItems": 1, "items": {"anyOf": [
                    {"type": "string", "pattern": format!("^\\s*{item}\\s*$")},
                    {"type": "integer", "minimum": 0}
                ]}}
            ]
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MemPolicyName {
    /// MPOL_PREFERRED: pages on the node while it has free memory, then elsewhere.
    Preferred,
    /// MPOL_BIND: pages only on the nodes (allocation fails past them).
    Bind,
    /// MPOL_INTERLEAVE: pages round-robin over the nodes.
    Interleave,
    /// The inherited policy (the kernel's default: the node of the CPU that touches a page).
    None,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NicOptions {
    /// `closest` (default): each rank gets the NIC nearest its GPU; `none`: no NIC variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "closest"))]
    pub policy: Option<NicPolicyName>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NicPolicyName {
    /// The NIC nearest each rank's GPU (same PCIe switch, host bridge, node, package).
    Closest,
    /// No NIC and no NIC variables.
    None,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rendezvous {
    /// MASTER_PORT (default 29500, as torchrun).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 29500))]
    pub port: Option<u16>,
    /// MASTER_ADDR for single-node plans (default 127.0.0.1); multi-node launchers set it from
    /// the allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "127.0.0.1"))]
    pub addr: Option<String>,
}
