//! The PCI devices of an hwloc topology that numaplan uses: GPUs (numbered as their vendors'
//! tools number them, with model and UUID from their OS devices) and NICs, each placed on its
//! NUMA node and package by its locality, with the bridges above it.

use std::collections::BTreeMap;

use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::{
    DownstreamAttributes, ObjectAttributes, PCIDeviceAttributes, UpstreamAttributes,
};
use hwlocality::object::types::{BridgeType, OSDeviceType, ObjectType};

use super::object::{package_id, text, to_cpuset};
use crate::cpuset::CpuSet;
use crate::ids::{GpuIndex, NodeId, PackageId};
use crate::pci_addr::PciAddr;
use crate::topology::devices;
use crate::topology::model::{Core, Gpu, Nic, NicKind, Vendor};

/// A PCI function's address, as hwloc gives it for a device or a bridge's upstream side.
fn address(p: &PCIDeviceAttributes) -> PciAddr {
    PciAddr {
        domain: p.domain() as u32,
        bus: p.bus_id(),
        device: p.bus_device(),
        function: p.function(),
    }
}

/// The address of a PCI function object (`None` for any other object).
pub(super) fn address_of(dev: &TopologyObject) -> Option<PciAddr> {
    match dev.attributes() {
        Some(ObjectAttributes::PCIDevice(p)) if dev.object_type() == ObjectType::PCIDevice => {
            Some(address(p))
        }
        _ => None,
    }
}

/// Where a PCI device sits: its NUMA node and package, from the CPUs of its first non-I/O
/// ancestor.
pub(super) struct Locality<'c> {
    cores: &'c [Core],
    /// Each node with CPUs, and its CPUs.
    node_cpus: Vec<(u32, CpuSet)>,
}

impl<'c> Locality<'c> {
    pub(super) fn new(cores: &'c [Core]) -> Locality<'c> {
        let mut m: BTreeMap<u32, CpuSet> = BTreeMap::new();
        for c in cores {
            let e = m.entry(c.node.0).or_default();
            *e = e.union(&c.cpus);
        }
        Locality {
            cores,
            node_cpus: m.into_iter().collect(),
        }
    }

    /// The node whose CPUs the ancestor covers (the first of several, unless the ancestor is
    /// the whole machine: then unknown), and the package above it, else the node's.
    fn of(&self, dev: &TopologyObject) -> (Option<NodeId>, Option<PackageId>) {
        let Some(anc) = dev.first_non_io_ancestor() else {
            return (None, None);
        };
        let package = anc
            .ancestors()
            .chain(std::iter::once(anc))
            .find(|a| a.object_type() == ObjectType::Package)
            .map(package_id);
        let set = anc.cpuset().map(|s| to_cpuset(&s)).unwrap_or_default();
        let candidates: Vec<u32> = self
            .node_cpus
            .iter()
            .filter(|(_, cpus)| cpus.intersects(&set))
            .map(|(id, _)| *id)
            .collect();
        let is_root = anc.object_type() == ObjectType::Machine;
        let node = match candidates.as_slice() {
            [one] => Some(NodeId(*one)),
            [first, ..] if !is_root => Some(NodeId(*first)),
            _ => None,
        };
        let package = package.or_else(|| {
            let n = node?;
            self.cores.iter().find(|c| c.node == n).map(|c| c.package)
        });
        (node, package)
    }
}

/// A GPU as found, before numbering: its vendor, address and the index its source gave it
/// (NVML's, ROCm SMI's), if any.
pub(super) struct FoundGpu {
    vendor: Vendor,
    pci: PciAddr,
    explicit: Option<u32>,
    gpu: Gpu,
}

/// What the PCI devices hold: GPUs, NICs, and the GPU vendors' display or accelerator devices
/// that are not counted as GPUs (as the topology's notes name them).
pub(super) struct PciFound {
    pub gpus: Vec<FoundGpu>,
    pub nics: Vec<Nic>,
    pub not_gpus: Vec<String>,
}

/// The GPUs and NICs among the PCI devices, placed by `place`. `kfd` holds the PCI addresses of
/// the ROCm (KFD) compute nodes of the machine, which say that an AMD device computes.
pub(super) fn pci_devices(
    topo: &hwlocality::Topology,
    place: &Locality,
    kfd: &[PciAddr],
) -> PciFound {
    let mut found = PciFound {
        gpus: Vec::new(),
        nics: Vec::new(),
        not_gpus: Vec::new(),
    };
    for dev in topo.pci_devices() {
        let Some(ObjectAttributes::PCIDevice(pci)) = dev.attributes() else {
            continue;
        };
        let addr = address(pci);
        let class = pci.class_id();
        let (numa_node, package) = place.of(dev);
        let at = Placed {
            dev,
            addr,
            osdevs: os_devices(dev),
            numa_node,
            package,
        };
        let computes = kfd.contains(&addr) || at.osdevs.iter().any(|o| is_compute_device(o));
        let (vendor_id, device_id) = (pci.vendor_id(), pci.device_id());
        if let Some(vendor) = devices::is_gpu(vendor_id, device_id, class, computes) {
            found.gpus.push(at.gpu(vendor));
        } else if devices::gpu_candidate(vendor_id, class).is_some() {
            let name = text(dev.info("PCIDevice"));
            found.not_gpus.push(devices::not_a_gpu_note(
                addr,
                vendor_id,
                device_id,
                name.as_deref(),
            ));
        } else if class >> 8 == 0x02 || class == 0x0c06 {
            found.nics.push(at.nic(vendor_id, device_id, class));
        }
    }
    // By address (each note starts with it), whatever order hwloc's tree holds them in.
    found.not_gpus.sort();
    found
}

/// An OS device of a compute API (ROCm SMI, OpenCL, Level Zero, CUDA, NVML): its PCI device
/// computes.
fn is_compute_device(osdev: &TopologyObject) -> bool {
    let by_subtype = text(osdev.subtype()).is_some_and(|s| {
        ["RSMI", "OpenCL", "LevelZero", "CUDA", "NVML"]
            .iter()
            .any(|api| s.eq_ignore_ascii_case(api))
    });
    let by_name = text(osdev.name()).is_some_and(|n| {
        ["rsmi", "opencl", "ze", "cuda", "nvml"]
            .iter()
            .any(|prefix| {
                n.strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
            })
    });
    by_subtype || by_name
}

/// A PCI device with its address, OS devices and locality.
struct Placed<'t> {
    dev: &'t TopologyObject,
    addr: PciAddr,
    osdevs: Vec<&'t TopologyObject>,
    numa_node: Option<NodeId>,
    package: Option<PackageId>,
}

impl Placed<'_> {
    /// A GPU: its model and UUID from the OS devices' infos (the device's own as a fallback),
    /// its index from an `nvmlN`/`rsmiN` OS device.
    fn gpu(&self, vendor: Vendor) -> FoundGpu {
        let explicit = self.osdevs.iter().find_map(|o| {
            let n = text(o.name())?;
            ["nvml", "rsmi"]
                .iter()
                .find_map(|p| n.strip_prefix(p)?.parse::<u32>().ok())
        });
        let info = |key_suffix: &str| {
            self.osdevs
                .iter()
                .chain(std::iter::once(&self.dev))
                .find_map(|o| {
                    o.infos()
                        .iter()
                        .find(|i| i.name().to_string_lossy().ends_with(key_suffix))
                        .map(|i| i.value().to_string_lossy().into_owned())
                })
        };
        let model = info("GPUModel").or_else(|| text(self.dev.info("PCIDevice")));
        FoundGpu {
            vendor,
            pci: self.addr,
            explicit,
            gpu: Gpu {
                index: GpuIndex(0),
                vendor,
                model,
                pci: self.addr,
                uuid: info("UUID"),
                numa_node: self.numa_node,
                package: self.package,
                pci_path: bridge_path(self.dev),
            },
        }
    }

    /// A NIC: its kind from the vendor and class, its name from its OpenFabrics or network OS
    /// device (else its address).
    fn nic(&self, vendor_id: u16, device_id: u16, class: u16) -> Nic {
        let named = |ty: OSDeviceType| {
            self.osdevs.iter().find_map(|o| match o.attributes() {
                Some(ObjectAttributes::OSDevice(a)) if a.device_type() == ty => text(o.name()),
                _ => None,
            })
        };
        let fabric = named(OSDeviceType::OpenFabrics);
        let kind = match vendor_id {
            0x1d0f if device_id & 0xfff0 == 0xefa0 => NicKind::Efa,
            0x17db => NicKind::Slingshot,
            _ if class == 0x0207 || class == 0x0c06 => NicKind::Infiniband,
            0x15b3 if fabric.is_some() => NicKind::Roce,
            _ => NicKind::Ethernet,
        };
        let name = fabric
            .or_else(|| named(OSDeviceType::Network))
            .unwrap_or_else(|| format!("pci-{}", self.addr));
        Nic {
            name,
            kind,
            pci: Some(self.addr),
            numa_node: self.numa_node,
            package: self.package,
            pci_path: bridge_path(self.dev),
        }
    }
}

/// GPU indices: the source's own (NVML, ROCm SMI) when every GPU of a vendor has one, and they
/// differ; otherwise ascending PCI address per vendor. Vendors after the first continue the
/// count.
pub(super) fn number_gpus(mut found: Vec<FoundGpu>) -> Vec<Gpu> {
    found.sort_by_key(|g| (g.vendor, g.pci));
    let mut gpus = Vec::new();
    let mut base = 0;
    let mut vendors: Vec<Vendor> = found.iter().map(|g| g.vendor).collect();
    vendors.dedup();
    for vendor in vendors {
        let of_vendor: Vec<&FoundGpu> = found.iter().filter(|g| g.vendor == vendor).collect();
        let explicit: Option<Vec<u32>> = of_vendor.iter().map(|g| g.explicit).collect();
        let unique = explicit.as_ref().is_some_and(|e| {
            let mut s = e.clone();
            s.sort();
            s.dedup();
            s.len() == e.len()
        });
        for (i, g) in of_vendor.iter().enumerate() {
            let idx = match (&explicit, unique) {
                (Some(e), true) => e[i],
                _ => i as u32,
            };
            let mut gpu = g.gpu.clone();
            gpu.index = GpuIndex(base + idx);
            gpus.push(gpu);
        }
        base += of_vendor.len() as u32;
    }
    gpus
}

/// A PCI device's OS devices, in the order their information is trusted: the vendor's own
/// management library first (NVML, ROCm SMI, Level Zero), then CUDA, then OpenCL and the rest;
/// by name within each. An XML export lists them in any order, and the GPU's model and UUID must
/// not depend on it.
fn os_devices(dev: &TopologyObject) -> Vec<&TopologyObject> {
    let mut osdevs: Vec<&TopologyObject> = dev
        .io_children()
        .filter(|c| c.object_type() == ObjectType::OSDevice)
        .collect();
    osdevs.sort_by_cached_key(|o| {
        let name = text(o.name()).unwrap_or_default();
        let backend = text(o.subtype())
            .unwrap_or_else(|| name.clone())
            .to_ascii_lowercase();
        let rank = if ["nvml", "rsmi", "levelzero", "ze"]
            .iter()
            .any(|b| backend.starts_with(b))
        {
            0
        } else if backend.starts_with("cuda") {
            1
        } else if backend.starts_with("opencl") {
            2
        } else {
            3
        };
        (rank, name)
    });
    osdevs
}

/// The bridges above a PCI device, outermost first: `host:DDDD:BB` for a host bridge (its
/// domain and first bus), the PCI address for a PCI-to-PCI bridge or switch port.
fn bridge_path(dev: &TopologyObject) -> Vec<String> {
    let mut path: Vec<String> = dev
        .ancestors()
        .take_while(|a| a.object_type() == ObjectType::Bridge)
        .map(|b| {
            let Some(ObjectAttributes::Bridge(attr)) = b.attributes() else {
                return "bridge".to_string();
            };
            match attr.upstream_attributes() {
                Some(UpstreamAttributes::PCI(p)) => address(p).to_string(),
                // hwlocality panics when asked for the downstream attributes of a non-PCI
                // downstream, which a malformed XML can claim (`bridge_type="0-0"`).
                None if attr.downstream_type() != BridgeType::PCI => "host".to_string(),
                None => match attr.downstream_attributes() {
                    Some(DownstreamAttributes::PCI(d)) => {
                        format!("host:{:04x}:{:02x}", d.domain(), d.secondary_bus())
                    }
                    None => "host".to_string(),
                },
            }
        })
        .collect();
    path.reverse();
    path
}
