//! A plan in mpibind's words: `explain --format mpibind` prints the lines of
//! `mpibind_mapping_snprint` (mpibind.c at d529180), GPUs by their VISIBLE_DEVICES ids as
//! mpibind's Flux and Slurm plugins print them, so that a plan diffs against the output of
//! `flux run -o mpibind=verbose`; and what the text `explain` says of mpibind's thread counts.

use crate::plan::Plan;

/// `mpibind: task %3d nths %2d gpus %s cpus %s`, one line per rank.
pub fn render(plan: &Plan) -> String {
    plan.ranks
        .iter()
        .map(|r| {
            let gpus: Vec<String> = r.gpus.iter().map(|g| g.index.to_string()).collect();
            format!(
                "mpibind: task {:3} nths {:2} gpus {} cpus {}\n",
                r.local_rank,
                r.threads,
                gpus.join(","),
                r.cpus
            )
        })
        .collect()
}

/// Under `policy: mpibind`, the ranks whose OMP_NUM_THREADS (mpibind's count) is not their CPU
/// count, one line per such rank.
pub fn thread_notes(plan: &Plan) -> String {
    if plan.policy != crate::spec::Policy::Mpibind {
        return String::new();
    }
    let lines: Vec<String> = plan
        .ranks
        .iter()
        .filter(|r| r.threads as usize != r.cpus.len())
        .map(|r| {
            format!(
                "  rank {}: OMP_NUM_THREADS={} on {} CPUs (mpibind's count, not one per CPU)\n",
                r.local_rank,
                r.threads,
                r.cpus.len()
            )
        })
        .collect();
    match lines.is_empty() {
        true => String::new(),
        false => format!("\nthreads:\n{}", lines.concat()),
    }
}
