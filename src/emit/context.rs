//! Flat, pre-formatted views of a plan for the templates, which hold no logic beyond for/if.

use serde::Serialize;

use crate::ids::node_list;
use crate::plan::Plan;
use crate::provenance;
use crate::spec::MemPolicy;
use crate::variables::MASTER_ADDR;

/// What the header of a generated file records, and the plan it embeds.
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    pub header: provenance::Header<'a>,
    /// The plan file (YAML), which `sbatch-exec` embeds for `numaplan exec` on every node.
    pub plan_file: &'a str,
    /// The script's file name (`-o`), for its usage line; `None` on standard output.
    pub script: Option<&'a str>,
    /// The plan's identity (`plan_file::id`), which every rank's mark `NUMAPLAN_BOUND` carries.
    pub plan_id: &'a str,
    /// The machine's RDMA NICs (InfiniBand, RoCE) by name, with their PCI addresses: what
    /// vLLM maps a GPU's NIC by (`VLLM_GPU_NIC_PCIE_MAPPING`).
    pub rdma_nics: &'a std::collections::BTreeMap<String, crate::pci_addr::PciAddr>,
}

/// What every generated file's header and node check (`templates/check-node.sh.j2`) show.
#[derive(Serialize)]
pub struct Header {
    /// The provenance header's lines (`provenance::Header::lines`).
    provenance: Vec<String>,
    /// How the script's usage and examples call it: `./NAME` (its `-o` file), else `./SCRIPT`.
    script: String,
    pub(super) topology: String,
    /// The plan's warnings, listed at the top of the file.
    pub(super) warnings: Vec<String>,
    /// What each rank's mark starts with (`NUMAPLAN_BOUND=PLAN_ID:LOCAL_RANK`).
    plan_id: String,
    /// The node check compares with the shell variables `expect_cpus`... that each group's
    /// code sets (a plan of several groups), rather than with the plan's machine below.
    pub(super) by_group: bool,
    /// The plan's machine shape, which a node must have to start the ranks.
    expect_cpus: usize,
    expect_nodes: usize,
    expect_gpus: usize,
    /// The known accelerators' PCI ids as sysfs spells them (`0x1002:0x740c`), which count as
    /// GPUs without a KFD node (`topology::devices::ACCELERATORS`).
    accelerators: Vec<String>,
}

pub(super) fn header(plan: &Plan, origin: &Origin) -> Header {
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
        by_group: false,
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
    /// The plan, which every rank finds in `NUMAPLAN_PLAN` (`numaplan.check_binding()`).
    #[serde(flatten)]
    embedded: EmbeddedPlan,
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
        embedded: embedded_plan(origin),
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

pub(super) fn embedded_plan(origin: &Origin) -> EmbeddedPlan {
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
pub(super) fn plan_master_addr(plan: &Plan) -> String {
    plan.ranks
        .first()
        .and_then(|r| r.env.get(MASTER_ADDR).cloned())
        .unwrap_or_else(|| "127.0.0.1".into())
}
