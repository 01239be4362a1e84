//! What a Kubernetes pod was given, read inside it for `exec --pod` and `bind` under
//! `NUMAPLAN_POD` (`exec::pod`): the container's cpuset (its cgroup's), the CPU DRA driver's
//! `DRA_CPUSET_<claim>` variables, each NUMA node's CPUs and each CPU's core from `/sys`, the
//! GPUs whose device nodes the pod has, in the order its runtime numbers them (PCI order), and
//! what the DRA drivers' device metadata says each request of its devices claim was given.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::error::Error;
use crate::exec::ExecError;
use crate::exec::pod::{self, PodFacts, PodMode};
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;
use crate::plan::Plan;
use crate::sys::{affinity, cgroup, node};
use crate::topology::container_gpus;
use crate::topology::pci_gpus;
use crate::variables::{NUMAPLAN_POD, NVIDIA_VISIBLE_DEVICES};

/// The plan as this pod runs it (`exec::pod::fit`), with what changed (W0228): in `mode`, else
/// in the mode `NUMAPLAN_POD` names (the `--emit k8s` manifests set it in the pod, for `bind`
/// under the launch scripts as for `exec`); outside a pod, the plan as it is.
pub(super) fn fitted(
    mode: Option<PodMode>,
    plan: Plan,
    env: &BTreeMap<String, String>,
) -> Result<(Plan, Option<Warning>), Error> {
    let named = env.get(NUMAPLAN_POD).map(|v| match v.as_str() {
        "exact" => Ok(PodMode::Exact),
        "given" => Ok(PodMode::Given),
        other => Err(Error::Usage {
            message: format!("{NUMAPLAN_POD}={other} names no way a pod is given its CPUs"),
            help: format!("set {NUMAPLAN_POD} to `exact` or `given`, or unset it outside a pod"),
        }),
    });
    let Some(mode) = mode.map(Ok).or(named).transpose()? else {
        return Ok((plan, None));
    };
    let planned: CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
    let (fitted, note) = pod::fit(&plan, &facts(env, &planned)?, mode)
        .map_err(|why| ExecError::Pod { why, mode })?;
    Ok((
        fitted,
        note.map(|n| Warning::new(codes::W0228_POD_CPUS_CHOSEN, n)),
    ))
}

/// The prefix of the CPU DRA driver's variables (`DRA_CPUSET_<claim uid>=<cpu list>`).
const DRA_CPUSET: &str = "DRA_CPUSET_";

/// The pod's facts; each CPU's core is read for the CPUs of the pod and of `planned` alone
/// (a node has hundreds, one `/sys` file each).
fn facts(env: &BTreeMap<String, String>, planned: &CpuSet) -> Result<PodFacts, Error> {
    // The container's cpuset, not this process's affinity: a rank that binds itself again
    // (`numaplan.bind()` in a process `bind` started) reads the same pod.
    let online = match node::online_cpus() {
        Some(online) => online,
        None => affinity::own_affinity().map_err(|source| ExecError::Syscall {
            what: "read this process's CPU affinity",
            source,
        })?,
    };
    let cpus = cgroup::cgroup_cpus(&online);
    let claimed = env
        .iter()
        .filter(|(k, _)| k.starts_with(DRA_CPUSET))
        .filter_map(|(k, v)| Some((k.clone(), v.trim().parse().ok()?)))
        .collect();
    let node_cpus = node_cpus(Path::new("/sys/devices/system/node"));
    let core_of = cpus
        .union(planned)
        .iter()
        .map(|c| {
            let path = format!("/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list");
            let first = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.trim().parse::<CpuSet>().ok())
                .and_then(|s| s.first())
                .unwrap_or(c);
            (c, first)
        })
        .collect();
    Ok(PodFacts {
        cpus,
        claimed,
        node_cpus,
        core_of,
        gpus: gpus(env),
        claimed_devices: claimed_devices(Path::new(pod::DEVICE_METADATA)),
    })
}

/// Each request of the pod's devices claim (a directory under `dir`) and the PCI addresses its
/// drivers' metadata files list.
fn claimed_devices(dir: &Path) -> Vec<(String, PciAddr)> {
    let entries = |d: &Path| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for request in entries(dir) {
        let name = request
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        for file in entries(&request) {
            if !file.to_string_lossy().ends_with("-metadata.json") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            out.extend(
                pod::metadata_pci_addresses(&text)
                    .into_iter()
                    .map(|p| (name.clone(), p)),
            );
        }
    }
    out
}

/// Each NUMA node's CPUs, in node order.
fn node_cpus(dir: &Path) -> Vec<(NodeId, CpuSet)> {
    let mut nodes: Vec<(NodeId, CpuSet)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id: u32 = name.strip_prefix("node")?.parse().ok()?;
            let cpus = std::fs::read_to_string(e.path().join("cpulist")).ok()?;
            Some((NodeId(id), cpus.trim().parse().ok()?))
        })
        .collect();
    nodes.sort_by_key(|(n, _)| *n);
    nodes
}

/// The NVIDIA GPUs whose `/dev/nvidiaN` node the pod has, in PCI order; `None` where it has no
/// such node at all (nothing says which it was given).
fn gpus(env: &BTreeMap<String, String>) -> Option<Vec<PciAddr>> {
    let handed = container_gpus::read(Path::new("/"), env.get(NVIDIA_VISIBLE_DEVICES).cloned());
    let nodes = handed.nvidia_nodes?;
    let mut given: Vec<PciAddr> = pci_gpus::gpus()
        .iter()
        .filter_map(|p| p.parse().ok())
        .filter(|p| {
            handed
                .nvidia_minors
                .get(p)
                .is_some_and(|m| nodes.contains(m))
        })
        .collect();
    given.sort();
    Some(given)
}
