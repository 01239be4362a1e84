//! §6, the greedy path (fewer tasks than NUMA domains): each task takes whole domains.

use std::collections::BTreeSet;

use super::buckets::fill_in_buckets;
use super::{Machine, Task};

/// 1. The domains (NUMA order) split into `ntasks` runs, task i taking run i;
/// 2. a task's CPUs: all CPUs of its domains' parents;
/// 3. its GPUs: those below each parent, without repeats, in device order;
/// 4. its threads: `threads` when given, else its CPU count.
pub fn map(machine: &Machine, ntasks: u32, threads: Option<u32>) -> Vec<Task> {
    let view = &machine.view;
    fill_in_buckets(&machine.domains, ntasks as usize)
        .into_iter()
        .map(|domains| {
            let mut task = Task {
                cpus: Default::default(),
                gpus: Vec::new(),
                threads: 0,
                nodes: Vec::new(),
            };
            let mut gpus: BTreeSet<usize> = BTreeSet::new();
            for domain in domains {
                task.cpus = task.cpus.union(&view.objects[domain.parent].cpus);
                task.nodes.push(domain.node);
                gpus.extend(machine.gpus_below(domain.parent));
            }
            task.gpus = gpus.into_iter().map(|i| machine.gpus[i].0).collect();
            task.threads = threads.unwrap_or(task.cpus.len() as u32);
            task
        })
        .collect()
}
