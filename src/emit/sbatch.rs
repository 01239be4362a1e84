//! The Slurm batch files' views of a plan: `--emit sbatch` (Slurm binds every task) and
//! `--emit sbatch-exec` (one `numaplan exec` per node); and of a job of several groups, one
//! heterogeneous Slurm job whose components are made of the same pieces (`sbatch`,
//! `sbatch-exec`), which its torchrun and mpirun scripts read too (each node starts its group).

use serde::Serialize;

use super::context::{
    EmbeddedPlan, EnvVar, Header, Origin, embedded_plan, header, plan_master_addr,
};
use crate::ids::node_list;
use crate::plan::Plan;
use crate::plan::job::JobPlan;
use crate::plan::place::Group;
use crate::spec::MemPolicy;
use crate::variables::{LOCAL_WORLD_SIZE, TORCHRUN_NUMBERING};

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

pub(super) fn allocation(plan: &Plan) -> Allocation {
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

pub(super) fn job_name(name: &Option<String>) -> String {
    name.clone().unwrap_or_else(|| "numaplan".into())
}

#[derive(Serialize)]
pub struct SbatchContext {
    #[serde(flatten)]
    header: Header,
    /// The plan, which every task finds in `NUMAPLAN_PLAN` (`numaplan.check_binding()`).
    #[serde(flatten)]
    embedded: EmbeddedPlan,
    job_name: String,
    allocation: Allocation,
    command: Vec<String>,
    port: String,
    /// MASTER_ADDR of a one-node plan (the plan's, as `numaplan exec` sets it); a multi-node
    /// job meets at its first host.
    master_addr: String,
    step: Step,
    rank_fn: RankFunction,
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
    /// What each rank's mark starts with (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`).
    plan_id: String,
    /// A numactl `--interleave=` option when the plan interleaves (Slurm cannot), else "".
    interleave: String,
    /// Of a group of a plan of several groups: the machine its nodes check, and its name.
    group: Option<GroupCheck>,
}

/// A group's machine, which the node check of its tasks compares the node with, and its name.
#[derive(Serialize)]
pub struct GroupCheck {
    name: String,
    topology: String,
    expect_cpus: usize,
    expect_nodes: usize,
    expect_gpus: usize,
}

impl GroupCheck {
    /// Of a group's plan; `None` for a plan of one group.
    pub fn of(plan: &Plan) -> Option<GroupCheck> {
        Some(GroupCheck::named(&plan.group()?.name, plan))
    }

    /// Group `name`, whose plan is `plan`.
    pub fn named(name: &str, plan: &Plan) -> GroupCheck {
        GroupCheck {
            name: name.to_string(),
            topology: plan.topology.clone(),
            expect_cpus: plan.machine.cpus,
            expect_nodes: plan.machine.numa_nodes,
            expect_gpus: plan.machine.gpus,
        }
    }
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

pub fn sbatch(plan: &Plan, origin: &Origin) -> SbatchContext {
    SbatchContext {
        header: header(plan, origin),
        embedded: embedded_plan(origin),
        job_name: job_name(&plan.name),
        allocation: allocation(plan),
        command: plan.command.clone(),
        port: plan.port.to_string(),
        master_addr: plan_master_addr(plan),
        step: step(plan),
        rank_fn: rank_function(plan, origin.plan_id, "NUMAPLAN_VALUE_"),
    }
}

/// How Slurm binds a plan's ranks: CPU masks, and memory where Slurm can say it.
pub(super) fn step(plan: &Plan) -> Step {
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
pub(super) fn rank_function(plan: &Plan, plan_id: &str, prefix: &str) -> RankFunction {
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
        plan_id: plan_id.to_string(),
        interleave,
        group: GroupCheck::of(plan),
    }
}

#[derive(Serialize)]
pub struct SbatchExecContext {
    #[serde(flatten)]
    header: Header,
    job_name: String,
    allocation: Allocation,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
}

pub fn sbatch_exec(plan: &Plan, origin: &Origin) -> SbatchExecContext {
    SbatchExecContext {
        header: header(plan, origin),
        job_name: job_name(&plan.name),
        allocation: allocation(plan),
        embedded: embedded_plan(origin),
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
    let widest = plan.ranks.iter().map(|r| r.cpus.len()).max().unwrap_or(1);
    let all: crate::cpuset::CpuSet = plan.ranks.iter().map(|r| &r.cpus).collect();
    let apart = plan.ranks.iter().map(|r| r.cpus.len()).sum::<usize>() == all.len();
    if apart {
        return StepCpus {
            cpus_per_task: widest,
            shared: false,
            overcommit: false,
        };
    }
    let share = all.len() / plan.ranks.len().max(1);
    StepCpus {
        cpus_per_task: share.max(1),
        shared: true,
        overcommit: share == 0,
    }
}

/// A plan of several groups, for the templates.
#[derive(Serialize)]
pub struct GroupsContext {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
    job_name: String,
    port: String,
    world_size: u64,
    world_nodes: u64,
    groups: Vec<GroupView>,
    /// The spec's `mpirun:` words (the top level's, which every group shares).
    mpirun_extra: Vec<String>,
    mpirun_openmpi: Vec<String>,
    mpirun_mpich: Vec<String>,
}

/// One group: a component of the heterogeneous job, or the ranks of a node of it.
#[derive(Serialize)]
pub struct GroupView {
    index: usize,
    /// Its name and machine (`name`, `topology`, `expect_cpus`...), which a node must have to
    /// run it and by which a node finds its group.
    #[serde(flatten)]
    machine: GroupCheck,
    nodes: u32,
    ranks_per_node: u32,
    /// Its ranks in all (nodes x ranks per node), which global ranks they are (`ranks 16-19`,
    /// `rank 20`), and the job's node number of its first node.
    ranks: u64,
    span: String,
    first_node: u64,
    /// Its first rank's global rank.
    first_rank: u64,
    command: Vec<String>,
    allocation: Allocation,
    step: Step,
    rank_fn: RankFunction,
}

/// `plan_ids`: each group's plan id (`plan_file::id`), which its ranks' marks carry.
pub fn groups(plan: &JobPlan, origin: &Origin, plan_ids: &[String]) -> GroupsContext {
    let first = &plan.groups[0];
    let mut head = header(first, origin);
    head.by_group = true;
    head.topology = plan
        .groups
        .iter()
        .map(|g| g.topology.clone())
        .collect::<Vec<_>>()
        .join(", ");
    head.warnings = plan
        .named()
        .flat_map(|(group, g)| {
            g.warnings
                .iter()
                .map(move |w| format!("group `{}`: {}", group.name, w.listed(&g.allowed_warnings)))
        })
        .collect();
    GroupsContext {
        header: head,
        embedded: embedded_plan(origin),
        job_name: job_name(&plan.name),
        port: first.port.to_string(),
        world_size: plan.world_size,
        world_nodes: first.world_nodes(),
        groups: plan
            .named()
            .zip(plan_ids)
            .map(|((group, g), id)| view(group, g, id))
            .collect(),
        mpirun_extra: first.mpirun.extra.clone(),
        mpirun_openmpi: first.mpirun.openmpi.clone(),
        mpirun_mpich: first.mpirun.mpich.clone(),
    }
}

fn view(group: &Group, plan: &Plan, plan_id: &str) -> GroupView {
    let place = &plan.place;
    let step = step(plan);
    // A component asks its step's CPUs per task: Slurm gives a component one CPU per task
    // otherwise, and its masks would lie outside the allocation.
    let mut allocation = allocation(plan);
    allocation.cpus_per_task = step.cpus.cpus_per_task;
    let ranks = u64::from(plan.nodes) * u64::from(plan.ranks_per_node);
    let rank_fn = rank_function(plan, plan_id, &format!("NUMAPLAN_VALUE_G{}_", group.index));
    GroupView {
        index: group.index,
        machine: GroupCheck::named(&group.name, plan),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        ranks,
        span: place.span(ranks),
        first_node: place.first_node,
        first_rank: place.first_rank,
        command: plan.command.clone(),
        allocation,
        step,
        rank_fn,
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
