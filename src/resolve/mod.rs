//! `resolve(&Spec, &Topology) -> Plan`: pure and deterministic (no IO, clock or environment;
//! BTreeMaps only). One step per stage of docs/policies.md: the allowed CPUs, the GPUs and the ranks
//! they form, the family's CPU placement, then memory policy, NIC and environment per rank.

pub mod allowed_cpus;
pub mod auto;
pub mod context;
pub mod error;
pub mod gpu_affinity;
pub mod gpus;
pub mod inside;
pub mod job;
pub mod memory;
pub mod mpibind;
pub mod nics;
pub mod on_machine;
pub mod pytorch;
pub mod unused_options;

use std::collections::BTreeMap;

use allowed_cpus::{allowed_cpus, restriction_warnings};
use context::{Ctx, Mapped, Placement, Unit, visibility_variable};
pub use error::{ResolveError, ResolveErrorKind, SpecKey};

use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::plan::place::Place;
use crate::plan::{
    MachineShape, MemoryBinding, Plan, PlannedGpu, PlannedNic, RankBinding, environment,
};
use crate::spec::{GpuChoice, NicPolicy, Policy, Spec, Visibility};
use crate::topology::Topology;
use crate::topology::model::{Gpu, Nic, Vendor};
use crate::variables::{OMP_NUM_THREADS, omp_threads};

/// A job of one group's plan: `spec` on `topo`, the whole job.
pub fn resolve(spec: &Spec, topo: &Topology) -> Result<Plan, ResolveError> {
    let unplaced = resolve_unplaced(spec, topo)?;
    let place = Place::whole_job(unplaced.plan.nodes, unplaced.plan.ranks_per_node);
    Ok(unplaced.place(place))
}

/// A group's plan before its place in its job is known (what the job's numbering needs is
/// every group's ranks): the plan, and what each rank's environment is made of, which
/// `place` writes once the place is known.
pub struct Unplaced {
    plan: Plan,
    env: Vec<environment::Parts>,
}

impl Unplaced {
    /// Its ranks in all: nodes x ranks per node.
    pub fn ranks(&self) -> u64 {
        self.plan.ranks_in_all()
    }

    pub fn nodes(&self) -> u32 {
        self.plan.nodes
    }

    /// The plan at `place` in its job, each rank's environment written there.
    pub fn place(mut self, place: Place) -> Plan {
        for (rank, parts) in self.plan.ranks.iter_mut().zip(&self.env) {
            rank.env = environment::planned(parts, &place);
        }
        self.plan.place = place;
        self.plan
    }
}

/// `spec` on `topo`, not yet placed in its job.
pub fn resolve_unplaced(spec: &Spec, topo: &Topology) -> Result<Unplaced, ResolveError> {
    // Facts the topology's source found (NVML disagreeing with hwloc), then the spec's own.
    let mut warnings: Vec<Warning> = topo
        .notes()
        .iter()
        .map(|n| Warning::new(codes::W0201_TOPOLOGY_NOTE, n.clone()))
        .collect();
    warnings.extend(spec.warnings.iter().cloned());
    let allowed = allowed_cpus(spec, topo)?;
    warnings.extend(restriction_warnings(topo, &allowed));
    warnings.extend(unused_options::ignored_options(&spec.cpu));
    let selected = gpus::select_gpus(spec, topo)?;
    warnings.extend(gpus::visible_warning(spec, &selected));
    let Mapped {
        units,
        placements,
        insides,
        allowed,
    } = match spec.cpu.policy {
        Policy::Mpibind => {
            let mapped = mpibind::map(spec, topo, &selected, &allowed, &mut warnings)?;
            world_fits(spec, mapped.units.len())?;
            every_rank_has_cpus(&mapped.units, &mapped.placements)?;
            mapped
        }
        _ => placed_ranks(spec, topo, &selected, allowed, &mut warnings)?,
    };
    warnings.extend(crate::spec::engine::command_warnings(
        spec.engine,
        &spec.command,
        &|var| spec.env.get(var).cloned(),
    ));
    let ctx = Ctx::new(topo, &spec.cpu, allowed);
    let memory = memory::memory_bindings(spec, topo, &placements, &mut warnings)?;
    let chosen = choose_nics(spec, &ctx, &units, &placements);
    let rpn = units.len() as u32;
    let env: Vec<environment::Parts> = units
        .iter()
        .zip(&insides)
        .zip(&chosen)
        .map(|((u, inside), nic)| environment(spec, rpn, u, inside, *nic))
        .collect();
    let ranks: Vec<RankBinding> = units
        .iter()
        .zip(placements)
        .zip(memory)
        .zip(chosen)
        .zip(insides)
        .map(|((((u, p), memory), nic), inside)| rank_binding(spec, u, p, memory, nic, inside))
        .collect();
    warnings.extend(ranks.iter().filter_map(|r| mixed_kinds(topo, r)));
    let plan = Plan {
        name: spec.name.clone(),
        command: spec.command.clone(),
        topology: topo.name().to_string(),
        machine: MachineShape {
            cpus: topo.all_cpus().len(),
            numa_nodes: topo.nodes().len(),
            // The GPUs on the PCI bus, as the node check counts them, usable or not.
            gpus: topo.gpus().len() + topo.left_out_gpus().len(),
        },
        machine_nics: machine_nics(topo),
        policy: spec.cpu.policy,
        nodes: spec.nodes,
        ranks_per_node: rpn,
        ranks,
        reserved: reserved_cpus(spec, &ctx),
        excluded: topo.allowed().difference(&ctx.allowed),
        warnings,
        allowed_warnings: spec.allowed_warnings.clone(),
        port: spec.port,
        slurm: spec.slurm.clone(),
        flux: spec.flux.clone(),
        mpirun: spec.mpirun.clone(),
        kubernetes: spec.kubernetes.clone(),
        engine: spec.engine,
        place: Place::whole_job(spec.nodes, rpn),
    };
    Ok(Unplaced { plan, env })
}

/// The machine's NICs by name, in the topology's order.
fn machine_nics(topo: &Topology) -> Vec<String> {
    topo.nics().iter().map(|n| n.name.clone()).collect()
}

/// The ranks of every family but mpibind: GPUs form ranks, the family places each, then what
/// runs inside it.
fn placed_ranks<'t>(
    spec: &Spec,
    topo: &'t Topology,
    selected: &[&'t Gpu],
    allowed: CpuSet,
    warnings: &mut Vec<Warning>,
) -> Result<Mapped<'t>, ResolveError> {
    let units = gpus::form_ranks(spec, topo, selected, &allowed)?;
    warnings.extend(gpus::unused_warning(spec, selected, &units));
    world_fits(spec, units.len())?;
    let ctx = Ctx::new(topo, &spec.cpu, allowed);
    let placements = place(&ctx, selected, &units, warnings)?;
    every_rank_has_cpus(&units, &placements)?;
    let sharers = sharers(&placements);
    let insides = units
        .iter()
        .zip(&placements)
        .zip(&sharers)
        .map(|((u, p), &n)| inside::inside(spec, topo, u.local_rank, &p.cpus, n))
        .collect::<Result<Vec<_>, _>>()?;
    warnings.extend(shared_threads(spec, topo, &placements, &sharers, &insides));
    Ok(Mapped {
        units,
        placements,
        insides,
        allowed: ctx.allowed,
    })
}

/// For each rank, how many ranks (itself included) may run on some of its CPUs.
fn sharers(placements: &[Placement]) -> Vec<u32> {
    placements
        .iter()
        .map(|p| {
            placements
                .iter()
                .filter(|q| q.cpus.intersects(&p.cpus))
                .count() as u32
        })
        .collect()
}

/// The plan's word on ranks that share CPUs and so got a fair share of threads each
/// (`OMP_NUM_THREADS`, where numaplan sets it: not under `openmp:`, nor when `env:` sets it):
/// one line per kind of sharing, `ranks 0-7 share their CPUs, 2 ranks to 16 cores: ...`.
fn shared_threads(
    spec: &Spec,
    topo: &Topology,
    placements: &[Placement],
    sharers: &[u32],
    insides: &[inside::Inside],
) -> Vec<Warning> {
    if spec.openmp.is_some() || spec.env.contains_key(OMP_NUM_THREADS) {
        return Vec::new();
    }
    // (ranks sharing, cores, threads) -> ranks
    let mut kinds: std::collections::BTreeMap<(u32, usize, u32), CpuSet> = Default::default();
    for (i, p) in placements
        .iter()
        .enumerate()
        .filter(|(i, _)| sharers[*i] > 1)
    {
        let threads = insides[i].threads;
        let cores = topo.cores_touching(&p.cpus).len();
        kinds
            .entry((sharers[i], cores, threads))
            .or_default()
            .insert(i as u32);
    }
    kinds
        .into_iter()
        .map(|((sharing, cores, threads), ranks)| {
            let cores = crate::phrase::plural(cores, "core", "cores");
            Warning::new(
                codes::W0212_SHARED_CPUS,
                format!(
                    "ranks {ranks} share their CPUs, {sharing} ranks to {cores}: \
                     OMP_NUM_THREADS is {threads} in each, their fair share rather than one \
                     per core (set `env: {{OMP_NUM_THREADS: N}}` to choose)"
                ),
            )
        })
        .collect()
}

/// The job's ranks can be numbered: `WORLD_SIZE` (nodes x ranks per node) fits 32 bits. The spec's
/// own counts are bounded in validation; a node's rank count is known only here.
fn world_fits(spec: &Spec, per_node: usize) -> Result<(), ResolveError> {
    let total = u64::from(spec.nodes) * per_node as u64;
    if total <= u64::from(u32::MAX) {
        return Ok(());
    }
    Err(ResolveError::new(
        ResolveErrorKind::TooManyRanks {
            nodes: spec.nodes,
            per_node,
            total,
        },
        "nodes",
        "run fewer nodes, or set `ranks_per_node` lower",
    ))
}

/// Each rank's CPUs by the policy's family (docs/policies.md: one section each).
fn place(
    ctx: &Ctx,
    selected: &[&Gpu],
    units: &[Unit],
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Placement>, ResolveError> {
    match ctx.cpu.policy {
        Policy::Auto => auto::place(ctx, units, warnings),
        Policy::Torch(mode) => pytorch::place(ctx, selected, units, mode),
        Policy::GpuAffinity(mode) => gpu_affinity::place(ctx, units, mode),
        Policy::Mpibind => unreachable!("mpibind maps its ranks itself (mpibind::map)"),
    }
}

fn every_rank_has_cpus(units: &[Unit], placements: &[Placement]) -> Result<(), ResolveError> {
    match units
        .iter()
        .zip(placements)
        .find(|(_, p)| p.cpus.is_empty())
    {
        Some((u, _)) => Err(ResolveError::new(
            ResolveErrorKind::NothingAllowed {
                what: format!("rank {}", u.local_rank),
            },
            "cpu.allowed",
            "widen `cpu.allowed`, or run fewer ranks",
        )),
        None => Ok(()),
    }
}

/// The CPUs no rank may use: `auto`'s reserved cores (the other families have none).
fn reserved_cpus(spec: &Spec, ctx: &Ctx) -> CpuSet {
    match spec.cpu.policy {
        Policy::Auto => auto::reserved_cpus(ctx),
        _ => CpuSet::new(),
    }
}

/// Each rank's NIC (`nic.policy: closest`): a GPU rank sits at its GPU, a CPU-only rank at its
/// (first) node.
fn choose_nics<'t>(
    spec: &Spec,
    ctx: &Ctx<'t>,
    units: &[Unit],
    placements: &[Placement],
) -> Vec<Option<&'t Nic>> {
    if spec.nic == NicPolicy::None {
        return units.iter().map(|_| None).collect();
    }
    let anchors: Vec<nics::Anchor> = units
        .iter()
        .zip(placements)
        .map(|(u, p)| {
            let node = u
                .lead()
                .and_then(|g| g.numa_node)
                .or(p.home)
                .or(p.memory_nodes.first().copied());
            nics::Anchor {
                gpu: u.lead(),
                node,
                package: u
                    .lead()
                    .and_then(|g| ctx.gpu_package(g))
                    .or(node.and_then(|n| ctx.topo.node_package(n))),
            }
        })
        .collect();
    nics::choose(ctx.topo, &anchors)
}

/// A rank's binding; its environment is written once its place in the job is known
/// (`Unplaced::place`).
fn rank_binding(
    spec: &Spec,
    unit: &Unit,
    placement: Placement,
    memory: MemoryBinding,
    nic: Option<&Nic>,
    inside: inside::Inside,
) -> RankBinding {
    RankBinding {
        local_rank: unit.local_rank,
        gpus: unit
            .gpus
            .iter()
            .map(|g| PlannedGpu {
                uuid: g.uuid.clone(),
                index: g.index,
                pci: g.pci,
            })
            .collect(),
        numa_node: placement.home,
        env: BTreeMap::new(),
        // The spec's `env:` wins, as it does in the environment; a value of it that is no
        // count counts as the rank's CPUs, as a plan file read back counts it.
        threads: match spec.env.get(OMP_NUM_THREADS) {
            Some(v) => omp_threads(v).unwrap_or(placement.cpus.len() as u32),
            None => inside.threads,
        },
        cpus: placement.cpus,
        cores: placement.cores,
        memory,
        nics: nic
            .map(|n| PlannedNic {
                name: n.name.clone(),
                kind: Some(n.kind),
                pci: n.pci,
            })
            .into_iter()
            .collect(),
        helpers: inside.helpers,
        openmp: inside.openmp,
    }
}

/// docs/policies.md, "Memory, NICs and each rank's environment": the parts of a rank's
/// environment (`plan::environment::planned` writes them): its numbering, what runs inside it,
/// the GPUs it sees, its NIC's variables and the spec's `env:`.
fn environment(
    spec: &Spec,
    ranks_per_node: u32,
    unit: &Unit,
    inside: &inside::Inside,
    nic: Option<&Nic>,
) -> environment::Parts {
    // A policy that says which GPUs each rank sees (mpibind's) has the last word; else
    // `visible: own` shows a rank its own GPUs.
    let visible = match (&inside.visible, spec.visible) {
        (Some(visible), _) => visible.clone(),
        (None, Visibility::Own) => own_gpus(unit),
        (None, _) => Vec::new(),
    };
    // `gpus: visible` chose by a variable: every rank sees what the plan was made for, not
    // whatever the variable says (or does not) where it runs.
    let chosen = match (spec.visible, &spec.gpus) {
        (Visibility::All, GpuChoice::Visible(Some((variable, value)))) => {
            Some((variable.clone(), value.clone()))
        }
        _ => None,
    };
    environment::Parts {
        local_rank: unit.local_rank,
        ranks_per_node,
        port: spec.port,
        master_addr: spec.master_addr.clone(),
        threads: inside.threads,
        inside: inside.env.clone(),
        visible,
        chosen,
        nic: nic.map(nics::env).unwrap_or_default(),
        engine: spec.engine.map(|e| e.variables()).unwrap_or_default(),
        user: spec.env.clone(),
    }
}

/// A rank's own GPUs, by each vendor's variable, for the vendors it has GPUs of.
fn own_gpus(unit: &Unit) -> Vec<environment::Visible> {
    [Vendor::Nvidia, Vendor::Amd, Vendor::Intel]
        .into_iter()
        .map(|vendor| environment::Visible {
            variable: visibility_variable(vendor),
            gpus: unit
                .gpus
                .iter()
                .filter(|g| g.vendor == vendor)
                .map(|g| g.index)
                .collect(),
        })
        .filter(|v| !v.gpus.is_empty())
        .collect()
}

/// On a hybrid machine, says when a rank's CPUs are cores of different speeds: a synchronous job
/// runs at the pace of its slowest threads. Kinds that differ only in the kernel's capacity
/// estimate (`LinuxCapacity`: hwloc 2.x splits one core design into several kinds by it) count as
/// one speed; kinds with no other attribute count by their efficiency rank.
fn mixed_kinds(topo: &Topology, rank: &RankBinding) -> Option<Warning> {
    let mut speeds: BTreeMap<String, CpuSet> = BTreeMap::new();
    for kind in topo.cpu_kinds() {
        let cpus = kind.cpus.intersection(&rank.cpus);
        if cpus.is_empty() {
            continue;
        }
        let attributes: Vec<String> = kind
            .info
            .iter()
            .filter(|(k, _)| k.as_str() != "LinuxCapacity")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let speed = if attributes.is_empty() {
            kind.label()
        } else {
            attributes.join(", ")
        };
        let set = speeds.entry(speed).or_default();
        *set = set.union(&cpus);
    }
    (speeds.len() > 1).then(|| {
        let mut parts: Vec<(CpuSet, String)> =
            speeds.into_iter().map(|(speed, cpus)| (cpus, speed)).collect();
        parts.sort_by_key(|(cpus, _)| cpus.first());
        let parts: Vec<String> = parts
            .iter()
            .map(|(cpus, speed)| format!("{cpus} at {speed}"))
            .collect();
        Warning::new(
            codes::W0213_MIXED_CPU_KINDS,
            format!(
                "rank {} mixes cores of {} speeds ({}); a synchronous job runs at the pace of its slowest threads",
                rank.local_rank,
                parts.len(),
                parts.join("; ")
            ),
        )
    })
}
