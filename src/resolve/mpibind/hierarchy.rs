//! §7, the memory-hierarchy path: tasks shared out over the NUMA domains in proportion to their
//! GPUs (or CPUs), then each domain's tasks matched to a level of its parent's subtree.

use super::buckets::{fill_in_buckets, split};
use super::{Machine, Task};
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::resolve::error::{ResolveError, ResolveErrorKind};
use crate::topology::tree::Kind;

pub fn map(
    machine: &Machine,
    ntasks: u32,
    threads: Option<u32>,
    gpu_optim: bool,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<Task>, ResolveError> {
    let units = units_per_domain(machine, gpu_optim);
    let per_domain = tasks_per_domain(ntasks, &units);
    let mut tasks = Vec::new();
    for (domain, &np) in machine.domains.iter().zip(&per_domain) {
        if np == 0 {
            continue;
        }
        let root = domain.parent;
        let t = thread_count(machine, root, np, threads);
        let pus = machine.view.objects[root].cpus.len();
        if threads.is_some() && (t as usize) * np > pus {
            warnings.push(Warning::new(
                codes::W0218_MPIBIND_SHARED,
                format!(
                    "NUMA node {}: {np} task(s) x `cpu.threads: {t}` are more threads than its \
                     {pus} CPUs; mpibind reports {t} threads per task all the same",
                    domain.node
                ),
            ));
        }
        let slots = level_walk(machine, root, (t as usize) * np);
        let p = pus_per_slot(machine, &slots, (t as usize) * np)?;
        let cpus = distribute(&slots_offer(machine, &slots.objects, p), np);
        let gpus = gpu_match(machine, root, np);
        for (cpus, gpus) in cpus.into_iter().zip(gpus) {
            tasks.push(Task {
                cpus,
                gpus,
                threads: t,
                nodes: vec![domain.node],
            });
        }
    }
    Ok(tasks)
}

/// §7.1: Units per domain (NUMA order): with gpu_optim the GPUs whose locality's NUMA set holds
/// the node, else the node's CPU count (its parent's CPUs). Where no GPU's NUMA set holds a
/// domain (mpibind would divide by zero), by CPUs.
fn units_per_domain(machine: &Machine, gpu_optim: bool) -> Vec<u64> {
    let view = &machine.view;
    let cpus = |d: &super::Domain| view.objects[d.parent].cpus.len() as u64;
    let numa_sets: Vec<_> = machine
        .gpus
        .iter()
        .map(|(_, at)| view.numa_set(*at))
        .collect();
    let gpus =
        |d: &super::Domain| numa_sets.iter().filter(|set| set.contains(&d.node)).count() as u64;
    let by_gpus: Vec<u64> = match gpu_optim {
        true => machine.domains.iter().map(gpus).collect(),
        false => Vec::new(),
    };
    match by_gpus.iter().sum::<u64>() {
        0 => machine.domains.iter().map(cpus).collect(),
        _ => by_gpus,
    }
}

/// §7.2: Tasks per domain: ⌊ntasks·uᵢ/U⌋ each, the rest one each to the largest remainders
/// (equal remainders in NUMA order).
fn tasks_per_domain(ntasks: u32, units: &[u64]) -> Vec<usize> {
    let total: u64 = units.iter().sum::<u64>().max(1);
    let n = u64::from(ntasks);
    let mut per: Vec<usize> = units.iter().map(|u| (n * u / total) as usize).collect();
    let left = ntasks as usize - per.iter().sum::<usize>();
    let mut by_remainder: Vec<usize> = (0..units.len()).collect();
    by_remainder.sort_by_key(|&i| std::cmp::Reverse(n * units[i] % total));
    for &i in by_remainder.iter().take(left) {
        per[i] += 1;
    }
    per
}

/// §7.4: Threads per task: `threads` when given; else the Core-level objects of the domain's
/// parent (times smt when 1 < smt < the SMT level), or its PUs when smt ≥ the SMT level,
/// divided among its tasks (at least 1).
fn thread_count(machine: &Machine, root: usize, np: usize, threads: Option<u32>) -> u32 {
    if let Some(t) = threads {
        return t;
    }
    let view = &machine.view;
    let hw = view.smt_level() as u32;
    let k = machine.smt;
    let cpus = &view.objects[root].cpus;
    let n = match k < hw {
        true => {
            let cores = view.within(view.core_depth(), root).len() as u32;
            cores * if k > 1 { k } else { 1 }
        }
        false => cpus.len() as u32,
    };
    match n as usize >= np {
        true => n / np as u32,
        false => 1,
    }
}

/// The level the walk stopped at, and its objects (the slots) in logical order.
struct Slots {
    core_level: bool,
    objects: Vec<usize>,
}

/// §7.5: From the parent's level down to the Core level, the first level with at least `workers`
/// objects within the parent (with smt given, only the Core level).
fn level_walk(machine: &Machine, root: usize, workers: usize) -> Slots {
    let view = &machine.view;
    let core = view.core_depth();
    for depth in view.depths(view.objects[root].depth, core) {
        if machine.smt > 0 && depth != core {
            continue;
        }
        let objects = view.within(depth, root);
        if objects.len() >= workers || depth == core {
            return Slots {
                core_level: depth == core,
                objects,
            };
        }
    }
    Slots {
        core_level: true,
        objects: Vec::new(),
    }
}

/// §7.6: PUs per slot: smt when given; at the Core level the fewest that give every worker a PU
/// (the SMT level at most); above it 1. A slot with fewer PUs is refused (mpibind would map
/// CPU -1).
fn pus_per_slot(machine: &Machine, slots: &Slots, workers: usize) -> Result<usize, ResolveError> {
    let view = &machine.view;
    let hw = view.smt_level();
    let m = slots.objects.len();
    let p = match (machine.smt, slots.core_level) {
        (k, _) if k > 0 => k as usize,
        (_, true) => (1..=hw).find(|i| m * i >= workers).unwrap_or(hw),
        (_, false) => 1,
    };
    if let Some(&short) = slots
        .objects
        .iter()
        .find(|&&s| view.objects[s].cpus.len() < p)
    {
        let cpus = &view.objects[short].cpus;
        return Err(ResolveError::new(
            ResolveErrorKind::MpibindSlotTooSmall {
                cpus: cpus.clone(),
                core_of: (view.objects[short].kind == Kind::Core)
                    .then(|| cpus.first())
                    .flatten(),
                wanted: p,
            },
            "cpu.smt",
            "ask for fewer hardware threads per core (`cpu.smt`), fewer tasks or threads, or \
             restrict to whole cores",
        )
        .note(
            "mpibind would add CPU -1 to such a task's set (a corrupt CPU set of 4294967295 \
             CPUs)",
        ));
    }
    Ok(p)
}

/// Each slot's first `p` PUs.
fn slots_offer(machine: &Machine, slots: &[usize], p: usize) -> Vec<CpuSet> {
    slots
        .iter()
        .map(|&s| machine.view.objects[s].cpus.iter().take(p).collect())
        .collect()
}

/// §7.7-7.8: The slots' PUs among `np` tasks: with as many slots as tasks or more, the slots split
/// into runs; else the tasks split over the slots, a slot's PUs split among its tasks (several
/// tasks sharing a PU where it has fewer PUs than tasks).
fn distribute(offers: &[CpuSet], np: usize) -> Vec<CpuSet> {
    let union = |run: Vec<CpuSet>| run.iter().collect::<CpuSet>();
    if offers.len() >= np || offers.is_empty() {
        return fill_in_buckets(offers, np).into_iter().map(union).collect();
    }
    offers
        .iter()
        .zip(split(np, offers.len()))
        .flat_map(|(offer, tasks)| {
            let pus: Vec<u32> = offer.iter().collect();
            fill_in_buckets(&pus, tasks)
                .into_iter()
                .map(|run| run.into_iter().collect::<CpuSet>())
        })
        .collect()
}

/// §7.9: The GPUs below the parent, in device order: split into `np` runs when there are as many
/// as tasks or more, else the tasks split into runs, run j sharing GPU j.
fn gpu_match(machine: &Machine, root: usize, np: usize) -> Vec<Vec<crate::pci_addr::PciAddr>> {
    let gpus: Vec<_> = machine
        .gpus_below(root)
        .into_iter()
        .map(|i| machine.gpus[i].0)
        .collect();
    fill_in_buckets(&gpus, np)
}
