//! GPUs a container runtime hands out. A container started with some of the machine's GPUs (the
//! NVIDIA Container Toolkit's `NVIDIA_VISIBLE_DEVICES`, a Kubernetes device plugin, ROCm's
//! `--device /dev/dri/renderD128`) still sees every GPU of the host in sysfs, so hwloc finds
//! them all; it can use only those whose device nodes it was given, and its CUDA or HIP runtime
//! numbers those 0, 1, ... in their order. Discovery plans only those: [`restrict`] moves the
//! others to the topology's left-out GPUs (`topo` lists them with the reason) and renumbers the
//! rest, from what [`read`] finds:
//!
//! - NVIDIA, where NVML did not answer (NVML lists only this process's GPUs, and `nvml::merge`
//!   left the others out): the `/dev/nvidiaN` nodes present, matched to GPUs by the driver's
//!   device minor (`/proc/driver/nvidia/gpus/ADDR/information`, which the toolkit also masks
//!   for the GPUs it does not hand out); else `NVIDIA_VISIBLE_DEVICES` by index (UUIDs and MIG
//!   instances need NVML: every GPU stays, with a note).
//! - AMD, where `/dev/kfd` is present: the `/dev/dri/renderD*` nodes present, matched by their
//!   PCI device (`/sys/class/drm/renderDN/device`).
//!
//! No device node at all says nothing (a driver not loaded, a sysfs snapshot without `/dev`):
//! every GPU stays, as on the bare machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::model::{Gpu, LeftOutGpu, TopologyParts, Vendor};
use crate::ids::GpuIndex;
use crate::pci_addr::PciAddr;

/// What says which GPUs this process was given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandedOut {
    /// `NVIDIA_VISIBLE_DEVICES`, as the NVIDIA Container Toolkit sets it.
    pub nvidia_visible: Option<String>,
    /// The minors of the `/dev/nvidiaN` nodes present; `None`: none at all.
    pub nvidia_nodes: Option<BTreeSet<u32>>,
    /// The device minor of each NVIDIA GPU the driver's `/proc` lists.
    pub nvidia_minors: BTreeMap<PciAddr, u32>,
    /// The PCI devices of the `/dev/dri/renderD*` nodes present, where `/dev/kfd` is; `None`:
    /// no ROCm device nodes.
    pub amd_render: Option<BTreeSet<PciAddr>>,
}

/// Reads the device nodes under `root` (`/`, or a snapshot's root) and `nvidia_visible`.
pub fn read(root: &Path, nvidia_visible: Option<String>) -> HandedOut {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let dev = root.join("dev");
    let nvidia_nodes: BTreeSet<u32> = names(&dev)
        .iter()
        .filter_map(|n| n.strip_prefix("nvidia")?.parse().ok())
        .collect();
    let gpus = root.join("proc/driver/nvidia/gpus");
    let nvidia_minors = names(&gpus)
        .iter()
        .filter_map(|name| {
            let pci: PciAddr = name.parse().ok()?;
            let info = std::fs::read_to_string(gpus.join(name).join("information")).ok()?;
            let minor = info
                .lines()
                .find_map(|l| l.strip_prefix("Device Minor:"))?
                .trim()
                .parse()
                .ok()?;
            Some((pci, minor))
        })
        .collect();
    let amd_render = dev.join("kfd").exists().then(|| {
        names(&dev.join("dri"))
            .iter()
            .filter(|n| n.starts_with("renderD"))
            .filter_map(|n| {
                let device = std::fs::read_link(root.join("sys/class/drm").join(n).join("device"));
                device.ok()?.file_name()?.to_str()?.parse().ok()
            })
            .collect::<BTreeSet<PciAddr>>()
    });
    HandedOut {
        nvidia_visible,
        nvidia_nodes: (!nvidia_nodes.is_empty()).then_some(nvidia_nodes),
        nvidia_minors,
        amd_render: amd_render.filter(|r| !r.is_empty()),
    }
}

/// Leaves out the GPUs this process was not given and renumbers the rest of each vendor as its
/// runtime does; returns notes for the plans (what could not be told). `nvml_answered`: NVML
/// listed the NVIDIA GPUs, and `nvml::merge` already left the others out.
pub fn restrict(parts: &mut TopologyParts, h: &HandedOut, nvml_answered: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if !nvml_answered {
        let nvidia: Vec<&Gpu> = of_vendor(&parts.gpus, Vendor::Nvidia);
        let (left, note) = nvidia_left_out(h, &nvidia);
        notes.extend(note);
        leave_out(parts, Vendor::Nvidia, &left);
    }
    if let Some(render) = &h.amd_render {
        let left: BTreeMap<PciAddr, String> = of_vendor(&parts.gpus, Vendor::Amd)
            .iter()
            .filter(|g| !render.contains(&g.pci))
            .map(|g| {
                let why = "its render node is not in this process's /dev/dri (the container \
                           runtime hands out the others)";
                (g.pci, why.to_string())
            })
            .collect();
        leave_out(parts, Vendor::Amd, &left);
    }
    notes
}

fn of_vendor(gpus: &[Gpu], vendor: Vendor) -> Vec<&Gpu> {
    let mut of: Vec<&Gpu> = gpus.iter().filter(|g| g.vendor == vendor).collect();
    of.sort_by_key(|g| g.index);
    of
}

/// The NVIDIA GPUs this process was not given, by PCI address with the reason; and a note
/// where that cannot be told.
fn nvidia_left_out(h: &HandedOut, gpus: &[&Gpu]) -> (BTreeMap<PciAddr, String>, Option<String>) {
    if let Some(nodes) = &h.nvidia_nodes
        && !h.nvidia_minors.is_empty()
    {
        let left = gpus
            .iter()
            .filter_map(|g| {
                let why = match h.nvidia_minors.get(&g.pci) {
                    Some(minor) if nodes.contains(minor) => return None,
                    Some(minor) => format!("/dev/nvidia{minor} is not in this process's /dev"),
                    None => "the driver's /proc/driver/nvidia/gpus does not list it here (the \
                             container runtime masks the GPUs it does not hand out)"
                        .to_string(),
                };
                Some((g.pci, why))
            })
            .collect();
        return (left, None);
    }
    let Some(visible) = h.nvidia_visible.as_deref().map(str::trim) else {
        return (BTreeMap::new(), None);
    };
    let all = |why: String| gpus.iter().map(|g| (g.pci, why.clone())).collect();
    match visible {
        "all" => (BTreeMap::new(), None),
        "" | "none" | "void" => (
            all(format!(
                "NVIDIA_VISIBLE_DEVICES={visible}: the container runtime hands out no GPU"
            )),
            None,
        ),
        list => match list
            .split(',')
            .map(|i| i.trim().parse::<usize>())
            .collect::<Result<BTreeSet<_>, _>>()
        {
            Ok(named) => {
                let left = gpus
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !named.contains(i))
                    .map(|(i, g)| {
                        let why = format!("NVIDIA_VISIBLE_DEVICES={list} does not name GPU {i}");
                        (g.pci, why)
                    })
                    .collect();
                (left, None)
            }
            Err(_) => (
                BTreeMap::new(),
                Some(format!(
                    "NVIDIA_VISIBLE_DEVICES={list} names GPUs by UUID or MIG instance, which \
                     only NVML maps to PCI addresses, and NVML did not answer: every NVIDIA GPU \
                     is planned, including any this container cannot use"
                )),
            ),
        },
    }
}

/// Moves `left` out of the vendor's GPUs, and numbers the rest as its runtime does: in their
/// order, taking the lowest of the vendor's indices (0, 1, ... on a machine of one vendor).
fn leave_out(parts: &mut TopologyParts, vendor: Vendor, left: &BTreeMap<PciAddr, String>) {
    if left.is_empty() {
        return;
    }
    let indices: Vec<GpuIndex> = of_vendor(&parts.gpus, vendor)
        .iter()
        .map(|g| g.index)
        .collect();
    for (pci, why) in left {
        parts.left_out_gpus.push(LeftOutGpu {
            pci: *pci,
            vendor,
            why: why.clone(),
        });
    }
    parts.gpus.retain(|g| !left.contains_key(&g.pci));
    let mut kept: Vec<&mut Gpu> = parts
        .gpus
        .iter_mut()
        .filter(|g| g.vendor == vendor)
        .collect();
    kept.sort_by_key(|g| g.index);
    for (gpu, index) in kept.into_iter().zip(indices) {
        gpu.index = index;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, pci: &str, vendor: Vendor) -> Gpu {
        Gpu {
            index: GpuIndex(index),
            vendor,
            model: None,
            pci: pci.parse().unwrap(),
            uuid: None,
            numa_node: None,
            package: None,
            pci_path: Vec::new(),
        }
    }

    fn four(vendor: Vendor) -> TopologyParts {
        TopologyParts {
            gpus: [
                "0000:07:00.0",
                "0000:0f:00.0",
                "0000:47:00.0",
                "0000:4f:00.0",
            ]
            .iter()
            .enumerate()
            .map(|(i, pci)| gpu(i as u32, pci, vendor))
            .collect(),
            ..TopologyParts::default()
        }
    }

    fn kept(parts: &TopologyParts) -> Vec<(u32, String)> {
        let mut v: Vec<_> = parts
            .gpus
            .iter()
            .map(|g| (g.index.0, g.pci.to_string()))
            .collect();
        v.sort();
        v
    }

    fn minors() -> BTreeMap<PciAddr, u32> {
        [
            "0000:07:00.0",
            "0000:0f:00.0",
            "0000:47:00.0",
            "0000:4f:00.0",
        ]
        .iter()
        .enumerate()
        // The driver's minors need not follow PCI order.
        .map(|(i, pci)| (pci.parse().unwrap(), [2, 3, 0, 1][i]))
        .collect()
    }

    #[test]
    fn device_nodes_choose_by_minor_and_the_rest_are_renumbered() {
        let mut parts = four(Vendor::Nvidia);
        let h = HandedOut {
            nvidia_nodes: Some([0, 3].into()),
            nvidia_minors: minors(),
            // The nodes decide: the variable is not read where they answer.
            nvidia_visible: Some("0,1".into()),
            ..HandedOut::default()
        };
        assert!(restrict(&mut parts, &h, false).is_empty());
        assert_eq!(
            kept(&parts),
            [(0, "0000:0f:00.0".into()), (1, "0000:47:00.0".into())]
        );
        let left: Vec<String> = parts.left_out_gpus.iter().map(|g| g.why.clone()).collect();
        assert_eq!(
            left,
            [
                "/dev/nvidia2 is not in this process's /dev",
                "/dev/nvidia1 is not in this process's /dev"
            ]
        );
    }

    #[test]
    fn a_gpu_the_driver_does_not_list_here_is_left_out() {
        let mut parts = four(Vendor::Nvidia);
        let mut listed = minors();
        listed.retain(|_, m| *m == 2);
        let h = HandedOut {
            nvidia_nodes: Some([2].into()),
            nvidia_minors: listed,
            ..HandedOut::default()
        };
        restrict(&mut parts, &h, false);
        assert_eq!(kept(&parts), [(0, "0000:07:00.0".into())]);
        assert_eq!(parts.left_out_gpus.len(), 3);
    }

    #[test]
    fn nvidia_visible_devices_by_index_where_no_node_says() {
        let mut parts = four(Vendor::Nvidia);
        let h = HandedOut {
            nvidia_visible: Some("1,3".into()),
            ..HandedOut::default()
        };
        restrict(&mut parts, &h, false);
        assert_eq!(
            kept(&parts),
            [(0, "0000:0f:00.0".into()), (1, "0000:4f:00.0".into())]
        );
        assert_eq!(
            parts.left_out_gpus[0].why,
            "NVIDIA_VISIBLE_DEVICES=1,3 does not name GPU 0"
        );
        // `none` hands out no GPU; `all` and an unset variable all of them.
        for (visible, left) in [(Some("none"), 4), (Some("all"), 0), (None, 0)] {
            let mut parts = four(Vendor::Nvidia);
            let h = HandedOut {
                nvidia_visible: visible.map(str::to_string),
                ..HandedOut::default()
            };
            restrict(&mut parts, &h, false);
            assert_eq!(parts.left_out_gpus.len(), left, "{visible:?}");
        }
    }

    #[test]
    fn uuids_without_nvml_keep_every_gpu_and_say_so() {
        let mut parts = four(Vendor::Nvidia);
        let h = HandedOut {
            nvidia_visible: Some("GPU-8e1c2b1a-0000-0000-0000-000000000000".into()),
            ..HandedOut::default()
        };
        let notes = restrict(&mut parts, &h, false);
        assert_eq!(parts.gpus.len(), 4);
        assert!(
            notes[0].contains("only NVML maps to PCI addresses"),
            "{notes:?}"
        );
    }

    #[test]
    fn nvml_answered_leaves_nvidia_to_it() {
        let mut parts = four(Vendor::Nvidia);
        let h = HandedOut {
            nvidia_visible: Some("0".into()),
            ..HandedOut::default()
        };
        restrict(&mut parts, &h, true);
        assert_eq!(parts.gpus.len(), 4);
    }

    #[test]
    fn amd_render_nodes_choose_where_kfd_is() {
        let mut parts = four(Vendor::Amd);
        let h = HandedOut {
            amd_render: Some(["0000:47:00.0".parse().unwrap()].into()),
            ..HandedOut::default()
        };
        restrict(&mut parts, &h, false);
        assert_eq!(kept(&parts), [(0, "0000:47:00.0".into())]);
        assert_eq!(parts.left_out_gpus.len(), 3);
        // Without ROCm's device nodes nothing is said: every GPU stays.
        let mut parts = four(Vendor::Amd);
        restrict(&mut parts, &HandedOut::default(), false);
        assert_eq!(parts.gpus.len(), 4);
    }
}
