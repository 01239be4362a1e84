//! `policy: mpibind` (docs/mpibind.md): LLNL mpibind's mapping (HEAD d529180) on numaplan's
//! view of the machine, one function per section (§) of docs/mpibind.md:
//! 1. `smt_level_check` (§2): `cpu.smt` within the unrestricted machine's SMT level;
//! 2. `restrict` (§3): the CPUs the job may use, then `cpu.allowed_nodes`;
//! 3. `domains` (§9): the NUMA nodes with CPUs, in NUMA order;
//! 4. `gpus` (§4): the selected GPUs left, in device order;
//! 5. the path (§5): `greedy.rs` (§6) or `hierarchy.rs` (§7);
//! 6. `rank_parts` (§8): each task as a rank, with OMP_* and the GPU variables.

mod buckets;
mod greedy;
mod hierarchy;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::context::{Mapped, Placement, Unit, visibility_variable};
use super::error::{MpibindRestriction, ResolveError, ResolveErrorKind};
use super::inside::Inside;
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::ids::NodeId;
use crate::pci_addr::PciAddr;
use crate::plan::environment::Visible;
use crate::spec::{CpuOption, Smt, Spec};
use crate::topology::Topology;
use crate::topology::model::{Gpu, Vendor};
use crate::topology::tree::{CpuTree, Domain, TreeView};
use crate::variables::{OMP_PLACES, OMP_PROC_BIND};

/// One task of mpibind's mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub cpus: CpuSet,
    /// In device order.
    pub gpus: Vec<PciAddr>,
    /// mpibind's reported thread count (OMP_NUM_THREADS).
    pub threads: u32,
    /// The NUMA domains the task was given.
    pub nodes: Vec<NodeId>,
}

/// What the mapping needs of the machine after the restriction.
pub struct Machine {
    pub view: TreeView,
    pub domains: Vec<Domain>,
    /// The GPUs left and selected, in device order, each with its locality.
    pub gpus: Vec<(PciAddr, usize)>,
    /// `cpu.smt` as mpibind's number (0: automatic).
    pub smt: u32,
}

impl Machine {
    /// §4.4: the GPUs below object `root` (their locality's CPUs within its CPUs), as indices
    /// into `gpus` (device order).
    pub fn gpus_below(&self, root: usize) -> Vec<usize> {
        let cpus = &self.view.objects[root].cpus;
        (0..self.gpus.len())
            .filter(|&i| self.view.objects[self.gpus[i].1].cpus.is_subset(cpus))
            .collect()
    }
}

pub fn map<'t>(
    spec: &Spec,
    topo: &'t Topology,
    selected: &[&'t Gpu],
    allowed: &CpuSet,
    warnings: &mut Vec<Warning>,
) -> Result<Mapped<'t>, ResolveError> {
    let Some(tree) = topo.cpu_tree() else {
        return Err(ResolveError::new(
            ResolveErrorKind::TreeNotRead {
                topology: topo.name().into(),
            },
            "cpu.policy",
            "this is a bug in numaplan; please file an issue with the job spec and topology",
        ));
    };
    let whole = TreeView::new(&tree);
    let smt = smt_level_check(spec, topo, &whole)?;
    let view = restrict(spec, topo, tree, whole, allowed)?;
    let domains = domains(topo, &view, warnings);
    let gpus = gpus(&view, selected);
    let machine = Machine {
        view,
        domains,
        gpus,
        smt,
    };
    let ntasks = spec
        .ranks_per_node
        .unwrap_or(match machine.gpus.len() {
            0 => machine.domains.len() as u32,
            n => n as u32,
        })
        .max(1);
    let options = spec.cpu.mpibind;
    let tasks = if options.greedy && (ntasks as usize) < machine.domains.len() {
        warnings.extend(ignored_on_greedy_path(spec));
        greedy::map(&machine, ntasks, options.threads)
    } else {
        let gpu_optim = options.gpu_optim && !machine.gpus.is_empty();
        hierarchy::map(&machine, ntasks, options.threads, gpu_optim, warnings)?
    };
    warnings.extend(sharing(&tasks));
    let allowed = machine.view.objects[0].cpus.clone();
    Ok(rank_parts(topo, selected, tasks, allowed))
}

/// §2.2: `cpu.smt` as mpibind's number (0: automatic), at most the SMT level of the whole
/// machine.
fn smt_level_check(spec: &Spec, topo: &Topology, whole: &TreeView) -> Result<u32, ResolveError> {
    let level = whole.smt_level() as u32;
    if !spec.cpu.set.contains(&CpuOption::Smt) {
        return Ok(0);
    }
    let smt = match spec.cpu.smt {
        Smt::All => level,
        Smt::One => 1,
        Smt::Count(n) => n,
    };
    if smt > level {
        return Err(ResolveError::new(
            ResolveErrorKind::MpibindSmt { smt, level },
            "cpu.smt",
            format!(
                "write `smt: {level}` or less (`all`), or leave it out for mpibind's own choice"
            ),
        )
        .note(format!(
            "the first core of `{}` has {level} hardware thread(s); mpibind would map PUs that \
             do not exist (it sets CPU -1)",
            topo.name()
        )));
    }
    Ok(smt)
}

/// §3: the tree restricted to the CPUs the job may use (the process's, narrowed by
/// `cpu.allowed`: mpibind's cpu restriction, as its Slurm and Flux plugins restrict it to the
/// job's cores), then to `cpu.allowed_nodes` (its memory restriction).
/// `whole` is the view of the unrestricted `tree`, kept where nothing is restricted.
fn restrict(
    spec: &Spec,
    topo: &Topology,
    mut tree: Cow<'_, CpuTree>,
    whole: TreeView,
    allowed: &CpuSet,
) -> Result<TreeView, ResolveError> {
    let memory_only = |n: NodeId| topo.node(n).is_some_and(|n| n.kind.is_memory_only());
    let by_cpus = *allowed != tree.root.cpus;
    if by_cpus {
        tree.to_mut().restrict_cpus(allowed, &memory_only);
    }
    if let Some(keep) = &spec.cpu.allowed_nodes {
        let present: BTreeSet<NodeId> = TreeView::new(&tree)
            .domains
            .iter()
            .map(|d| d.node)
            .collect();
        let named: Vec<NodeId> = keep
            .iter()
            .copied()
            .filter(|n| present.contains(n))
            .collect();
        if named.is_empty() {
            return Err(restriction_error(
                spec,
                topo,
                MpibindRestriction::NoNamedNode {
                    named: keep.clone(),
                    topology: topo.name().into(),
                },
                format!(
                    "its NUMA nodes (within the allowed CPUs) are {}",
                    crate::ids::node_list(&present.into_iter().collect::<Vec<_>>())
                ),
            ));
        }
        tree.to_mut().restrict_nodes(&named);
    }
    let view = match by_cpus || spec.cpu.allowed_nodes.is_some() {
        true => TreeView::new(&tree),
        false => whole,
    };
    let has_domain = view
        .domains
        .iter()
        .any(|d| !memory_only(d.node) && !view.objects[d.parent].cpus.is_empty());
    if view.objects[0].cpus.is_empty() || !has_domain {
        return Err(restriction_error(
            spec,
            topo,
            MpibindRestriction::NoNodeWithCpus,
            format!("the allowed CPUs are {allowed}"),
        ));
    }
    Ok(view)
}

fn restriction_error(
    spec: &Spec,
    topo: &Topology,
    what: MpibindRestriction,
    note: String,
) -> ResolveError {
    let key = match spec.cpu.allowed_nodes {
        Some(_) => "cpu.allowed_nodes",
        None => "cpu.allowed",
    };
    ResolveError::new(
        ResolveErrorKind::MpibindRestriction(what),
        key,
        "name NUMA nodes (and CPUs) of this machine; mpibind would warn and map the whole machine",
    )
    .note(note)
    .note(format!(
        "`{}` has NUMA nodes {} and CPUs {}",
        topo.name(),
        crate::ids::node_list(&topo.nodes().iter().map(|n| n.id).collect::<Vec<_>>()),
        topo.all_cpus()
    ))
}

/// §9: the domains are the NUMA nodes with CPUs, in NUMA order; memory-only nodes (GPU memory,
/// HBM, CXL) are left out, with a warning.
fn domains(topo: &Topology, view: &TreeView, warnings: &mut Vec<Warning>) -> Vec<Domain> {
    let (memory, domains): (Vec<Domain>, Vec<Domain>) = view.domains.iter().partition(|d| {
        topo.node(d.node).is_some_and(|n| n.kind.is_memory_only())
            || view.objects[d.parent].cpus.is_empty()
    });
    if !memory.is_empty() {
        let ids: Vec<NodeId> = memory.iter().map(|d| d.node).collect();
        warnings.push(Warning::new(
            codes::W0219_MEMORY_ONLY_DOMAINS,
            format!(
                "NUMA node(s) {} have no CPUs (GPU memory, HBM, CXL) and are not mpibind \
                 domains: no task is mapped to them (mpibind itself would give such a node's \
                 task its parent's CPUs, or none)",
                crate::ids::node_list(&ids)
            ),
        ));
    }
    domains
}

/// §4: the GPUs left after the restriction that the job selects, in device order.
fn gpus(view: &TreeView, selected: &[&Gpu]) -> Vec<(PciAddr, usize)> {
    view.gpus
        .iter()
        .filter(|(pci, _)| selected.iter().any(|g| g.pci == *pci))
        .copied()
        .collect()
}

/// `cpu.smt` and `cpu.gpu_optim` play no part on the greedy path (§6).
fn ignored_on_greedy_path(spec: &Spec) -> Vec<Warning> {
    [CpuOption::Smt, CpuOption::GpuOptim]
        .into_iter()
        .filter(|o| spec.cpu.set.contains(o))
        .map(|o| {
            Warning::new(
                codes::W0204_OPTION_IGNORED,
                format!(
                    "{} is ignored by policy mpibind here (fewer tasks than NUMA domains: the \
                     greedy path gives each task whole domains); set `cpu.greedy: false` for \
                     mpibind's memory-hierarchy mapping, or remove it",
                    o.key()
                ),
            )
        })
        .collect()
}

/// mpibind's own warnings: tasks that share PUs or GPUs (more tasks than slots). Counted per
/// CPU and per GPU, so that 65,536 tasks cost no more than their CPUs.
fn sharing(tasks: &[Task]) -> Vec<Warning> {
    let mut cpu_holders: BTreeMap<u32, u32> = BTreeMap::new();
    let mut gpu_holders: BTreeMap<PciAddr, u32> = BTreeMap::new();
    for t in tasks {
        for cpu in t.cpus.iter() {
            *cpu_holders.entry(cpu).or_default() += 1;
        }
        for gpu in &t.gpus {
            *gpu_holders.entry(*gpu).or_default() += 1;
        }
    }
    let ranks = |shares: &dyn Fn(&Task) -> bool| -> CpuSet {
        (0..tasks.len() as u32)
            .filter(|&i| shares(&tasks[i as usize]))
            .collect()
    };
    let cpus = ranks(&|t| t.cpus.iter().any(|c| cpu_holders[&c] > 1));
    let gpus = ranks(&|t| t.gpus.iter().any(|g| gpu_holders[g] > 1));
    [(cpus, "CPUs"), (gpus, "GPUs")]
        .into_iter()
        .filter(|(ranks, _)| !ranks.is_empty())
        .map(|(ranks, what)| {
            Warning::new(
                codes::W0218_MPIBIND_SHARED,
                format!(
                    "ranks {ranks} share {what}: there are more tasks than mpibind has {what} \
                     to give them, and it shares them out as it does"
                ),
            )
        })
        .collect()
}

/// §8: each task as a rank: its GPUs, its CPUs on its domains, OMP_NUM_THREADS (mpibind's
/// thread count), OMP_PLACES=threads, OMP_PROC_BIND=spread, and each GPU vendor's variable
/// naming exactly the task's GPUs (empty for a task without).
fn rank_parts<'t>(
    topo: &'t Topology,
    selected: &[&'t Gpu],
    tasks: Vec<Task>,
    allowed: CpuSet,
) -> Mapped<'t> {
    let vendors: BTreeSet<Vendor> = selected.iter().map(|g| g.vendor).collect();
    let mut mapped = Mapped {
        units: Vec::new(),
        placements: Vec::new(),
        insides: Vec::new(),
        allowed,
    };
    for (rank, task) in tasks.into_iter().enumerate() {
        let gpus: Vec<&Gpu> = task
            .gpus
            .iter()
            .filter_map(|pci| selected.iter().find(|g| g.pci == *pci).copied())
            .collect();
        let env = vec![
            (OMP_PLACES, "threads".to_string()),
            (OMP_PROC_BIND, "spread".to_string()),
        ];
        // Every runtime of the job's GPUs is told, a task without GPUs of it seeing none.
        let visible = vendors
            .iter()
            .map(|vendor| Visible {
                variable: visibility_variable(*vendor),
                gpus: gpus
                    .iter()
                    .filter(|g| g.vendor == *vendor)
                    .map(|g| g.index)
                    .collect(),
            })
            .collect();
        mapped.units.push(Unit {
            local_rank: rank as u32,
            gpus,
        });
        mapped.placements.push(Placement {
            cores: topo.cores_touching(&task.cpus).len() as u32,
            home: match task.nodes.as_slice() {
                [one] => Some(*one),
                _ => None,
            },
            memory_nodes: task.nodes,
            cpus: task.cpus,
        });
        mapped.insides.push(Inside {
            helpers: CpuSet::new(),
            openmp: None,
            threads: task.threads,
            env,
            visible: Some(visible),
        });
    }
    mapped
}
