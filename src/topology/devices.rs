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
