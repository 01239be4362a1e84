//! This node's GPUs counted as the generated launchers count them (`check_node` in the
//! templates): the PCI functions of `/sys/bus/pci/devices` that `devices::is_gpu` calls GPUs, an
//! AMD display device where a KFD compute node names it. The node check of `exec` and `bind`
//! compares the count with a plan's machine, and the addresses with the GPUs the plan's ranks
//! drive.

use crate::pci_addr::PciAddr;
use crate::sys::proc;
use crate::topology::devices::{self, Vendor};
use crate::topology::kfd;

/// PCI functions that are GPUs by `devices::is_gpu` (an AMD device computes where a KFD node
/// names it). A node has hundreds of PCI functions and each `/sys` file costs microseconds to
/// read, so where `/proc/bus/pci/devices` lists them all in one read, only those at a GPU
/// vendor's slot are read.
pub fn count() -> usize {
    gpus().len()
}

/// This node's GPUs by their PCI functions' names (`0000:07:00.0`), as `count` counts them.
pub fn gpus() -> Vec<String> {
    gpus_in(
        std::path::Path::new("/sys/bus/pci/devices"),
        std::path::Path::new("/proc/bus/pci/devices"),
        &std::path::Path::new("/").join(kfd::NODES),
    )
}

#[cfg(test)]
fn count_gpus_in(
    sys: &std::path::Path,
    proc: &std::path::Path,
    kfd_nodes: &std::path::Path,
) -> usize {
    gpus_in(sys, proc, kfd_nodes).len()
}

fn gpus_in(
    sys: &std::path::Path,
    proc: &std::path::Path,
    kfd_nodes: &std::path::Path,
) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(sys) else {
        return Vec::new();
    };
    let functions: Vec<std::path::PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    let listing = proc::read_expecting(proc, 64 * 1024)
        .map(|text| PciListing::parse(&text))
        // An empty or masked file (a container) lists fewer: every function is read then.
        .filter(|listing| listing.functions == functions.len());
    // `vendor` is `0x10de`, `device` `0x20b0`, `class` the 24-bit `0x030200` (base class,
    // subclass, interface).
    let hex = |path: std::path::PathBuf| {
        let text = proc::read_small(&path)?;
        u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
    };
    let mut kfd: Option<Vec<PciAddr>> = None;
    functions
        .iter()
        .filter(|path| listing.as_ref().is_none_or(|l| l.may_be_gpu(path)))
        .filter(|path| {
            let Some(class) = hex(path.join("class")).map(|c| (c >> 8) as u16) else {
                return false;
            };
            let Some(vendor) = hex(path.join("vendor")).map(|v| v as u16) else {
                return false;
            };
            if devices::gpu_candidate(vendor, class).is_none() {
                return false;
            }
            let device = hex(path.join("device")).map_or(0, |d| d as u16);
            // Read once, and only where a candidate needs it.
            let kfd = kfd.get_or_insert_with(|| kfd::gpu_order(&kfd::read(kfd_nodes)));
            let computes = path
                .file_name()
                .and_then(|n| n.to_str()?.parse::<PciAddr>().ok())
                .is_some_and(|a| kfd.contains(&a));
            devices::is_gpu(vendor, device, class, computes).is_some()
        })
        .filter_map(|path| Some(path.file_name()?.to_string_lossy().into_owned()))
        .collect()
}

/// `/proc/bus/pci/devices`: one line per PCI function (`0100\t10de2330\t...`: bus and devfn,
/// then vendor and device) in every domain, though without the domain.
struct PciListing {
    functions: usize,
    /// The (bus, devfn) slots where some domain has a GPU vendor's function.
    gpu_vendor_slots: std::collections::HashSet<(u8, u8)>,
}

impl PciListing {
    fn parse(text: &str) -> PciListing {
        let slots: Vec<((u8, u8), u16)> = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let slot = u16::from_str_radix(fields.next()?, 16).ok()?;
                let vendor = u16::from_str_radix(fields.next()?.get(..4)?, 16).ok()?;
                let [bus, devfn] = slot.to_be_bytes();
                Some(((bus, devfn), vendor))
            })
            .collect();
        PciListing {
            functions: slots.len(),
            gpu_vendor_slots: slots
                .into_iter()
                .filter(|(_, vendor)| Vendor::from_pci_vendor(*vendor).is_some())
                .map(|(slot, _)| slot)
                .collect(),
        }
    }

    /// Whether the `/sys` function at `path` (named `0000:01:00.0`) may be a GPU: it is at a GPU
    /// vendor's slot, or its name does not parse.
    fn may_be_gpu(&self, path: &std::path::Path) -> bool {
        let addr = path
            .file_name()
            .and_then(|n| n.to_str()?.parse::<PciAddr>().ok());
        addr.is_none_or(|a| {
            self.gpu_vendor_slots
                .contains(&(a.bus, a.device << 3 | a.function))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two domains with the same bus numbers (as on Grace or in a VM): an NVIDIA GPU at
    /// 0001:01:00.0, a Mellanox NIC at 0000:01:00.0, an AMD CPU function at 0000:00:18.0.
    const LISTING: &str = "0118\t10221480\t0\t0\n\
                           0100\t15b3101d\t0\t0\n\
                           0100\t10de2330\t0\t0\n";

    #[test]
    fn a_listing_names_the_slots_of_gpu_vendors_in_any_domain() {
        let l = PciListing::parse(LISTING);
        assert_eq!(l.functions, 3);
        let may = |name: &str| l.may_be_gpu(std::path::Path::new(name));
        assert!(may("0001:01:00.0"));
        // The NIC shares the GPU's bus and devfn in another domain: read, to be safe.
        assert!(may("0000:01:00.0"));
        assert!(!may("0000:00:18.0"));
        assert!(!may("0000:02:00.0"));
        assert!(may("not-an-address"), "a name that does not parse is read");
    }

    /// A fake `/sys/bus/pci/devices` with `functions` (name, vendor, class; device 0x20b0).
    fn fake_sys(dir: &std::path::Path, functions: &[(&str, &str, &str)]) -> std::path::PathBuf {
        let sys = dir.join("devices");
        for (name, vendor, class) in functions {
            std::fs::create_dir_all(sys.join(name)).unwrap();
            std::fs::write(sys.join(name).join("vendor"), format!("{vendor}\n")).unwrap();
            std::fs::write(sys.join(name).join("device"), "0x20b0\n").unwrap();
            std::fs::write(sys.join(name).join("class"), format!("{class}\n")).unwrap();
        }
        sys
    }

    #[test]
    fn gpus_are_counted_alike_with_and_without_a_usable_listing() {
        let dir = tempfile::tempdir().unwrap();
        let sys = fake_sys(
            dir.path(),
            &[
                ("0000:00:18.0", "0x1022", "0x060000"),
                ("0000:01:00.0", "0x15b3", "0x020700"),
                ("0001:01:00.0", "0x10de", "0x030200"),
            ],
        );
        let listing = dir.path().join("listing");
        let kfd = dir.path().join("kfd");
        let count = |listing: &std::path::Path| count_gpus_in(&sys, listing, &kfd);
        std::fs::write(&listing, LISTING).unwrap();
        assert_eq!(count(&listing), 1);
        // A listing that names no GPU vendor's slot: trusted, and it counts none.
        std::fs::write(&listing, "0118\t10221480\n0100\t15b3101d\n0101\t15b3101d\n").unwrap();
        assert_eq!(count(&listing), 0);
        // Masked (empty), short, or missing: every function is read, and the GPU still counts.
        std::fs::write(&listing, "").unwrap();
        assert_eq!(count(&listing), 1);
        std::fs::write(&listing, "0118\t10221480\n").unwrap();
        assert_eq!(count(&listing), 1);
        assert_eq!(count(&dir.path().join("absent")), 1);
    }

    /// An AMD display device (a BMC's ES1000) counts only where a KFD compute node names it, as
    /// discovery counts it; a known accelerator's id counts without one.
    #[test]
    fn amd_display_devices_count_where_kfd_says_they_compute() {
        let dir = tempfile::tempdir().unwrap();
        let sys = fake_sys(
            dir.path(),
            &[
                ("0000:01:03.0", "0x1002", "0x030000"),
                ("0000:c1:00.0", "0x1002", "0x038000"),
            ],
        );
        std::fs::write(sys.join("0000:c1:00.0/device"), "0x740c\n").unwrap();
        let kfd = dir.path().join("kfd");
        let absent = dir.path().join("absent");
        assert_eq!(
            count_gpus_in(&sys, &absent, &kfd),
            1,
            "the MI250X by its id"
        );
        // KFD node 1 (a GPU: SIMDs) at 0000:01:03.0 = location_id 1 << 8 | 3 << 3.
        std::fs::create_dir_all(kfd.join("1")).unwrap();
        std::fs::write(
            kfd.join("1/properties"),
            "simd_count 256\ndomain 0\nlocation_id 280\n",
        )
        .unwrap();
        assert_eq!(count_gpus_in(&sys, &absent, &kfd), 2);
    }
}
