//! hwloc as a topology source, through hwlocality and the system libhwloc: XML exports
//! (`lstopo --of xml`, hwloc 1.x and 2.x formats) and the live machine (`discover`).
//!
//! This is the only module that talks to hwloc. It turns hwloc's object tree into
//! [`TopologyParts`](super::model::TopologyParts):
//! - a PU's NUMA node is the one *with CPUs* among the memory children nearest above it (hwloc
//!   reports the parent's cpuset for memory-only nodes: GPU memory, HBM, CXL);
//! - a NUMA node that no PU calls its own is memory-only; its kind comes from hwloc's subtype
//!   (`GPUMemory` with info `PCIBusID`, `HBM`/`MCDRAM`, `NVM`, `SPM`, `CXL-*`);
//! - an L3 group is the set of PUs under one highest-level data/unified cache;
//! - CPU kinds are hwloc's, kept only when there are at least two (a hybrid machine);
//! - GPUs are PCI devices of NVIDIA/AMD/Intel with a display, 3D or processing-accelerator class;
//!   NICs are network or InfiniBand PCI devices, named after their OpenFabrics or network OS
//!   device.
//!
//! `xml.rs` imports an export in a sandboxed child, `convert.rs` walks hwloc's tree, `pci.rs`
//! finds its GPUs and NICs; this file holds the settings every load runs with and `discover`.

use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::topology::builder::{BuildFlags, TypeFilter};

use super::error::TopologyError;
use super::model::{Topology, Vendor};
use super::tree::Reading;
use crate::cpuset::CpuSet;
use crate::variables::{NVIDIA_VISIBLE_DEVICES, NVML_WITH_FSROOT};

mod convert;
mod object;
mod pci;
mod settings;
mod tree;
mod xml;

pub use convert::convert;
use object::to_cpuset;
use settings::{Check, with_hwloc_settings};
pub use settings::{library, linked_version};
pub use xml::load_xml;

/// Reads the machine numaplan runs on: the whole machine (hwloc's `INCLUDE_DISALLOWED`, so that
/// a cgroup-restricted job still sees every CPU and node), with the CPUs this process may use,
/// the cgroup's cpuset (hwloc's allowed set) intersected with its affinity (`taskset`, a Slurm
/// step's binding), as the allowed set.
///
/// With `HWLOC_FSROOT` set, hwloc reads a sysfs snapshot (`hwloc-gather-topology`) instead; the
/// machine is then named after the snapshot's folder, and neither this process's affinity nor
/// NVML (which would describe this machine, not the snapshot's) is consulted.
pub fn discover(reading: Reading) -> Result<Topology, TopologyError> {
    let failed = |detail: String| TopologyError::Discover { detail };
    let build = || {
        hwlocality::Topology::builder()
            .with_flags(BuildFlags::INCLUDE_DISALLOWED)
            .map_err(|e| failed(e.to_string()))?
            .with_io_type_filter(TypeFilter::KeepImportant)
            .map_err(|e| failed(e.to_string()))?
            .build()
            .map_err(|e| failed(e.to_string()))
    };
    let topo = with_hwloc_settings(Check::None, build)?;
    let snapshot = (!topo.is_this_system())
        .then(|| std::env::var_os("HWLOC_FSROOT"))
        .flatten()
        .map(std::path::PathBuf::from);
    let root = snapshot.clone().unwrap_or_else(|| "/".into());
    let (name, provenance) = match &snapshot {
        Some(dir) => (
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "snapshot".into()),
            format!(
                "discovered with hwloc from the sysfs snapshot `{}` (HWLOC_FSROOT)",
                dir.display()
            ),
        ),
        None => (
            crate::sys::proc::hostname(),
            "discovered with hwloc on this machine".to_string(),
        ),
    };
    // ROCm's compute nodes: they say which AMD devices compute, and in which order ROCm
    // numbers them.
    let kfd = super::kfd::gpu_order(&super::kfd::read(&root.join(super::kfd::NODES)));
    let mut parts = convert(&topo, &name, &provenance, &kfd, reading);
    // A snapshot is another machine, whose NVML is not this one's: asked only where the
    // caller says an NVML answers for it (a stand-in, in the tests).
    let ask_nvml = snapshot.is_none() || std::env::var_os(NVML_WITH_FSROOT).is_some();
    let mut nvml_answered = false;
    if ask_nvml && parts.gpus.iter().any(|g| g.vendor == Vendor::Nvidia) {
        let nvml = super::nvml::probe();
        nvml_answered = nvml.is_ok();
        let notes = super::nvml::merge(&mut parts, nvml);
        parts.notes.extend(notes);
    }
    if parts.gpus.iter().any(|g| g.vendor == Vendor::Amd) {
        super::kfd::apply(&mut parts, &kfd);
    }
    // Inside a container, only the GPUs it was handed (`/dev` is read only where there are
    // GPUs: `bind job.yaml` discovers at every rank's start).
    if !parts.gpus.is_empty() {
        let handed = super::container_gpus::read(&root, std::env::var(NVIDIA_VISIBLE_DEVICES).ok());
        let notes = super::container_gpus::restrict(&mut parts, &handed, nvml_answered);
        parts.notes.extend(notes);
    }
    if snapshot.is_none() {
        parts.container = crate::sys::confinement::container().map(str::to_string);
        let affinity = topo
            .cpu_binding(CpuBindingFlags::PROCESS)
            .map_err(|e| failed(format!("cannot read this process's CPU affinity: {e}")))?;
        let all: CpuSet = parts.cores.iter().map(|c| &c.cpus).collect();
        let allowed = parts
            .allowed
            .take()
            .unwrap_or_else(|| all.clone())
            .intersection(&to_cpuset(&affinity));
        parts.allowed = (allowed != all).then_some(allowed);
    }
    Topology::build(parts).map_err(|error| TopologyError::Inconsistent {
        file: "this machine".into(),
        error,
    })
}
