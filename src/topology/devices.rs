//! Devices of a machine: GPUs and NICs, with their vendor or kind and PCI locality.

use crate::ids::{GpuIndex, NodeId, PackageId};
use crate::pci_addr::PciAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vendor {
    Nvidia,
    Amd,
    Intel,
}

impl Vendor {
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Intel => "intel",
        }
    }

    pub fn from_pci_vendor(id: u16) -> Option<Vendor> {
        match id {
            0x10de => Some(Vendor::Nvidia),
            0x1002 => Some(Vendor::Amd),
            0x8086 => Some(Vendor::Intel),
            _ => None,
        }
    }
}

/// Whether a PCI function may be a GPU: a GPU vendor's function whose class (`class_id`: base
/// class and subclass, as hwloc gives it) is display (0x03xx) or processing accelerator
/// (0x12xx). Whether it is one is `is_gpu`'s question.
pub fn gpu_candidate(vendor_id: u16, class_id: u16) -> Option<Vendor> {
    Vendor::from_pci_vendor(vendor_id).filter(|_| is_gpu_class(class_id))
}

/// A PCI class (base class and subclass, `0x0302`) a GPU can have: display (0x03) or
/// processing accelerator (0x12).
pub fn is_gpu_class(class_id: u16) -> bool {
    matches!(class_id >> 8, 0x03 | 0x12)
}

/// Whether a PCI function is a GPU, the one rule discovery, hwloc imports and the node check
/// of `exec`, `bind` and the launchers count with: an NVIDIA display or accelerator function
/// always; an AMD or Intel one only where something says it computes (`computes`: a ROCm/KFD
/// node, an RSMI, OpenCL or Level Zero device) or its id is a known accelerator's
/// (`ACCELERATORS`). A server's display chip (a BMC's ATI ES1000, Intel's integrated graphics)
/// is not a GPU: it gets no rank.
pub fn is_gpu(vendor_id: u16, device_id: u16, class_id: u16, computes: bool) -> Option<Vendor> {
    let vendor = gpu_candidate(vendor_id, class_id)?;
    let counts =
        vendor == Vendor::Nvidia || computes || known_accelerator(vendor_id, device_id).is_some();
    counts.then_some(vendor)
}

/// The AMD and Intel data-centre GPUs numaplan knows by PCI id, so that they count as GPUs
/// where nothing else says they compute (an `lstopo` export made without ROCm or Level Zero,
/// a node whose driver is not loaded). Kept here alone: the launchers' node check receives it
/// from here.
pub const ACCELERATORS: &[(u16, u16, &str)] = &[
    (0x1002, 0x67a0, "FirePro S9150/W9100 (Hawaii)"),
    (0x1002, 0x67a1, "FirePro S9100/W8100 (Hawaii)"),
    (0x1002, 0x6860, "Instinct MI25 (Vega 10)"),
    (
        0x1002,
        0x6861,
        "Radeon Pro WX 9100 / Instinct MI25 (Vega 10)",
    ),
    (0x1002, 0x686c, "Instinct MI25 MxGPU (Vega 10)"),
    (0x1002, 0x66a0, "Instinct MI50/MI60 (Vega 20)"),
    (0x1002, 0x66a1, "Instinct MI50/MI60 (Vega 20)"),
    (0x1002, 0x66a2, "Instinct MI50 (Vega 20)"),
    (0x1002, 0x7388, "Instinct MI100 (Arcturus)"),
    (0x1002, 0x738c, "Instinct MI100 (Arcturus)"),
    (0x1002, 0x738e, "Instinct MI100 (Arcturus)"),
    (0x1002, 0x7408, "Instinct MI250X (Aldebaran)"),
    (0x1002, 0x740c, "Instinct MI250/MI250X (Aldebaran)"),
    (0x1002, 0x740f, "Instinct MI210 (Aldebaran)"),
    (0x1002, 0x7410, "Instinct MI210 MxGPU (Aldebaran)"),
    (0x1002, 0x74a0, "Instinct MI300A"),
    (0x1002, 0x74a1, "Instinct MI300X"),
    (0x1002, 0x74a2, "Instinct MI308X"),
    (0x1002, 0x74a5, "Instinct MI325X"),
    (0x1002, 0x74a9, "Instinct MI300X HF"),
    (0x1002, 0x74b5, "Instinct MI300X VF"),
    (0x1002, 0x75a0, "Instinct MI350X"),
    (0x1002, 0x75a3, "Instinct MI355X"),
    (0x8086, 0x0bd0, "Data Center GPU Max (Ponte Vecchio)"),
    (0x8086, 0x0bd4, "Data Center GPU Max (Ponte Vecchio)"),
    (0x8086, 0x0bd5, "Data Center GPU Max 1550 (Ponte Vecchio)"),
    (0x8086, 0x0bd6, "Data Center GPU Max 1550 (Ponte Vecchio)"),
    (0x8086, 0x0bd7, "Data Center GPU Max 1350 (Ponte Vecchio)"),
    (0x8086, 0x0bd8, "Data Center GPU Max 1350 (Ponte Vecchio)"),
    (0x8086, 0x0bd9, "Data Center GPU Max 1100 (Ponte Vecchio)"),
    (0x8086, 0x0bda, "Data Center GPU Max 1100 (Ponte Vecchio)"),
    (0x8086, 0x0bdb, "Data Center GPU Max 1100 (Ponte Vecchio)"),
    (0x8086, 0x56c0, "Data Center GPU Flex 170"),
    (0x8086, 0x56c1, "Data Center GPU Flex 140"),
];

/// The name of a known accelerator.
pub fn known_accelerator(vendor_id: u16, device_id: u16) -> Option<&'static str> {
    ACCELERATORS
        .iter()
        .find(|(v, d, _)| *v == vendor_id && *d == device_id)
        .map(|(_, _, name)| *name)
}

/// The topology's note for a GPU vendor's display or accelerator function that `is_gpu` does
/// not count.
pub fn not_a_gpu_note(
    pci: impl std::fmt::Display,
    vendor_id: u16,
    device_id: u16,
    name: Option<&str>,
) -> String {
    let name = name.map(|n| format!(" ({n})")).unwrap_or_default();
    format!(
        "PCI device {pci} [{vendor_id:04x}:{device_id:04x}]{name} is not counted as a GPU: nothing \
         says it computes (no ROCm/KFD node, no RSMI, OpenCL or Level Zero device) and it is not \
         a known accelerator; a server's display chip gets no rank"
    )
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    pub index: GpuIndex,
    pub vendor: Vendor,
    pub model: Option<String>,
    pub pci: PciAddr,
    pub uuid: Option<String>,
    /// The node of the GPU's PCI locality (a node with CPUs); `None` = unknown locality.
    pub numa_node: Option<NodeId>,
    /// The package its PCI device hangs under, where known.
    pub package: Option<PackageId>,
    /// PCI ancestry, outermost first: opaque bridge ids (host bridge, root port, switch ports).
    pub pci_path: Vec<String>,
}

/// A GPU on the PCI bus that this process cannot use, and why: a container runtime handed out
/// others (its `/dev` node is absent, NVML does not list it, `NVIDIA_VISIBLE_DEVICES` leaves it
/// out). It gets no rank, and counts in the machine's shape (the node check counts PCI GPUs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOutGpu {
    pub pci: PciAddr,
    pub vendor: Vendor,
    pub why: String,
}

pub use crate::nic_kind::NicKind;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nic {
    /// `mlx5_0`, `efa0`, `cxi0`, `hsn0`, `eth0`.
    pub name: String,
    pub kind: NicKind,
    pub pci: Option<PciAddr>,
    pub numa_node: Option<NodeId>,
    pub package: Option<PackageId>,
    pub pci_path: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::{Vendor, is_gpu};

    #[test]
    fn gpus_by_vendor_class_and_evidence() {
        assert_eq!(is_gpu(0x10de, 0x20b0, 0x0302, false), Some(Vendor::Nvidia)); // 3D controller
        assert_eq!(is_gpu(0x10de, 0x1db8, 0x0300, false), Some(Vendor::Nvidia)); // VGA
        assert_eq!(is_gpu(0x1002, 0x74a1, 0x1200, false), Some(Vendor::Amd)); // MI300X by id
        assert_eq!(is_gpu(0x1002, 0x740c, 0x0380, false), Some(Vendor::Amd)); // MI250X by id
        assert_eq!(is_gpu(0x8086, 0x0bd5, 0x0380, false), Some(Vendor::Intel)); // PVC by id
        // A BMC's display chip (ATI ES1000) and an integrated Intel GPU: only with evidence.
        assert_eq!(is_gpu(0x1002, 0x515e, 0x0300, false), None);
        assert_eq!(is_gpu(0x1002, 0x515e, 0x0300, true), Some(Vendor::Amd));
        assert_eq!(is_gpu(0x8086, 0x9a49, 0x0300, false), None);
        assert_eq!(is_gpu(0x15b3, 0x101d, 0x0207, true), None); // a Mellanox NIC
        assert_eq!(is_gpu(0x10de, 0x10f0, 0x0403, true), None); // an NVIDIA audio function
        assert_eq!(is_gpu(0x1a03, 0x2000, 0x0300, true), None); // the BMC's ASPEED VGA
    }
}
