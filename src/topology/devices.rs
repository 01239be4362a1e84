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

/// Whether a PCI device is a GPU: a GPU vendor's device whose class (`class_id`: base class and
/// subclass, as hwloc gives it) is display (0x03xx) or processing accelerator (0x12xx). Discovery
/// and `exec`'s node check count GPUs with this one rule (the launchers' `check-node.sh.j2`
/// repeats it in shell).
pub fn is_gpu(vendor_id: u16, class_id: u16) -> Option<Vendor> {
    Vendor::from_pci_vendor(vendor_id).filter(|_| is_gpu_class(class_id))
}

/// A PCI class (base class and subclass, `0x0302`) a GPU can have: display (0x03) or
/// processing accelerator (0x12).
pub fn is_gpu_class(class_id: u16) -> bool {
    matches!(class_id >> 8, 0x03 | 0x12)
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NicKind {
    Infiniband,
    Roce,
    Efa,
    Slingshot,
    Ethernet,
}

impl NicKind {
    pub fn name(self) -> &'static str {
        match self {
            NicKind::Infiniband => "infiniband",
            NicKind::Roce => "roce",
            NicKind::Efa => "efa",
            NicKind::Slingshot => "slingshot",
            NicKind::Ethernet => "ethernet",
        }
    }
}

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
    fn gpus_by_vendor_and_class() {
        assert_eq!(is_gpu(0x10de, 0x0302), Some(Vendor::Nvidia)); // 3D controller
        assert_eq!(is_gpu(0x1002, 0x1200), Some(Vendor::Amd)); // processing accelerator
        assert_eq!(is_gpu(0x8086, 0x0300), Some(Vendor::Intel)); // VGA
        assert_eq!(is_gpu(0x15b3, 0x0207), None); // a Mellanox NIC
        assert_eq!(is_gpu(0x10de, 0x0403), None); // an NVIDIA audio function
        assert_eq!(is_gpu(0x1a03, 0x0300), None); // the BMC's ASPEED VGA
    }
}
