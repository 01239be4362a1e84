//! The launch view: one job as every launcher's template sees it, a job of one group as a list
//! of one group. [`JobView`] holds what the job's launch script says once (its header, the plan
//! it embeds, the job's size and rendezvous port) and [`GroupView`] what it says per group (its
//! machine, nodes, ranks, first global rank and node, command, plan id); each launcher adds its
//! own parts to both (`J`, `G`: the Slurm batch file its allocations and steps, the bash
//! launcher its ranks). Views are pre-formatted, so templates hold no logic beyond for/if.

use serde::Serialize;

use super::{EmitError, EmitKind, Origin};
use crate::plan::Plan;
use crate::plan::job::{JobPlan, Shape};
use crate::provenance;
use crate::variables::MASTER_ADDR;

/// A job for a launcher's template: the job's parts, the launcher's own (`J`), and its groups,
/// each with the launcher's own parts of it (`G`).
#[derive(Serialize)]
pub struct JobView<J, G> {
    #[serde(flatten)]
    pub(super) header: Header,
    #[serde(flatten)]
    embedded: EmbeddedPlan,
    job_name: String,
    /// The rendezvous port (the spec's `rendezvous.port`), every group's alike.
    port: String,
    /// Ranks and nodes of the whole job.
    world_size: u64,
    world_nodes: u64,
    /// Of a spec with `groups:`: the groups are named, and a node finds its own.
    grouped: bool,
    /// The spec's `mpirun:` words (the top level's, which every group shares).
    mpirun_extra: Vec<String>,
    mpirun_openmpi: Vec<String>,
    mpirun_mpich: Vec<String>,
    #[serde(flatten)]
    launcher: J,
    groups: Vec<GroupView<G>>,
}

/// One group of the job: a component of a heterogeneous Slurm job, or the ranks a node of it
/// starts.
#[derive(Serialize)]
pub struct GroupView<G> {
    /// Its place among the groups, in spec order, and its name ("" for the one group of a job
    /// without groups).
    index: usize,
    name: String,
    /// What the script's names for it end with (`command_1`): "" for a job of one group.
    suffix: String,
    /// Its machine, which a node must have to run it and by which a node finds its group.
    #[serde(flatten)]
    machine: Machine,
    nodes: u32,
    ranks_per_node: u32,
    /// Its ranks in all (nodes x ranks per node), which global ranks they are (`ranks 16-19`,
    /// `rank 20`), the job's node number of its first node and its first rank's global rank.
    ranks: u64,
    span: String,
    first_node: u64,
    first_rank: u64,
    command: Vec<String>,
    /// What each of its ranks' marks starts with (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`).
    plan_id: String,
    /// Where its ranks meet when the job has one node: the plan's MASTER_ADDR
    /// (`rendezvous.addr`, by default 127.0.0.1).
    master_addr: String,
    #[serde(flatten)]
    launcher: G,
}

/// A group's machine, as the node check compares a node with it (`templates/check-node.sh.j2`).
#[derive(Clone, Serialize)]
pub struct Machine {
    topology: String,
    expect_cpus: usize,
    expect_nodes: usize,
    expect_gpus: usize,
}

impl Machine {
    fn of(plan: &Plan) -> Machine {
        Machine {
            topology: plan.topology.clone(),
            expect_cpus: plan.machine.cpus,
            expect_nodes: plan.machine.numa_nodes,
            expect_gpus: plan.machine.gpus,
        }
    }
}

/// What every generated file's header and node check (`templates/check-node.sh.j2`) show.
#[derive(Serialize)]
pub struct Header {
    /// The provenance header's lines (`provenance::Header::lines`).
    provenance: Vec<String>,
    /// How the script's usage and examples call it: `./NAME` (its `-o` file), else `./SCRIPT`.
    script: String,
    /// Every group's topology, joined.
    topology: String,
    /// The plan's warnings, listed at the top of the file (of a group, named by it).
    pub(super) warnings: Vec<String>,
    /// The known accelerators' PCI ids as sysfs spells them (`0x1002:0x740c`), which count as
    /// GPUs without a KFD node (`topology::devices::ACCELERATORS`).
    accelerators: Vec<String>,
}

/// The job's view for a launcher: `launcher` its job-wide parts, `group` its parts of a group
/// (given the group's plan and its plan id).
pub fn job_view<J, G>(
    job: &JobPlan,
    origin: &Origin,
    launcher: J,
    group: impl Fn(&Plan, &str) -> G,
) -> JobView<J, G> {
    let first = &job.groups[0];
    let grouped = job.shape == Shape::Groups;
    JobView {
        header: header(job, origin),
        embedded: embedded_plan(origin.plan_file),
        job_name: job.name.clone().unwrap_or_else(|| "numaplan".into()),
        port: first.port.to_string(),
        world_size: job.world_size,
        world_nodes: first.world_nodes(),
        grouped,
        mpirun_extra: first.mpirun.extra.clone(),
        mpirun_openmpi: first.mpirun.openmpi.clone(),
        mpirun_mpich: first.mpirun.mpich.clone(),
        launcher,
        groups: job
            .groups
            .iter()
            .zip(origin.plan_ids)
            .enumerate()
            .map(|(index, (plan, id))| GroupView {
                index,
                name: plan.group().map(|g| g.name.clone()).unwrap_or_default(),
                suffix: match grouped {
                    true => format!("_{index}"),
                    false => String::new(),
                },
                machine: Machine::of(plan),
                nodes: plan.nodes,
                ranks_per_node: plan.ranks_per_node,
                ranks: plan.ranks_in_all(),
                span: plan.place.span(plan.ranks_in_all()),
                first_node: plan.place.first_node,
                first_rank: plan.place.first_rank,
                command: plan.command.clone(),
                plan_id: id.clone(),
                master_addr: plan_master_addr(plan),
                launcher: group(plan, id),
            })
            .collect(),
    }
}

fn header(job: &JobPlan, origin: &Origin) -> Header {
    let topologies: Vec<&str> = job.groups.iter().map(|g| g.topology.as_str()).collect();
    Header {
        provenance: origin.header.lines(provenance::File::Script),
        script: format!("./{}", origin.script.unwrap_or("SCRIPT")),
        topology: topologies.join(", "),
        warnings: job.groups.iter().flat_map(Plan::listed_warnings).collect(),
        accelerators: crate::topology::devices::ACCELERATORS
            .iter()
            .map(|(vendor, device, _)| format!("0x{vendor:04x}:0x{device:04x}"))
            .collect(),
    }
}

/// A variable's name and value.
#[derive(Serialize)]
pub struct EnvVar {
    pub(super) name: String,
    pub(super) value: String,
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

fn embedded_plan(text: &str) -> EmbeddedPlan {
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

/// Where a one-node plan's ranks meet: the plan's MASTER_ADDR (`rendezvous.addr`, by default
/// 127.0.0.1).
fn plan_master_addr(plan: &Plan) -> String {
    plan.ranks
        .first()
        .and_then(|r| r.env.get(MASTER_ADDR).cloned())
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// The plan of a job that `kind` starts on nodes all alike: a job of one group.
pub fn one_node_shape(job: &JobPlan, kind: EmitKind) -> Result<&Plan, EmitError> {
    match (job.shape, job.groups.as_slice()) {
        (Shape::OneGroup, [plan]) => Ok(plan),
        _ => Err(EmitError::GroupsNotOneNode { kind: kind.name() }),
    }
}
