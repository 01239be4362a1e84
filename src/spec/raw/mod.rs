//! The job spec exactly as the user writes it (serde + schemars). Strings are allowed here; they
//! become ids and `CpuSet`s in `validate/`. `schemas/job.schema.json` is generated from
//! `JobSpec`. The `gpu:`, `cpu:`/`openmp:` and `memory:` parts are in files of their own.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

mod cpu;
mod gpu;
mod kubernetes;
mod memory;

pub use cpu::{
    BindName, CpuOptions, OpenMpOptions, PlacesName, PolicyName, ScopeName, SmtName, SmtValue,
    ThreadCount, ThreadKeyword,
};
pub use gpu::{GpuKeyword, GpuOptions, GpuSelection, VisibleName};
pub use kubernetes::{
    DevicesName, DraCpusName, KubernetesOptions, LaunchName, PodSecurityName, SidecarOptions,
    WorkloadName,
};
pub use memory::{MemPolicyName, MemoryOptions, NodeList};

/// Declares a spec mapping: its own keys (`before`, `after`) around the keys that a job's top
/// level and each of its groups both take, a group's laid over the top level's key by key
/// (`spec/validate/groups.rs`). Those keys are declared once, here, for both. `defaults(all())`
/// gives the schema the top level's defaults; a group's (`defaults(any())`) are the top
/// level's values, so its schema names none.
macro_rules! spec_mapping {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            defaults($defaults:meta)
            before { $($before:tt)* }
            after { $($after:tt)* }
        }
    ) => {
        $(#[$attr])*
        pub struct $name {
            $($before)*
            /// The program each rank runs: an argv list, or one string split into words as a
            /// POSIX shell splits them (no shell runs it). Needed only to launch.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub command: Option<CommandLine>,
            /// The topology to plan for (a fixture or hwloc XML, relative to this file);
            /// `--topology` overrides it; default: this machine.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub topology: Option<String>,
            /// Ranks on each node (default: one per selected GPU, or one per NUMA node with
            /// CPUs for CPU-only jobs).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1))]
            pub ranks_per_node: Option<u32>,
            /// Which GPUs to use: `all` (default), `none` (CPU-only ranks), a count, or a list
            /// of indices. Written out, `all` and `visible` require GPUs: on a machine without
            /// any they are an error, where the default plans CPU-only ranks.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[cfg_attr($defaults, schemars(extend("default" = "all")))]
            pub gpus: Option<GpuSelection>,
            /// GPUs per rank (default 1); rank i takes the i-th run of that many selected GPUs.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1))]
            #[cfg_attr($defaults, schemars(extend("default" = 1)))]
            pub gpus_per_rank: Option<u32>,
            /// GPU options: which GPUs each rank sees.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub gpu: Option<GpuOptions>,
            /// CPU binding: the policy and its options.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cpu: Option<CpuOptions>,
            /// Memory policy of every rank: `preferred`, `bind`, `interleave` or `none`, and its
            /// nodes.
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
            /// KMP_AFFINITY computed from the rank's compute cores (default: only
            /// OMP_NUM_THREADS, one thread per core).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub openmp: Option<OpenMpOptions>,
            /// The serving engine the ranks run (`vllm`, `sglang`, `trtllm`), which binds its
            /// workers itself unless told not to: the plan tells it (`--emit vllm`, and each
            /// rank's environment), docs/engines.md says how.
            #[serde(
                default,
                skip_serializing_if = "Option::is_none",
                deserialize_with = "named_engine"
            )]
            #[schemars(with = "Option<EngineName>")]
            pub engine: Option<EngineName>,
            /// Options of the Slurm batch file (`--emit sbatch`).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub slurm: Option<SlurmOptions>,
            /// Options of the Flux job (`--emit flux`): of a group, the nodes its job runs on.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub flux: Option<FluxOptions>,
            /// What the Kubernetes manifests need beside the plan (`--emit k8s`, `--emit
            /// kubelet`): the image, the pod's memory, how devices are claimed.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub kubernetes: Option<KubernetesOptions>,
            $($after)*
        }
    };
}

spec_mapping! {
    /// A numaplan job spec: what a distributed job wants from each node.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[schemars(title = "numaplan job spec")]
    pub struct JobSpec {
        defaults(all())
        before {
            /// The job's name (Slurm job name, log prefix).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub name: Option<String>,
            /// Number of nodes, all alike (default 1).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1), extend("default" = 1))]
            pub nodes: Option<u32>,
        }
        after {
            /// Where ranks meet (torchrun's MASTER_ADDR / MASTER_PORT).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub rendezvous: Option<Rendezvous>,
            /// Options of the `--emit mpirun` script's mpirun command line.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub mpirun: Option<MpirunOptions>,
            /// Warning codes accepted after review (`[W0203]`; `numaplan codes` lists them): the
            /// plan keeps such warnings for its reader, but they are not printed and
            /// `--deny-warnings` does not fail on them.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            #[schemars(extend("default" = []))]
            pub allow_warnings: Vec<String>,
            /// Nodes of different shapes in one job (a heterogeneous job): each group has a name,
            /// a node count and its own topology, and sets what differs; what it does not set it
            /// takes from the top level, key by key (`env:` by variable). Not with `nodes:`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub groups: Option<Vec<GroupOptions>>,
        }
    }
}

spec_mapping! {
    /// One group of a heterogeneous job: nodes alike, planned together. Each key it sets is
    /// laid over the top level's, key by key inside a mapping (`env:` by variable); a group's
    /// `topology:` is relative to the spec.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct GroupOptions {
        defaults(any())
        before {
            /// The group's name (letters, digits, `-` and `_`), as the plan and messages name it.
            pub name: String,
            /// Its number of nodes (default 1).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1), extend("default" = 1))]
            pub nodes: Option<u32>,
        }
        after {}
    }
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
/// binding, the rank count and mapping, the hosts and the variables passed stay the script's:
/// a word here that would change them (`--bind-to`, `--cpus-per-rank`, `-np`, `--map-by`,
/// `-ppn`, `--host`, `--hostfile`, `-genvlist`) is an error.
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

/// What the `--emit flux` script asks of Flux beside the plan's resources and binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FluxOptions {
    /// The queue the job goes to (`--queue`; default: the instance's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// A constraint on the nodes the job may run on (`--requires`, RFC 31: `host:tioga[10-13]`,
    /// a property): how a group of a job of several is narrowed to its own nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires: Option<String>,
    /// Extra words of the `flux run` or `flux submit` line, before the program (`[-t, 2h]`).
    /// The resources, the binding and the tasks stay the script's: a word that would change
    /// them (`-N`, `-n`, `--tasks-per-node`, `-c`, `-g`, `--exclusive`, `-o cpu-affinity`,
    /// `-o gpu-affinity`, `-o mpibind`) is an error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
}

/// `engine:` as written: an engine's name. An empty `engine:` names none, and is refused
/// rather than read as no engine (it is where a name was meant).
fn named_engine<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<EngineName>, D::Error> {
    match Option::<EngineName>::deserialize(d)? {
        Some(engine) => Ok(Some(engine)),
        None => Err(serde::de::Error::custom(
            "an empty `engine:` names no engine; expected one of `vllm`, `sglang`, `trtllm`",
        )),
    }
}

/// `engine:`: a serving engine that places its GPU workers itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EngineName {
    /// vLLM: `--emit vllm` gives `vllm serve` the plan as `--numa-bind-nodes` and
    /// `--numa-bind-cpus`.
    Vllm,
    /// SGLang: each rank has `SGLANG_AUTO_NUMA_BIND=0`, which keeps SGLang from binding a
    /// worker numaplan bound.
    Sglang,
    /// TensorRT-LLM: each rank has `TLLM_NUMA_AWARE_WORKER_AFFINITY=0`, which keeps the
    /// plan's affinity.
    Trtllm,
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
