//! The on-disk types of numaplan's topology fixture format (serde + schemars). The schema in
//! `schemas/topology.schema.json` is generated from `FixtureFile`; `fixture/` converts between
//! these and the model.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

use crate::cpuset::CpuSet;

/// A numaplan topology fixture: one machine (one node of a cluster).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "numaplan topology fixture")]
pub struct FixtureFile {
    /// Format version of this file; always 1.
    pub numaplan_topology: u32,
    /// The machine's name, shown in summaries and recorded in plans.
    pub name: String,
    /// Where the data came from and what was inferred to fill gaps.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provenance: String,
    /// Facts found while discovering the machine (NVML disagreeing with hwloc, no NVML), which
    /// every plan for it repeats as warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The container runtime the machine was discovered in ("a podman container", "a
    /// Kubernetes pod"), whose cgroup gives the `allowed` sets below; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The CPUs plans may use (cpulist, e.g. "1-63"); default: every CPU. Narrows the machine as
    /// a cgroup cpuset or `taskset` would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<CpuList>,
    /// The NUMA nodes whose memory plans may use (node list, e.g. "0-1"); default: every node.
    /// Narrows the machine as a cgroup's `cpuset.mems` would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_memory_nodes: Option<CpuList>,
    /// NUMA nodes: CPU nodes with their L3 groups, and memory-only nodes.
    pub nodes: Vec<NodeEntry>,
    /// The kinds of core of a hybrid machine (Intel P/E cores, Arm big.LITTLE), as hwloc reports
    /// them; absent on a machine with one kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_kinds: Vec<CpuKindEntry>,
    /// NUMA distances (as `numactl -H` prints them): for each node id, its distances to every
    /// node that has a row here, in ascending node id order.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::yaml::unique_keys"
    )]
    pub distances: BTreeMap<u32, Vec<u32>>,
    /// GPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuEntry>,
    /// GPUs on the PCI bus that the process which discovered the machine could not use (a
    /// container runtime handed out the others): no rank gets them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out_gpus: Vec<LeftOutGpuEntry>,
    /// Network interfaces used for collective communication.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<NicEntry>,
}

/// A NUMA node.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The OS index (`/sys/devices/system/node/nodeN`).
    pub id: u32,
    /// The package (socket) it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
    /// `cpu` (default) or a memory-only kind, which owns no CPUs.
    #[serde(default, skip_serializing_if = "NodeKindName::is_cpu")]
    pub kind: NodeKindName,
    /// For `kind: gpu-memory`: the PCI address of the GPU whose memory this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Memory size in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// The node's CPUs (cpulist). Optional; when given it must equal the union of `l3_groups`,
    /// which catches typos in hand-written fixtures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuList>,
    /// The node's cores, grouped by the L3 cache they share.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub l3_groups: Vec<L3Entry>,
}

/// The cores of one L3 group within one node.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct L3Entry {
    /// The L3 group; the same id in two nodes means the nodes share the cache (Intel SNC).
    pub id: u32,
    /// The package (socket) of the group's cores, when it is not the node's: a node that
    /// spans packages (one NUMA node over two sockets) has none of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
    /// SMT thread rows, for cores that all have the same number of threads: row t (a cpulist)
    /// gives hardware thread t of every core, in ascending order. Row 0 lists every core's
    /// first thread. `["48-51", "176-179"]` is four cores with two threads each: {48,176},
    /// {49,177}, {50,178}, {51,179}. (A shorter later row gives thread t of the first
    /// len(row t) cores.) Exactly one of `threads` and `cores` is given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<CpuList>,
    /// The cores one by one, each as the cpulist of its SMT siblings, where the rows of
    /// `threads` cannot say which core a thread belongs to: cores with different numbers of
    /// threads (hybrid CPUs, offline siblings) or siblings not numbered in step
    /// (`["0", "4,12", "1-2"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<CpuList>,
}

/// One kind of core.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuKindEntry {
    /// The CPUs of this kind (cpulist); whole cores, disjoint from the other kinds.
    pub cpus: CpuList,
    /// hwloc's ranking: 0 is the most power-efficient (slowest) kind, higher is faster; absent
    /// when hwloc could not rank the kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<u32>,
    /// hwloc's attributes of the kind: `CoreType` (IntelCore, IntelAtom), `FrequencyMaxMHz`,
    /// `LinuxCapacity`, `CPUPart`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::yaml::unique_keys"
    )]
    pub info: BTreeMap<String, String>,
}

/// A GPU.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuEntry {
    /// The index `nvidia-smi` / `rocm-smi` gives it.
    pub index: u32,
    pub vendor: VendorName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// PCI address, `0000:07:00.0`.
    pub pci: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The NUMA node (with CPUs) of its PCI locality; absent = unknown locality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    /// The package it hangs under; default: the package of `numa_node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
    /// PCI ancestry, outermost first (host bridge, root port, switch ports); devices sharing an
    /// element share that bridge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci_path: Vec<String>,
}

/// A GPU left out of the plans, and why.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeftOutGpuEntry {
    /// PCI address, `0000:07:00.0`.
    pub pci: String,
    pub vendor: VendorName,
    /// Why this process cannot use it (`/dev/nvidia3 is not in this container`).
    pub why: String,
}

/// A network interface.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NicEntry {
    /// The device name: `mlx5_0`, `efa0`, `cxi0`, `hsn0`.
    pub name: String,
    pub kind: NicKindName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci_path: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKindName {
    #[default]
    Cpu,
    Hbm,
    GpuMemory,
    Cxl,
    Nvm,
    Spm,
    Memory,
}

impl NodeKindName {
    pub(super) fn is_cpu(&self) -> bool {
        *self == NodeKindName::Cpu
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VendorName {
    Nvidia,
    Amd,
    Intel,
}

impl From<VendorName> for super::devices::Vendor {
    fn from(v: VendorName) -> Self {
        match v {
            VendorName::Nvidia => Self::Nvidia,
            VendorName::Amd => Self::Amd,
            VendorName::Intel => Self::Intel,
        }
    }
}

impl From<super::devices::Vendor> for VendorName {
    fn from(v: super::devices::Vendor) -> Self {
        use super::devices::Vendor;
        match v {
            Vendor::Nvidia => Self::Nvidia,
            Vendor::Amd => Self::Amd,
            Vendor::Intel => Self::Intel,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NicKindName {
    Infiniband,
    Roce,
    Efa,
    Slingshot,
    Ethernet,
}

/// A cpulist as written in a file: a string (`"0-23,48-71"`) or, for one CPU, a bare number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct CpuList(pub String);

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor, not an untagged enum: an error then carries the key's own path.
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = CpuList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a CPU list such as \"0-23,48-71\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CpuList, E> {
                Ok(CpuList(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<CpuList, E> {
                Ok(CpuList(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for CpuList {
    fn schema_name() -> Cow<'static, str> {
        "CpuList".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A Linux cpulist such as \"0-23,48-71\" (a bare integer for one CPU).",
            "type": ["string", "integer"],
            "pattern": "^\\s*([0-9]+(-[0-9]+(:[0-9]+)?)?\\s*(,\\s*[0-9]+(-[0-9]+(:[0-9]+)?)?\\s*)*)?$",
            "minimum": 0
        })
    }
}

/// The format version written and accepted.
pub const FORMAT_VERSION: u32 = 1;

/// A value's place in the file (its path, like `nodes[2].l3[0].threads[1]`) and what is wrong
/// with it.
pub type Located = (String, String);

/// Thread rows as cores: row 0 holds each core's first CPU, row t the t-th CPU of the first
/// len(row t) cores; rows never grow.
pub fn rows_to_cores(group_at: &str, rows: &[CpuSet]) -> Result<Vec<CpuSet>, Located> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let mut cores: Vec<CpuSet> = first.iter().map(|c| std::iter::once(c).collect()).collect();
    for (t, row) in rows.iter().enumerate().skip(1) {
        if row.len() > rows[t - 1].len() {
            return Err((
                format!("{group_at}.threads[{t}]"),
                format!(
                    "thread row {t} has {} CPUs but row {} has {}; rows must not grow (list \
                     cores with different numbers of threads under `cores`)",
                    row.len(),
                    t - 1,
                    rows[t - 1].len()
                ),
            ));
        }
        for (core, cpu) in cores.iter_mut().zip(row.iter()) {
            core.insert(cpu);
        }
    }
    Ok(cores)
}
