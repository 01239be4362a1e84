//! AMD GPUs in ROCm's order. ROCm (the ROCr runtime, `rocm-smi`, HIP and
//! `ROCR_VISIBLE_DEVICES`) numbers GPUs in the order of the kernel's KFD topology nodes
//! (`/sys/class/kfd/kfd/topology/nodes/N`) that have SIMDs, which need not be PCI order. Each
//! node's `properties` names its PCI device as `domain` and `location_id` (bus << 8 | devfn).

use std::path::Path;

use super::model::{TopologyParts, Vendor};
use crate::ids::GpuIndex;
use crate::pci_addr::PciAddr;

/// Where the KFD topology lives, relative to the root of the file system (or of a sysfs snapshot).
pub const NODES: &str = "sys/class/kfd/kfd/topology/nodes";

/// The PCI addresses of the GPUs among KFD topology nodes, in node order. `nodes` holds each
/// node's number and its `properties` text; CPU nodes (`simd_count 0`) are skipped.
pub fn gpu_order(nodes: &[(u32, String)]) -> Vec<PciAddr> {
    let mut nodes: Vec<&(u32, String)> = nodes.iter().collect();
    nodes.sort_by_key(|(n, _)| *n);
    nodes
        .into_iter()
        .filter_map(|(_, properties)| {
            let value = |key: &str| {
                properties.lines().find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
                })
            };
            if value("simd_count")? == 0 {
                return None;
            }
            let location = value("location_id")?;
            Some(PciAddr {
                domain: value("domain").unwrap_or(0) as u32,
                bus: (location >> 8) as u8,
                device: ((location >> 3) & 0x1f) as u8,
                function: (location & 7) as u8,
            })
        })
        .collect()
}

/// Reads the KFD topology of this machine (empty where there is none: no AMD driver).
pub fn read(dir: &Path) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let node = e.file_name().to_str()?.parse().ok()?;
            Some((
                node,
                std::fs::read_to_string(e.path().join("properties")).ok()?,
            ))
        })
        .collect()
}

/// Renumbers the AMD GPUs in `order` (their existing index set, handed out again in KFD order)
/// when it names exactly the AMD GPUs hwloc found; otherwise leaves them alone.
pub fn apply(parts: &mut TopologyParts, order: &[PciAddr]) {
    let mut amd: Vec<&mut super::model::Gpu> = parts
        .gpus
        .iter_mut()
        .filter(|g| g.vendor == Vendor::Amd)
        .collect();
    let mut found: Vec<PciAddr> = amd.iter().map(|g| g.pci).collect();
    let mut wanted = order.to_vec();
    found.sort();
    wanted.sort();
    if amd.is_empty() || found != wanted {
        return;
    }
    let mut indices: Vec<GpuIndex> = amd.iter().map(|g| g.index).collect();
    indices.sort();
    for gpu in &mut amd {
        let position = order.iter().position(|p| *p == gpu.pci).unwrap_or(0);
        gpu.index = indices[position];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::model::Gpu;

    fn properties(simd: u32, domain: u32, location: u32) -> String {
        format!(
            "cpu_cores_count 0\nsimd_count {simd}\nmem_banks_count 1\nlocation_id {location}\ndomain {domain}\ndrm_render_minor 128\n"
        )
    }

    #[test]
    fn rocm_order_is_kfd_node_order() {
        // Node 0 is the CPU; the GPUs' nodes are not in PCI order.
        let nodes = vec![
            (2, properties(440, 0, 0xd100)),
            (0, properties(0, 0, 0)),
            (1, properties(440, 0, 0xd600)),
            (3, properties(440, 1, 0xc108)),
        ];
        let order = gpu_order(&nodes);
        let pci: Vec<String> = order.iter().map(ToString::to_string).collect();
        assert_eq!(pci, ["0000:d6:00.0", "0000:d1:00.0", "0001:c1:01.0"]);

        let gpu = |pci: &str, index: u32| Gpu {
            index: GpuIndex(index),
            vendor: Vendor::Amd,
            model: None,
            pci: pci.parse().unwrap(),
            uuid: None,
            numa_node: None,
            package: None,
            pci_path: Vec::new(),
        };
        // hwloc numbered them in PCI order.
        let mut parts = TopologyParts {
            gpus: vec![
                gpu("0000:d1:00.0", 0),
                gpu("0000:d6:00.0", 1),
                gpu("0001:c1:01.0", 2),
            ],
            ..TopologyParts::default()
        };
        apply(&mut parts, &order);
        let indices: Vec<u32> = parts.gpus.iter().map(|g| g.index.0).collect();
        assert_eq!(indices, [1, 0, 2]);
        // A KFD view that does not match hwloc's GPUs changes nothing.
        apply(&mut parts, &order[..2]);
        let again: Vec<u32> = parts.gpus.iter().map(|g| g.index.0).collect();
        assert_eq!(again, [1, 0, 2]);
    }
}
