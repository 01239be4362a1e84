//! NVIDIA GPUs as the driver sees them, through NVML (nvml-wrapper loads `libnvidia-ml.so.1` at
//! run time; no driver is no error). Discovery asks NVML only when hwloc found NVIDIA GPUs on
//! the PCI bus, and `merge` folds the answer into what hwloc found:
//! - NVML's index (the order `nvidia-smi` and, with `CUDA_DEVICE_ORDER=PCI_BUS_ID`, CUDA use),
//!   UUID and model name replace hwloc's, matched by PCI address;
//! - NVML's CPU affinity cross-checks hwloc's locality: a GPU whose node's CPUs are not within
//!   NVML's affinity gets a note, and one whose locality hwloc does not know takes the single
//!   node NVML's affinity covers;
//! - without NVML, one note says that the GPUs come from the PCI view alone.
//!
//! Notes travel with the topology into every plan's warnings.

use std::collections::BTreeMap;

use super::model::{Gpu, LeftOutGpu, TopologyParts, Vendor};
use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId};
use crate::pci_addr::PciAddr;

/// One GPU as NVML reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlGpu {
    pub index: u32,
    pub uuid: String,
    pub pci: PciAddr,
    pub model: String,
    /// The CPUs NVML calls close to the GPU (`nvmlDeviceGetCpuAffinity`).
    pub cpus: CpuSet,
}

/// Asks NVML for every GPU; `Err` says why NVML cannot answer (no driver, no library).
pub fn probe() -> Result<Vec<NvmlGpu>, String> {
    let nvml = nvml_wrapper::Nvml::init().map_err(|e| e.to_string())?;
    let count = nvml.device_count().map_err(|e| e.to_string())?;
    let mut gpus = Vec::new();
    for i in 0..count {
        let failed =
            |what: &str, e: nvml_wrapper::error::NvmlError| format!("GPU {i}: {what}: {e}");
        let device = nvml.device_by_index(i).map_err(|e| failed("open", e))?;
        let bus_id = device.pci_info().map_err(|e| failed("PCI info", e))?.bus_id;
        let pci = bus_id
            .parse()
            .map_err(|_| format!("GPU {i}: NVML's PCI bus id `{bus_id}` is not a PCI address"))?;
        let words = device
            .cpu_affinity(16)
            .map_err(|e| failed("CPU affinity", e))?;
        let bits = std::mem::size_of::<std::ffi::c_ulong>() * 8;
        let cpus = words
            .iter()
            .enumerate()
            .flat_map(|(w, &word)| {
                (0..bits)
                    .filter(move |b| word >> b & 1 == 1)
                    .map(move |b| (w * bits + b) as u32)
            })
            .collect();
        gpus.push(NvmlGpu {
            index: i,
            uuid: device.uuid().map_err(|e| failed("UUID", e))?,
            pci,
            model: device.name().map_err(|e| failed("name", e))?,
            cpus,
        });
    }
    Ok(gpus)
}

/// The driver NVML reports and its GPU count (`driver 550.54.15, 8 GPUs`), or why NVML cannot
/// answer: `numaplan --version --verbose`.
pub fn driver() -> Result<String, String> {
    let nvml = nvml_wrapper::Nvml::init().map_err(|e| e.to_string())?;
    let version = nvml.sys_driver_version().map_err(|e| e.to_string())?;
    let count = nvml.device_count().map_err(|e| e.to_string())?;
    Ok(format!("driver {version}, {count} GPUs"))
}

/// Folds NVML's view (or why there is none) into hwloc's parts; returns the notes for the plan.
pub fn merge(parts: &mut TopologyParts, nvml: Result<Vec<NvmlGpu>, String>) -> Vec<String> {
    let nvidia = |g: &Gpu| g.vendor == Vendor::Nvidia;
    if !parts.gpus.iter().any(nvidia) {
        return Vec::new();
    }
    let nvml = match nvml {
        Ok(gpus) => gpus,
        Err(why) => {
            return vec![format!(
                "NVML is not available ({why}): NVIDIA GPUs are indexed by PCI address, as hwloc sees them"
            )];
        }
    };
    let mut node_cpus: BTreeMap<NodeId, CpuSet> = BTreeMap::new();
    for c in &parts.cores {
        let e = node_cpus.entry(c.node).or_default();
        *e = e.union(&c.cpus);
    }
    // NVML lists the GPUs this process may use: the others (a container's runtime or a cgroup
    // handed out the rest, or one is disabled) are left out, as the CUDA runtime leaves them.
    let unlisted = |g: &Gpu| nvidia(g) && !nvml.iter().any(|n| n.pci == g.pci);
    for g in parts.gpus.iter().filter(|g| unlisted(g)) {
        parts.left_out_gpus.push(LeftOutGpu {
            pci: g.pci,
            vendor: g.vendor,
            why: "NVML does not list it: it was not handed to this process (a container's \
                  devices, a cgroup's), or it is disabled"
                .into(),
        });
    }
    parts.gpus.retain(|g| !unlisted(g));
    let mut notes = Vec::new();
    for gpu in parts.gpus.iter_mut().filter(|g| nvidia(g)) {
        let Some(n) = nvml.iter().find(|n| n.pci == gpu.pci) else {
            continue;
        };
        gpu.index = GpuIndex(n.index);
        gpu.uuid = Some(n.uuid.clone());
        gpu.model = Some(n.model.clone());
        let covered: Vec<NodeId> = node_cpus
            .iter()
            .filter(|(_, cpus)| cpus.is_subset(&n.cpus))
            .map(|(id, _)| *id)
            .collect();
        match gpu.numa_node {
            Some(node) if n.cpus.is_empty() || covered.contains(&node) => {}
            Some(node) => notes.push(format!(
                "GPU {} ({}): hwloc places it on NUMA node {node}, but NVML's CPU affinity is {} (nodes {}); the plan follows hwloc",
                n.index,
                gpu.pci,
                n.cpus,
                crate::ids::node_list(&covered)
            )),
            None => {
                if let [node] = covered.as_slice() {
                    gpu.numa_node = Some(*node);
                    notes.push(format!(
                        "GPU {} ({}): hwloc does not know its NUMA node; NVML's CPU affinity places it on node {node}",
                        n.index, gpu.pci
                    ));
                }
            }
        }
    }
    for n in nvml
        .iter()
        .filter(|n| !parts.gpus.iter().any(|g| g.pci == n.pci))
    {
        notes.push(format!(
            "NVML reports GPU {} at {}, which hwloc does not see; it is left out",
            n.index, n.pci
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{L3Id, PackageId};
    use crate::topology::model::Core;

    fn gpu(pci: &str, node: Option<u32>) -> Gpu {
        Gpu {
            index: GpuIndex(9),
            vendor: Vendor::Nvidia,
            model: None,
            pci: pci.parse().unwrap(),
            uuid: None,
            numa_node: node.map(NodeId),
            package: None,
            pci_path: Vec::new(),
        }
    }

    fn nvml_gpu(index: u32, pci: &str, cpus: &str) -> NvmlGpu {
        NvmlGpu {
            index,
            uuid: format!("GPU-{index}"),
            pci: pci.parse().unwrap(),
            model: "NVIDIA A100-SXM4-80GB".into(),
            cpus: cpus.parse().unwrap(),
        }
    }

    /// Two nodes of 4 CPUs, and hwloc's view of four NVIDIA GPUs.
    fn parts() -> TopologyParts {
        let core = |cpu: u32| Core {
            cpus: [cpu].into_iter().collect(),
            package: PackageId(0),
            node: NodeId(cpu / 4),
            l3: L3Id(cpu / 4),
        };
        TopologyParts {
            cores: (0..8).map(core).collect(),
            gpus: vec![
                gpu("0000:07:00.0", Some(0)),
                gpu("0000:0f:00.0", Some(1)),
                gpu("0000:47:00.0", None),
                gpu("0000:4f:00.0", Some(1)),
            ],
            ..TopologyParts::default()
        }
    }

    #[test]
    fn nvml_numbers_names_and_cross_checks_the_gpus() {
        let mut p = parts();
        let notes = merge(
            &mut p,
            Ok(vec![
                nvml_gpu(1, "00000000:07:00.0", "0-3"),
                // NVML says node 0, hwloc node 1.
                nvml_gpu(0, "00000000:0F:00.0", "0-3"),
                // Locality unknown to hwloc: NVML's affinity decides.
                nvml_gpu(2, "00000000:47:00.0", "4-7"),
                // Socket-wide affinity covers hwloc's node: consistent.
                nvml_gpu(3, "00000000:4f:00.0", "0-7"),
                nvml_gpu(4, "00000000:87:00.0", "4-7"),
            ]),
        );
        let indices: Vec<u32> = p.gpus.iter().map(|g| g.index.0).collect();
        assert_eq!(indices, [1, 0, 2, 3]);
        assert_eq!(p.gpus[0].uuid.as_deref(), Some("GPU-1"));
        assert_eq!(p.gpus[0].model.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
        assert_eq!(p.gpus[2].numa_node, Some(NodeId(1)));
        assert_eq!(
            notes,
            [
                "GPU 0 (0000:0f:00.0): hwloc places it on NUMA node 1, but NVML's CPU affinity is 0-3 (nodes 0); the plan follows hwloc",
                "GPU 2 (0000:47:00.0): hwloc does not know its NUMA node; NVML's CPU affinity places it on node 1",
                "NVML reports GPU 4 at 0000:87:00.0, which hwloc does not see; it is left out",
            ]
        );
    }

    #[test]
    fn a_gpu_nvml_does_not_list_is_left_out() {
        // A container given one of the four GPUs: NVML lists it alone, as index 0.
        let mut p = parts();
        let notes = merge(&mut p, Ok(vec![nvml_gpu(0, "0000:47:00.0", "4-7")]));
        let kept: Vec<(u32, String)> = p
            .gpus
            .iter()
            .map(|g| (g.index.0, g.pci.to_string()))
            .collect();
        assert_eq!(kept, [(0, "0000:47:00.0".to_string())]);
        let left: Vec<String> = p.left_out_gpus.iter().map(|g| g.pci.to_string()).collect();
        assert_eq!(left, ["0000:07:00.0", "0000:0f:00.0", "0000:4f:00.0"]);
        assert!(p.left_out_gpus[0].why.starts_with("NVML does not list it"));
        // The kept GPU's locality came from NVML: said once, nothing about the others.
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn without_nvml_one_note_and_hwloc_alone() {
        let mut p = parts();
        let before = p.gpus.clone();
        let notes = merge(&mut p, Err("libnvidia-ml.so.1: not found".into()));
        assert_eq!(p.gpus, before);
        assert_eq!(
            notes,
            [
                "NVML is not available (libnvidia-ml.so.1: not found): NVIDIA GPUs are indexed by PCI address, as hwloc sees them"
            ]
        );
        // No NVIDIA GPU: nothing to say.
        let mut none = TopologyParts::default();
        assert!(merge(&mut none, Err("no driver".into())).is_empty());
    }
}
