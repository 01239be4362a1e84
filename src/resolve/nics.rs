//! `nic.policy: closest`: each rank gets the RDMA NIC nearest its GPU in PCI terms (same PCIe
//! switch, then host bridge, NUMA node, package, any), with ties spread so that no NIC serves
//! more than ceil(ranks / NICs) ranks of the node.

use std::collections::BTreeMap;

use crate::ids::{NodeId, PackageId};
use crate::topology::Topology;
use crate::topology::model::{Gpu, Nic, NicKind};
use crate::variables::{FI_PROVIDER, NCCL_IB_HCA, NCCL_SOCKET_IFNAME, UCX_NET_DEVICES};

/// How close a NIC is to a rank's device; lower is closer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Closeness {
    SameSwitch,
    SameHostBridge,
    SameNode,
    SamePackage,
    Any,
}

/// Where a rank sits, for NIC choice.
pub struct Anchor<'t> {
    pub gpu: Option<&'t Gpu>,
    pub node: Option<NodeId>,
    pub package: Option<PackageId>,
}

pub fn closeness(nic: &Nic, at: &Anchor) -> Closeness {
    if let Some(gpu) = at.gpu {
        let common = gpu
            .pci_path
            .iter()
            .zip(&nic.pci_path)
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect::<Vec<_>>();
        if common.iter().any(|b| !b.starts_with("host")) {
            return Closeness::SameSwitch;
        }
        if !common.is_empty() {
            return Closeness::SameHostBridge;
        }
    }
    if at.node.is_some() && nic.numa_node == at.node {
        return Closeness::SameNode;
    }
    if at.package.is_some() && nic.package == at.package {
        return Closeness::SamePackage;
    }
    Closeness::Any
}

/// The NICs collectives should use: RDMA-capable ones (InfiniBand, RoCE, EFA, Slingshot).
pub fn candidates(topo: &Topology) -> Vec<&Nic> {
    topo.nics()
        .iter()
        .filter(|n| n.kind != NicKind::Ethernet)
        .collect()
}

/// One NIC per rank, in rank order.
pub fn choose<'t>(topo: &'t Topology, anchors: &[Anchor]) -> Vec<Option<&'t Nic>> {
    let nics = candidates(topo);
    if nics.is_empty() {
        return anchors.iter().map(|_| None).collect();
    }
    let cap = anchors.len().div_ceil(nics.len());
    let mut load: BTreeMap<&str, usize> = BTreeMap::new();
    anchors
        .iter()
        .map(|at| {
            let best = nics
                .iter()
                .filter(|n| load.get(n.name.as_str()).copied().unwrap_or(0) < cap)
                .min_by_key(|n| {
                    (
                        closeness(n, at),
                        load.get(n.name.as_str()).copied().unwrap_or(0),
                    )
                })
                .copied();
            if let Some(n) = best {
                *load.entry(n.name.as_str()).or_insert(0) += 1;
            }
            best
        })
        .collect()
}

/// The variables that steer communication libraries to a NIC.
pub fn env(nic: &Nic) -> Vec<(&'static str, String)> {
    match nic.kind {
        NicKind::Infiniband | NicKind::Roce => vec![
            (NCCL_IB_HCA, format!("={}", nic.name)),
            (UCX_NET_DEVICES, format!("{}:1", nic.name)),
        ],
        NicKind::Efa => vec![(FI_PROVIDER, "efa".into())],
        NicKind::Slingshot => {
            let mut v = vec![(FI_PROVIDER, "cxi".to_string())];
            if nic.name.starts_with("hsn") {
                v.push((NCCL_SOCKET_IFNAME, format!("={}", nic.name)));
            }
            v
        }
        NicKind::Ethernet => vec![(NCCL_SOCKET_IFNAME, format!("={}", nic.name))],
    }
}
