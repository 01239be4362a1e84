//! The Slurm batch files' views of a job: `--emit sbatch` (Slurm binds every task) and
//! `--emit sbatch-exec` (one `numaplan exec` per node). Each group is an allocation (a
//! component of a heterogeneous Slurm job, where the job has several groups), a step that
//! binds its tasks, and the function every task of it runs first.

use serde::Serialize;

use super::Origin;
use super::view::{EnvVar, JobView, job_view};
use crate::ids::node_list;
use crate::plan::Plan;
use crate::plan::job::JobPlan;
use crate::spec::MemPolicy;
use crate::variables::{LOCAL_WORLD_SIZE, TORCHRUN_NUMBERING};

/// A group of the batch file: its `#SBATCH` lines, its step and its tasks' function.
#[derive(Serialize)]
pub struct SbatchGroup {
    allocation: Allocation,
    step: Step,
    rank_fn: RankFunction,
}

/// The batch file's view of `job`: a group per component.
pub fn view(job: &JobPlan, origin: &Origin) -> JobView<(), SbatchGroup> {
    job_view(job, origin, (), |plan, _| {
        let step = step(plan);
        let mut allocation = allocation(plan);
        // A component asks its step's CPUs per task: Slurm gives a component one CPU per task
        // otherwise, and its masks would lie outside the allocation. A job of one group asks
        // them in its `srun`.
        let prefix = match plan.group() {
            Some(g) => {
                allocation.cpus_per_task = step.cpus.cpus_per_task;
                format!("NUMAPLAN_VALUE_G{}_", g.index)
            }
            _ => "NUMAPLAN_VALUE_".to_string(),
        };
        SbatchGroup {
            rank_fn: rank_function(plan, &prefix),
            allocation,
            step,
        }
    })
}

/// The `#SBATCH` lines of a job or of one component of a heterogeneous job
/// (`templates/sbatch-macros.j2`).
#[derive(Clone, Serialize)]
pub struct Allocation {
    nodes: u32,
    ranks_per_node: u32,
    /// 0: not asked (a plan of one group, whose `srun` asks per task). A component of a
    /// heterogeneous job asks its step's CPUs per task, which Slurm would not give it else.
    pub(super) cpus_per_task: usize,
    exclusive: bool,
    /// 0: no GPUs to ask for.
    gpus_per_node: usize,
    partition: String,
    account: String,
    time: String,
    extra: Vec<String>,
}

fn allocation(plan: &Plan) -> Allocation {
    Allocation {
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        cpus_per_task: 0,
        exclusive: plan.slurm.exclusive,
        gpus_per_node: plan.ranks.iter().map(|r| r.gpus.len()).sum(),
        partition: plan.slurm.partition.clone().unwrap_or_default(),
        account: plan.slurm.account.clone().unwrap_or_default(),
        time: plan.slurm.time.clone().unwrap_or_default(),
        extra: plan.slurm.extra.clone(),
    }
}

/// What one `srun` (or one component of a heterogeneous `srun`) asks and binds.
#[derive(Serialize)]
pub struct Step {
    ranks_per_node: u32,
    gpus_per_node: usize,
    #[serde(flatten)]
    pub(super) cpus: StepCpus,
    /// `[verbose,]mask_cpu:0x..,0x..`.
    cpu_bind: String,
    /// `[prefer,]map_mem:..` / `mask_mem:..`, or "" for none.
    mem_bind: String,
}

/// The function every task runs before its program (`rank_function` in
/// `templates/sbatch-macros.j2`): the node check, the local rank's environment, its mark.
#[derive(Serialize)]
pub struct RankFunction {
    ranks: Vec<SbatchRank>,
    /// Values too long to write into the function, each in its own variable
    /// (`NUMAPLAN_VALUE_1`...), exported before `srun`.
    long_values: Vec<EnvVar>,
    /// A numactl `--interleave=` option when the plan interleaves (Slurm cannot), else "".
    interleave: String,
}

#[derive(Serialize)]
pub struct SbatchRank {
    rank: String,
    /// The plan's variables, without the per-task ones Slurm provides.
    env: Vec<RankVar>,
}

/// A rank's variable in the per-task function: its value written there, or the name of the
/// variable that carries it (`long_values`).
#[derive(Serialize)]
pub struct RankVar {
    name: String,
    value: String,
    carried_by: Option<String>,
}

/// How large the per-task function of `--emit sbatch` may grow. Bash exports it as one
/// environment variable, and the kernel refuses to start a program with a variable over 128 KiB
/// (`MAX_ARG_STRLEN`): longer values move out of it, the longest first, into variables of
/// their own.
const FUNCTION_BUDGET: usize = 64 * 1024;

/// The ranks' variables for the per-task function, and the long values that travel in variables
/// of their own so that the function stays within `FUNCTION_BUDGET`. A value shared by several
/// ranks travels once.
fn rank_variables(plan: &Plan, prefix: &str) -> (Vec<SbatchRank>, Vec<EnvVar>) {
    let own: Vec<(u32, Vec<(&String, &String)>)> = plan
        .ranks
        .iter()
        .map(|r| {
            let vars = r.env.iter().filter(|(k, _)| !from_slurm(k));
            (r.local_rank, vars.collect())
        })
        .collect();
    let entries = || own.iter().flat_map(|(_, vars)| vars.iter().copied());
    // What an entry adds to the function: `export NAME='value'` written out, or
    // `export NAME="$NUMAPLAN_VALUE_N"`.
    let written = |k: &str, v: &str| k.len() + crate::shell::quote(v.to_string()).len() + 16;
    let carried = |k: &str| k.len() + 40;
    let mut size: usize = entries().map(|(k, v)| written(k, v)).sum();
    let mut by_length: Vec<&String> = entries().map(|(_, v)| v).collect();
    by_length.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    by_length.dedup();
    let mut long_values: Vec<EnvVar> = Vec::new();
    for value in by_length {
        if size <= FUNCTION_BUDGET {
            break;
        }
        for (k, _) in entries().filter(|(_, v)| *v == value) {
            size = size - written(k, value) + carried(k);
        }
        long_values.push(EnvVar {
            name: format!("{prefix}{}", long_values.len() + 1),
            value: value.clone(),
        });
    }
    let ranks = own
        .iter()
        .map(|(local_rank, vars)| SbatchRank {
            rank: local_rank.to_string(),
            env: vars
                .iter()
                .map(|(name, value)| RankVar {
                    name: name.to_string(),
                    value: value.to_string(),
                    carried_by: long_values
                        .iter()
                        .find(|l| &l.value == *value)
                        .map(|l| l.name.clone()),
                })
                .collect(),
        })
        .collect();
    (ranks, long_values)
}

/// Whether the batch file sets this variable from Slurm's own per-task values or once per job:
/// torchrun's numbering, but for `LOCAL_WORLD_SIZE`, which is the plan's.
fn from_slurm(var: &str) -> bool {
    var != LOCAL_WORLD_SIZE && TORCHRUN_NUMBERING.contains(&var)
}

/// A CPU set as the hexadecimal mask Slurm's `mask_cpu` takes (`0x3`).
fn hex_mask(set: &crate::cpuset::CpuSet) -> String {
    let Some(last) = set.last() else {
        return "0x0".into();
    };
    let words = last as usize / 64 + 1;
    let mut w = vec![0u64; words];
    for cpu in set.iter() {
        w[cpu as usize / 64] |= 1 << (cpu % 64);
    }
    let mut out = format!("0x{:x}", w[words - 1]);
    for word in w[..words - 1].iter().rev() {
        out.push_str(&format!("{word:016x}"));
    }
    out
}

/// How Slurm binds a plan's ranks: CPU masks, and memory where Slurm can say it.
fn step(plan: &Plan) -> Step {
    let masks: Vec<String> = plan.ranks.iter().map(|r| hex_mask(&r.cpus)).collect();
    let verbose = if plan.slurm.verbose { "verbose," } else { "" };
    let single_nodes = plan.ranks.iter().all(|r| r.memory.nodes.len() == 1);
    let policy = first_policy(plan);
    let mem_bind = match policy {
        MemPolicy::None | MemPolicy::Interleave => String::new(),
        MemPolicy::Preferred | MemPolicy::Bind if single_nodes => {
            let map: Vec<String> = plan
                .ranks
                .iter()
                .map(|r| node_list(&r.memory.nodes))
                .collect();
            let prefer = if policy == MemPolicy::Preferred {
                "prefer,"
            } else {
                ""
            };
            format!("{verbose}{prefer}map_mem:{}", map.join(","))
        }
        MemPolicy::Preferred | MemPolicy::Bind => {
            let masks: Vec<String> = plan
                .ranks
                .iter()
                .map(|r| hex_mask(&r.memory.nodes.iter().map(|n| n.0).collect()))
                .collect();
            format!("{verbose}mask_mem:{}", masks.join(","))
        }
    };
    Step {
        ranks_per_node: plan.ranks_per_node,
        gpus_per_node: plan.ranks.iter().map(|r| r.gpus.len()).sum(),
        cpus: step_cpus(plan),
        cpu_bind: format!("{verbose}mask_cpu:{}", masks.join(",")),
        mem_bind,
    }
}

fn first_policy(plan: &Plan) -> MemPolicy {
    plan.ranks
        .first()
        .map_or(MemPolicy::None, |r| r.memory.policy)
}

/// The per-task function of a plan's ranks; long values travel in variables named `prefix`1,
/// `prefix`2...
fn rank_function(plan: &Plan, prefix: &str) -> RankFunction {
    let (ranks, long_values) = rank_variables(plan, prefix);
    let interleave = match first_policy(plan) {
        MemPolicy::Interleave => format!(
            "--interleave={}",
            plan.ranks
                .first()
                .map(|r| node_list(&r.memory.nodes))
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    RankFunction {
        ranks,
        long_values,
        interleave,
    }
}

/// What the `srun` step asks of Slurm per task. Slurm refuses a step whose tasks ask more CPUs
/// than the node has ("More processors requested than permitted"), which ranks that share CPUs
/// (`node`, `socket`, `all`, `single`...) would: each would ask for the whole shared set.
#[derive(Serialize)]
pub struct StepCpus {
    /// Each rank's CPU count when the ranks' sets are apart; else the plan's CPUs shared out
    /// among the ranks (at least 1). The `--cpu-bind` masks still bind each rank exactly.
    pub(super) cpus_per_task: usize,
    /// The ranks share CPUs: said in the batch file.
    shared: bool,
    /// More ranks than CPUs: `--overcommit`, without which Slurm starts no step.
    overcommit: bool,
}

fn step_cpus(plan: &Plan) -> StepCpus {
    if !plan.ranks_share_cpus() {
        return StepCpus {
            cpus_per_task: plan.ranks.iter().map(|r| r.cpus.len()).max().unwrap_or(1),
            shared: false,
            overcommit: false,
        };
    }
    let all: crate::cpuset::CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
    let share = all.len() / plan.ranks.len().max(1);
    StepCpus {
        cpus_per_task: share.max(1),
        shared: true,
        overcommit: share == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::hex_mask;

    #[test]
    fn masks() {
        assert_eq!(hex_mask(&"0".parse().unwrap()), "0x1");
        assert_eq!(hex_mask(&"49-55".parse().unwrap()), "0xfe000000000000");
        assert_eq!(hex_mask(&"0-1".parse().unwrap()), "0x3");
        assert_eq!(hex_mask(&"64".parse().unwrap()), "0x10000000000000000");
        assert_eq!(
            hex_mask(&"48-55,176-183".parse().unwrap()),
            "0xff000000000000000000000000000000ff000000000000"
        );
    }
}
