//! What `convert.rs` and `pci.rs` both read off an hwloc object: its text fields, its bitmaps
//! as `CpuSet`s, and the OS numbers of PUs, NUMA nodes and packages, each taken where hwloc
//! guarantees it rather than guessed.

use std::ffi::CStr;

use hwlocality::object::TopologyObject;
use hwlocality::object::types::ObjectType;

use crate::cpuset::CpuSet;
use crate::ids::PackageId;

/// An hwloc string field as text.
pub(super) fn text(c: Option<&CStr>) -> Option<String> {
    c.map(|s| s.to_string_lossy().into_owned())
}

/// An hwloc CPU set as numaplan's.
pub(super) fn to_cpuset(set: &hwlocality::cpu::cpuset::CpuSet) -> CpuSet {
    set.iter_set().map(|i| usize::from(i) as u32).collect()
}

/// An index as a `u32` (hwloc's are C `unsigned`; one past that is no index of a machine).
fn number(index: usize) -> Option<u32> {
    u32::try_from(index).ok()
}

/// A PU's CPU number: its OS index, which is also the one CPU of its cpuset (hwloc's own
/// invariant; the set says it where an export left the index out). `None` for a PU with
/// neither, which no CPU list can name.
pub(super) fn pu_number(pu: &TopologyObject) -> Option<u32> {
    pu.os_index()
        .or_else(|| pu.cpuset()?.first_set().map(usize::from))
        .and_then(number)
}

/// A NUMA node's number: its OS index, which is also the one node of its nodeset.
pub(super) fn node_number(node: &TopologyObject) -> Option<u32> {
    node.os_index()
        .or_else(|| node.nodeset()?.first_set().map(usize::from))
        .and_then(number)
}

/// A package's number: its OS index. Exports of machines whose kernel numbers no packages
/// (s390 books, some POWER hosts: hwloc's test suite has both) give none to any package; those
/// are numbered in hwloc's logical order, which is unique among them.
pub(super) fn package_id(package: &TopologyObject) -> PackageId {
    let index = package.os_index().unwrap_or(package.logical_index());
    PackageId(number(index).unwrap_or(u32::MAX))
}

/// NUMA nodes among `obj`'s memory children (looking through memory-side caches).
pub(super) fn numa_children(obj: &TopologyObject) -> Vec<&TopologyObject> {
    let mut out = Vec::new();
    for m in obj.memory_children() {
        if m.object_type() == ObjectType::NUMANode {
            out.push(m);
        } else {
            out.extend(numa_children(m));
        }
    }
    out
}
