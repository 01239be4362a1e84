//! Flat, pre-formatted views of a plan for the templates, which hold no logic beyond for/if.

use serde::Serialize;

use crate::ids::node_list;
use crate::plan::Plan;
use crate::provenance;
use crate::spec::MemPolicy;
use crate::variables::TORCHRUN_NUMBERING;

/// What the header of a generated file records, and the plan it embeds.
pub struct Origin<'a> {
    pub header: provenance::Header<'a>,
    /// The plan file (YAML), which `sbatch-exec` embeds for `numaplan exec` on every node.
    pub plan_file: &'a str,
    /// The script's file name (`-o`), for its usage line; `None` on standard output.
    pub script: Option<&'a str>,
    /// The plan's identity (`plan_file::id`), which every rank's mark `NUMAPLAN_BOUND` carries.
    pub plan_id: &'a str,
}

/// What every generated file's header and node check (`templates/check-node.sh.j2`) show.
#[derive(Serialize)]
pub struct Header {
    /// The provenance header's lines (`provenance::Header::lines`).
    provenance: Vec<String>,
    /// How the script's usage and examples call it: `./NAME` (its `-o` file), else `./SCRIPT`.
    script: String,
    topology: String,
    /// The plan's warnings, listed at the top of the file.
    warnings: Vec<String>,
    /// What each rank's mark starts with (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`).
    plan_id: String,
    /// The plan's machine shape, which a node must have to start the ranks.
    expect_cpus: usize,
    expect_nodes: usize,
    expect_gpus: usize,
    /// The known accelerators' PCI ids as sysfs spells them (`0x1002:0x740c`), which count as
    /// GPUs without a KFD node (`topology::devices::ACCELERATORS`).
    accelerators: Vec<String>,
}

fn header(plan: &Plan, origin: &Origin) -> Header {
    Header {
        provenance: origin.header.lines(provenance::File::Script),
        script: format!("./{}", origin.script.unwrap_or("SCRIPT")),
        topology: plan.topology.clone(),
        warnings: plan
            .warnings
            .iter()
            .map(|w| w.listed(&plan.allowed_warnings))
            .collect(),
        plan_id: origin.plan_id.to_string(),
        expect_cpus: plan.machine.cpus,
        expect_nodes: plan.machine.numa_nodes,
        expect_gpus: plan.machine.gpus,
        accelerators: crate::topology::devices::ACCELERATORS
            .iter()
            .map(|(vendor, device, _)| format!("0x{vendor:04x}:0x{device:04x}"))
            .collect(),
    }
}

#[derive(Serialize)]
pub struct BashContext {
    #[serde(flatten)]
    header: Header,
    /// Nodes of the job: above 1 the launcher needs `--node-rank` and `--master-addr`.
    nodes: u32,
    rank_count: usize,
    command: Vec<String>,
    ranks: Vec<BashRank>,
}

#[derive(Serialize)]
pub struct BashRank {
    rank: String,
    cpus: String,
    /// The numactl memory option (`--preferred=3`), or "" for none.
    memory: String,
    /// `NAME=value` entries.
    env: Vec<String>,
    /// `required` or `optional`: whether a refused memory policy stops the job (W0217 else).
    memory_required: &'static str,
}

/// The numactl option for a rank's memory policy.
fn numactl_memory(policy: MemPolicy, nodes: &str) -> String {
    match policy {
        MemPolicy::None => String::new(),
        MemPolicy::Preferred => format!("--preferred={nodes}"),
        MemPolicy::Bind => format!("--membind={nodes}"),
        MemPolicy::Interleave => format!("--interleave={nodes}"),
    }
}

pub fn bash(plan: &Plan, origin: &Origin) -> BashContext {
    BashContext {
        header: header(plan, origin),
        nodes: plan.nodes,
        rank_count: plan.ranks.len(),
        command: plan.command.clone(),
        ranks: plan
            .ranks
            .iter()
            .map(|r| BashRank {
                rank: r.local_rank.to_string(),
                cpus: r.cpus.to_string(),
                memory: numactl_memory(r.memory.policy, &node_list(&r.memory.nodes)),
                memory_required: match r.memory.required {
                    true => "required",
                    false => "optional",
                },
                env: r.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            })
            .collect(),
    }
}

/// The `#SBATCH` lines (`templates/sbatch-header.j2`).
#[derive(Serialize)]
pub struct Allocation {
    job_name: String,
    nodes: u32,
    ranks_per_node: u32,
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
        job_name: plan.name.clone().unwrap_or_else(|| "numaplan".into()),
        nodes: plan.nodes,
        ranks_per_node: plan.ranks_per_node,
        exclusive: plan.slurm.exclusive,
        gpus_per_node: plan.ranks.iter().map(|r| r.gpus.len()).sum(),
        partition: plan.slurm.partition.clone().unwrap_or_default(),
        account: plan.slurm.account.clone().unwrap_or_default(),
        time: plan.slurm.time.clone().unwrap_or_default(),
        extra: plan.slurm.extra.clone(),
    }
}

#[derive(Serialize)]
pub struct SbatchContext {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    allocation: Allocation,
    command: Vec<String>,
    port: String,
    /// MASTER_ADDR of a one-node plan (the plan's, as `numaplan exec` sets it); a multi-node
    /// job meets at its first host.
    master_addr: String,
    #[serde(flatten)]
    step: StepCpus,
    /// `[verbose,]mask_cpu:0x..,0x..`.
    cpu_bind: String,
    /// `[prefer,]map_mem:..` / `mask_mem:..`, or "" for none.
    mem_bind: String,
    /// A numactl `--interleave=` option when the plan interleaves (Slurm cannot), else "".
    interleave: String,
    ranks: Vec<SbatchRank>,
    /// Values too long to write into the per-task function, each in its own variable
    /// (`NUMAPLAN_VALUE_1`...), exported before `srun`.
    long_values: Vec<EnvVar>,
}

#[derive(Serialize)]
pub struct SbatchRank {
    rank: String,
    /// The plan's variables, without the per-task ones Slurm provides.
    env: Vec<RankVar>,
}

#[derive(Serialize)]
pub struct EnvVar {
    name: String,
    value: String,
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
fn rank_variables(plan: &Plan) -> (Vec<SbatchRank>, Vec<EnvVar>) {
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
            name: format!("NUMAPLAN_VALUE_{}", long_values.len() + 1),
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
    var != "LOCAL_WORLD_SIZE" && TORCHRUN_NUMBERING.contains(&var)
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
    let masks: Vec<String> = plan.ranks.iter().map(|r| hex_mask(&r.cpus)).collect();
    let verbose = if plan.slurm.verbose { "verbose," } else { "" };
    let policies: Vec<MemPolicy> = plan.ranks.iter().map(|r| r.memory.policy).collect();
    let single_nodes = plan.ranks.iter().all(|r| r.memory.nodes.len() == 1);
    let nodes_of = |r: &crate::plan::RankBinding| node_list(&r.memory.nodes);
    let policy = policies.first().copied().unwrap_or(MemPolicy::None);
    let (mem_bind, interleave) = match policy {
        MemPolicy::None => (String::new(), String::new()),
        MemPolicy::Preferred | MemPolicy::Bind if single_nodes => {
            let map: Vec<String> = plan.ranks.iter().map(nodes_of).collect();
            let prefer = if policy == MemPolicy::Preferred {
                "prefer,"
            } else {
                ""
            };
            (
                format!("{verbose}{prefer}map_mem:{}", map.join(",")),
                String::new(),
            )
        }
        MemPolicy::Preferred | MemPolicy::Bind => {
            let masks: Vec<String> = plan
                .ranks
                .iter()
                .map(|r| hex_mask(&r.memory.nodes.iter().map(|n| n.0).collect()))
                .collect();
            (
                format!("{verbose}mask_mem:{}", masks.join(",")),
                String::new(),
            )
        }
        MemPolicy::Interleave => (
            String::new(),
            format!(
                "--interleave={}",
                plan.ranks.first().map(nodes_of).unwrap_or_default()
            ),
        ),
    };
    let (ranks, long_values) = rank_variables(plan);
    SbatchContext {
        header: header(plan, origin),
        allocation: allocation(plan),
        command: plan.command.clone(),
        port: plan.port.to_string(),
        master_addr: plan_master_addr(plan),
        step: step_cpus(plan),
        cpu_bind: format!("{verbose}mask_cpu:{}", masks.join(",")),
        mem_bind,
        interleave,
        ranks,
        long_values,
    }
}

/// The plan file embedded in a script, in quoted here-documents
/// (`templates/embedded-plan.sh.j2`), handed to numaplan in the environment: whole in
/// `NUMAPLAN_PLAN`, or, when larger than `PLAN_PART`, in parts `NUMAPLAN_PLAN_1`... (the kernel
/// refuses to start a program with a variable over 128 KiB), which `env:NUMAPLAN_PLAN` joins.
#[derive(Serialize)]
pub struct EmbeddedPlan {
    /// The plan file's text, ending with a newline, when it fits one variable.
    plan: Option<String>,
    /// Otherwise its parts, in order.
    plan_parts: Vec<EnvVar>,
    /// The variables that carry the plan, for launchers that forward variables by name.
    plan_vars: Vec<String>,
    /// The here-documents' terminator: a string the plan does not contain.
    plan_end: String,
}

/// The largest plan handed over in one variable, and the size of each part of a larger one.
pub const PLAN_PART: usize = 64 * 1024;

fn embedded_plan(origin: &Origin) -> EmbeddedPlan {
    let text = &origin.plan_file;
    let mut plan_end = "END_OF_PLAN".to_string();
    while text.contains(plan_end.as_str()) {
        plan_end.push('_');
    }
    if text.len() <= PLAN_PART {
        let mut plan = text.to_string();
        if !plan.ends_with('\n') {
            plan.push('\n');
        }
        return EmbeddedPlan {
            plan: Some(plan),
            plan_parts: Vec::new(),
            plan_vars: vec!["NUMAPLAN_PLAN".into()],
            plan_end,
        };
    }
    let plan_parts: Vec<EnvVar> = crate::text::chunks(text, PLAN_PART)
        .enumerate()
        .map(|(i, part)| EnvVar {
            name: format!("NUMAPLAN_PLAN_{}", i + 1),
            value: part.to_string(),
        })
        .collect();
    EmbeddedPlan {
        plan: None,
        plan_vars: plan_parts.iter().map(|p| p.name.clone()).collect(),
        plan_parts,
        plan_end,
    }
}

#[derive(Serialize)]
pub struct SbatchExecContext {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    allocation: Allocation,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
}

pub fn sbatch_exec(plan: &Plan, origin: &Origin) -> SbatchExecContext {
    SbatchExecContext {
        header: header(plan, origin),
        allocation: allocation(plan),
        embedded: embedded_plan(origin),
    }
}

/// The torchrun and mpirun scripts: a launcher starts the ranks, `numaplan bind` binds each.
#[derive(Serialize)]
pub struct BindLauncherContext {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
    nodes: u32,
    rank_count: u32,
    /// Ranks in all: nodes x ranks per node.
    total: u64,
    command: Vec<String>,
    port: String,
    /// The plan's MASTER_ADDR (single-node plans), else the loopback address.
    master_addr: String,
    /// The spec's `mpirun:` words: for either MPI, for Open MPI, for MPICH.
    mpirun_extra: Vec<String>,
    mpirun_openmpi: Vec<String>,
    mpirun_mpich: Vec<String>,
}

pub fn bind_launcher(plan: &Plan, origin: &Origin) -> BindLauncherContext {
    BindLauncherContext {
        header: header(plan, origin),
        embedded: embedded_plan(origin),
        nodes: plan.nodes,
        rank_count: plan.ranks_per_node,
        total: u64::from(plan.nodes) * u64::from(plan.ranks_per_node),
        command: plan.command.clone(),
        port: plan.port.to_string(),
        master_addr: plan_master_addr(plan),
        mpirun_extra: plan.mpirun.extra.clone(),
        mpirun_openmpi: plan.mpirun.openmpi.clone(),
        mpirun_mpich: plan.mpirun.mpich.clone(),
    }
}

/// Where a one-node plan's ranks meet: the plan's MASTER_ADDR (`rendezvous.addr`, by default
/// 127.0.0.1).
fn plan_master_addr(plan: &Plan) -> String {
    plan.ranks
        .first()
        .and_then(|r| r.env.get("MASTER_ADDR").cloned())
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// What the `srun` step asks of Slurm per task. Slurm refuses a step whose tasks ask more CPUs
/// than the node has ("More processors requested than permitted"), which ranks that share CPUs
/// (`node`, `socket`, `all`, `single`...) would: each would ask for the whole shared set.
#[derive(Serialize)]
pub struct StepCpus {
    /// Each rank's CPU count when the ranks' sets are apart; else the plan's CPUs shared out
    /// among the ranks (at least 1). The `--cpu-bind` masks still bind each rank exactly.
    cpus_per_task: usize,
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
