//! `raw::JobSpec` -> `Spec`: parse CPU and node lists, apply defaults, and collect every problem
//! (with its path) before stopping. One function per part of the spec; the launchers' settings
//! (`rendezvous`, `slurm`, `mpirun`, `allow_warnings`) are in `launch.rs`.

mod launch;

use super::error::SpecProblem;
use super::raw::{self, JobSpec};
use super::{
    Balance, CpuOption, CpuSpec, GpuChoice, MemPolicy, MemoryNode, MemorySpec, NicPolicy,
    OpenMpSpec, Places, Policy, ProcBind, Scope, Smt, Spec, Threads, Visibility,
};
use crate::cpuset::{CpuSet, CpuSetParseError, MAX_CPU};
use crate::diag::{Warning, codes};
use crate::ids::{GpuIndex, NodeId};
use crate::topology::fixture::CpuList;

/// torchrun's default MASTER_PORT.
pub const DEFAULT_PORT: u16 = 29500;

/// The most ranks a node can run, and GPUs a rank can take: a node has at most `MAX_CPU` CPUs.
pub const MAX_PER_NODE: u32 = MAX_CPU;

/// The longest argument or environment entry (`NAME=value`) the kernel passes to a program:
/// `MAX_ARG_STRLEN` (32 pages of 4 KiB) less the terminating NUL.
pub const MAX_ARG_LEN: usize = 32 * 4096 - 1;

pub fn validate(raw: &JobSpec) -> Result<Spec, Vec<SpecProblem>> {
    let mut p = Problems::default();
    let counts = counts(raw, &mut p);
    let gpus = gpu_choice(raw, &mut p);
    let mut warnings = Vec::new();
    let cpu = cpu_spec(raw, &mut p, &mut warnings);
    let memory = memory_spec(raw, &mut p);
    let command = command(raw, &mut p);
    environment(raw, &mut p);
    let openmp = openmp_spec(raw, &mut p);
    let (port, master_addr) = launch::rendezvous(raw, &mut p);
    let slurm = launch::slurm(raw, &mut p);
    let mpirun = launch::mpirun(raw, &mut p);
    let allowed_warnings = launch::allowed_warnings(raw, &mut p);
    if !p.0.is_empty() {
        return Err(p.0);
    }
    Ok(Spec {
        name: raw.name.clone(),
        command,
        topology: raw.topology.clone(),
        nodes: counts.nodes,
        ranks_per_node: raw.ranks_per_node,
        gpus_asked: gpus_asked(raw),
        gpus,
        gpus_per_rank: counts.gpus_per_rank,
        visible: match raw.gpu.as_ref().and_then(|g| g.visible) {
            Some(raw::VisibleName::Own) => Visibility::Own,
            _ => Visibility::All,
        },
        cpu,
        memory,
        nic: match raw.nic.as_ref().and_then(|n| n.policy) {
            Some(raw::NicPolicyName::None) => NicPolicy::None,
            _ => NicPolicy::Closest,
        },
        env: raw.env.clone(),
        openmp,
        port,
        master_addr,
        slurm,
        mpirun,
        warnings,
        allowed_warnings,
    })
}

/// Every problem found, in the order found.
#[derive(Default)]
pub(super) struct Problems(Vec<SpecProblem>);

impl Problems {
    pub(super) fn add(&mut self, path: &str, message: String, label: &str, help: &str) {
        self.0.push(SpecProblem {
            path: path.to_string(),
            message,
            label: label.to_string(),
            help: help.to_string(),
        });
    }

    /// A CPU or node list, or `None` (with a problem) when it does not parse.
    fn cpulist(&mut self, path: &str, value: Option<&CpuList>) -> Option<CpuSet> {
        match value?.0.parse::<CpuSet>() {
            Ok(set) => Some(set),
            Err(e) => {
                self.add(
                    path,
                    format!("invalid CPU list `{}`: {e}", value?.0),
                    "not a cpulist",
                    "write a list such as \"0,64\" or \"0-23,48-71\"",
                );
                None
            }
        }
    }
}

struct Counts {
    nodes: u32,
    gpus_per_rank: u32,
}

/// `nodes`, `ranks_per_node`, `gpus_per_rank`: at least 1, and small enough that every count
/// numaplan derives from them (`WORLD_SIZE`, GPUs needed) stays exact.
fn counts(raw: &JobSpec, p: &mut Problems) -> Counts {
    let nodes = raw.nodes.unwrap_or(1);
    let gpus_per_rank = raw.gpus_per_rank.unwrap_or(1);
    for (path, value, what, help) in [
        ("nodes", Some(nodes), "nodes", "set `nodes: 1` or more"),
        (
            "ranks_per_node",
            raw.ranks_per_node,
            "ranks",
            "remove the key to get one rank per GPU",
        ),
        (
            "gpus_per_rank",
            Some(gpus_per_rank),
            "GPUs",
            "for CPU-only ranks write `gpus: none` instead",
        ),
    ] {
        if value == Some(0) {
            p.add(
                path,
                format!("`{path}` must be at least 1"),
                &format!("zero {what}"),
                help,
            );
        }
    }
    for (path, value, what, help) in [
        (
            "ranks_per_node",
            raw.ranks_per_node,
            "ranks",
            "a node runs at most one rank per CPU",
        ),
        (
            "gpus_per_rank",
            Some(gpus_per_rank),
            "GPUs",
            "a rank takes at most the GPUs of its node",
        ),
    ] {
        if value.is_some_and(|v| v > MAX_PER_NODE) {
            p.add(
                path,
                format!("`{path}` is larger than {MAX_PER_NODE}: more {what} than a node can have"),
                "too large",
                help,
            );
        }
    }
    let world = u64::from(nodes) * u64::from(raw.ranks_per_node.unwrap_or(1));
    if world > u64::from(u32::MAX) {
        p.add(
            "nodes",
            format!("{world} ranks in all (`nodes` x `ranks_per_node`) do not fit `WORLD_SIZE`"),
            "too many nodes",
            "run fewer nodes or fewer ranks per node",
        );
    }
    Counts {
        nodes,
        gpus_per_rank,
    }
}

/// The key that asks for GPUs outright: `gpus: all` or `gpus: visible` written out, or
/// `gpus_per_rank` (a count or a list asks for its own GPUs, and fails on its own).
fn gpus_asked(raw: &JobSpec) -> Option<&'static str> {
    use raw::{GpuKeyword, GpuSelection};
    match &raw.gpus {
        Some(GpuSelection::Keyword(GpuKeyword::All | GpuKeyword::Visible)) => Some("gpus"),
        Some(GpuSelection::Keyword(GpuKeyword::None)) | Some(GpuSelection::Count(0)) => None,
        _ => raw.gpus_per_rank.map(|_| "gpus_per_rank"),
    }
}

fn gpu_choice(raw: &JobSpec, p: &mut Problems) -> GpuChoice {
    match &raw.gpus {
        None | Some(raw::GpuSelection::Keyword(raw::GpuKeyword::All)) => GpuChoice::All,
        Some(raw::GpuSelection::Keyword(raw::GpuKeyword::None)) => GpuChoice::None,
        Some(raw::GpuSelection::Keyword(raw::GpuKeyword::Visible)) => GpuChoice::Visible(None),
        Some(raw::GpuSelection::Count(0)) => GpuChoice::None,
        Some(raw::GpuSelection::Count(n)) => GpuChoice::Count(*n),
        Some(raw::GpuSelection::List(list)) => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, g) in list.iter().enumerate() {
                if !seen.insert(*g) {
                    p.add(
                        &format!("gpus[{i}]"),
                        format!("GPU {g} is listed twice"),
                        "listed before",
                        "list each GPU once",
                    );
                }
            }
            if list.is_empty() {
                p.add(
                    "gpus",
                    "the GPU list is empty".into(),
                    "no GPUs",
                    "write `gpus: none` for CPU-only ranks",
                );
            }
            GpuChoice::List(list.iter().map(|g| GpuIndex(*g)).collect())
        }
    }
}

fn cpu_spec(raw: &JobSpec, p: &mut Problems, warnings: &mut Vec<Warning>) -> CpuSpec {
    let cpu = raw.cpu.clone().unwrap_or_default();
    let policy = policy(cpu.policy.unwrap_or(raw::PolicyName::Auto));
    // `reserve` is the deprecated spelling of `reserve_cpus`.
    let reserve_cpus = match (&cpu.reserve_cpus, &cpu.reserve) {
        (Some(_), Some(_)) => {
            p.add(
                "cpu.reserve",
                "`cpu.reserve` and `cpu.reserve_cpus` are both set".into(),
                "deprecated spelling of `reserve_cpus`",
                "remove `reserve`; `reserve_cpus` lists the CPUs",
            );
            None
        }
        (None, Some(list)) => {
            warnings.push(Warning::new(
                codes::W0202_DEPRECATED_KEY,
                format!(
                    "`cpu.reserve` is deprecated: it names CPUs (\"{}\"), not a count; write `cpu.reserve_cpus: \"{}\"`, or `cpu.reserve_cores: N` to keep the last N cores of every node free",
                    list.0, list.0
                ),
            ));
            p.cpulist("cpu.reserve", Some(list))
        }
        (list, None) => p.cpulist("cpu.reserve_cpus", list.as_ref()),
    };
    let allowed = p.cpulist("cpu.allowed", cpu.allowed.as_ref());
    // `single` and `single-unique` ignore the limits (a warning), so `min > max` is no error.
    let limits_apply = !matches!(policy, Policy::Single | Policy::SingleUnique);
    if let (Some(min), Some(max)) = (cpu.min_cores, cpu.max_cores)
        && min > max
        && limits_apply
    {
        p.add(
            "cpu.min_cores",
            format!("`min_cores` ({min}) is larger than `max_cores` ({max})"),
            "larger than max_cores",
            "lower `min_cores` or raise `max_cores`",
        );
    }
    if cpu.max_cores == Some(0) {
        p.add(
            "cpu.max_cores",
            "`max_cores` must be at least 1".into(),
            "zero cores",
            "remove `max_cores` for no limit",
        );
    }
    CpuSpec {
        policy,
        scope: match cpu.scope {
            Some(raw::ScopeName::Socket) => Scope::Socket,
            _ => Scope::Node,
        },
        smt: match cpu.smt {
            Some(raw::SmtName::One) => Smt::One,
            _ => Smt::All,
        },
        balance: if cpu.balanced.unwrap_or(true) {
            Balance::Balanced
        } else {
            Balance::Unbalanced
        },
        min_cores: cpu.min_cores.unwrap_or(1),
        max_cores: cpu.max_cores,
        reserve_cpus: reserve_cpus.unwrap_or_default(),
        reserve_cores: cpu.reserve_cores.unwrap_or(0),
        reserve_per_l3: cpu.reserve_per_l3.unwrap_or(0),
        allowed,
        helpers: cpu.helpers.unwrap_or(0),
        set: explicit_options(&cpu),
    }
}

/// The variables `openmp:` computes, which `env:` may not also set (OMP_NUM_THREADS may: the
/// places follow it).
const OPENMP_VARIABLES: [&str; 3] = ["OMP_PLACES", "OMP_PROC_BIND", "KMP_AFFINITY"];

/// `openmp:` with its defaults; the thread count from `env: {OMP_NUM_THREADS}` when set there.
fn openmp_spec(raw: &JobSpec, p: &mut Problems) -> Option<OpenMpSpec> {
    let o = raw.openmp.as_ref()?;
    let kmp_affinity = o.kmp_affinity.unwrap_or(true);
    for var in OPENMP_VARIABLES {
        if raw.env.contains_key(var) && (var != "KMP_AFFINITY" || kmp_affinity) {
            p.add(
                &format!("env.{var}"),
                format!("`env:` sets {var}, which `openmp:` computes"),
                "set twice",
                &format!("remove {var} from `env:`, or remove `openmp:` to place threads yourself"),
            );
        }
    }
    let from_env = raw.env.get("OMP_NUM_THREADS").map(|v| {
        // A list (`8,4`) sets nested levels; the outermost is the rank's.
        v.split(',')
            .next()
            .unwrap_or_default()
            .trim()
            .parse::<u32>()
    });
    let threads = match (o.threads, from_env) {
        (Some(_), Some(_)) => {
            p.add(
                "openmp.threads",
                "`openmp.threads` and `env: {OMP_NUM_THREADS}` both set the thread count".into(),
                "set twice",
                "keep one of them",
            );
            Threads::Cores
        }
        (None, Some(Ok(n))) if n > 0 => Threads::FromEnv(n),
        (None, Some(_)) => {
            p.add(
                "env.OMP_NUM_THREADS",
                "`OMP_NUM_THREADS` must start with a thread count for `openmp:` to place the threads".into(),
                "not a thread count",
                "write a number of threads, such as \"8\"",
            );
            Threads::Cores
        }
        (Some(raw::ThreadCount::Count(n)), None) => {
            if n == 0 || n > MAX_PER_NODE {
                p.add(
                    "openmp.threads",
                    format!("`openmp.threads` must be between 1 and {MAX_PER_NODE}"),
                    "out of range",
                    "write a thread count, `cores` or `cpus`",
                );
            }
            Threads::Count(n)
        }
        (Some(raw::ThreadCount::Keyword(raw::ThreadKeyword::Cpus)), None) => Threads::Cpus,
        (Some(raw::ThreadCount::Keyword(raw::ThreadKeyword::Cores)) | None, None) => Threads::Cores,
    };
    Some(OpenMpSpec {
        places: match o.places {
            Some(raw::PlacesName::Threads) => Places::Threads,
            Some(raw::PlacesName::None) => Places::None,
            _ => Places::Cores,
        },
        bind: match o.bind {
            Some(raw::BindName::Spread) => ProcBind::Spread,
            Some(raw::BindName::Master) => ProcBind::Master,
            Some(raw::BindName::None) => ProcBind::None,
            _ => ProcBind::Close,
        },
        threads,
        kmp_affinity,
    })
}

fn policy(name: raw::PolicyName) -> Policy {
    match name {
        raw::PolicyName::Auto => Policy::Auto,
        raw::PolicyName::Node => Policy::Node,
        raw::PolicyName::Socket => Policy::Socket,
        raw::PolicyName::Exclusive => Policy::Exclusive,
        raw::PolicyName::CoreComplex => Policy::CoreComplex,
        raw::PolicyName::All => Policy::All,
        raw::PolicyName::Single => Policy::Single,
        raw::PolicyName::SingleUnique => Policy::SingleUnique,
        raw::PolicyName::UniqueContiguous => Policy::UniqueContiguous,
        raw::PolicyName::UniqueInterleaved => Policy::UniqueInterleaved,
    }
}

/// The `cpu:` options the spec writes, whatever their value.
fn explicit_options(cpu: &raw::CpuOptions) -> Vec<CpuOption> {
    [
        (cpu.scope.is_some(), CpuOption::Scope),
        (cpu.smt.is_some(), CpuOption::Smt),
        (cpu.balanced.is_some(), CpuOption::Balanced),
        (cpu.min_cores.is_some(), CpuOption::MinCores),
        (cpu.max_cores.is_some(), CpuOption::MaxCores),
        (
            cpu.reserve_cpus.is_some() || cpu.reserve.is_some(),
            CpuOption::ReserveCpus,
        ),
        (cpu.reserve_cores.is_some(), CpuOption::ReserveCores),
        (cpu.reserve_per_l3.is_some(), CpuOption::ReservePerL3),
    ]
    .into_iter()
    .filter_map(|(set, option)| set.then_some(option))
    .collect()
}

fn memory_spec(raw: &JobSpec, p: &mut Problems) -> MemorySpec {
    let memory = raw.memory.clone().unwrap_or_default();
    let nodes = match &memory.nodes {
        None => None,
        Some(text) => match parse_memory_nodes(&text.0) {
            Ok(nodes) if nodes.is_empty() => {
                p.add(
                    "memory.nodes",
                    "the node list is empty".into(),
                    "no nodes",
                    "remove `nodes` to use each rank's home node",
                );
                None
            }
            Ok(nodes) => Some(nodes),
            Err(e) => {
                p.add(
                    "memory.nodes",
                    format!("invalid node list `{}`: {e}", text.0),
                    "not a node list",
                    "write nodes such as \"0\", \"0,2\", \"local\", \"local,local+8\" or [local, local+8]",
                );
                None
            }
        },
    };
    let policy = memory.policy.map(|p| match p {
        raw::MemPolicyName::Preferred => MemPolicy::Preferred,
        raw::MemPolicyName::Bind => MemPolicy::Bind,
        raw::MemPolicyName::Interleave => MemPolicy::Interleave,
        raw::MemPolicyName::None => MemPolicy::None,
    });
    if policy == Some(MemPolicy::None) && nodes.is_some() {
        p.add(
            "memory.nodes",
            "`memory.nodes` has no effect with `policy: none`".into(),
            "ignored",
            "remove `nodes`, or choose `preferred`, `bind` or `interleave`",
        );
    }
    MemorySpec { policy, nodes }
}

/// `memory.nodes`: comma-separated node ids and ranges (`0-3`), `local` and `local+N`.
fn parse_memory_nodes(text: &str) -> Result<Vec<MemoryNode>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let node = if let Some(rest) = item.strip_prefix("local") {
            let offset = match rest.strip_prefix('+') {
                None if rest.is_empty() => 0,
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n
                    .parse::<u32>()
                    .map_err(|_| format!("`{item}`: the offset is too large"))?,
                _ => return Err(format!("`{item}` is neither `local` nor `local+N`")),
            };
            vec![MemoryNode::Local(offset)]
        } else {
            item.parse::<CpuSet>()
                .map_err(|e| match e {
                    CpuSetParseError::NotANumber(word) => {
                        format!("`{word}` is not a NUMA node number, `local` or `local+N`")
                    }
                    CpuSetParseError::TooLarge(n) => format!("there is no NUMA node {n}"),
                    e => e.to_string(),
                })?
                .iter()
                .map(|n| MemoryNode::Node(NodeId(n)))
                .collect()
        };
        for n in node {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

fn command(raw: &JobSpec, p: &mut Problems) -> Vec<String> {
    let command = match &raw.command {
        None => Vec::new(),
        Some(raw::CommandLine::Words(words)) => words.clone(),
        Some(raw::CommandLine::Line(line)) => match super::words::split(line) {
            Ok(words) => words,
            Err(e) => {
                p.add(
                    "command",
                    format!("cannot split the command line into words: {e}"),
                    "not a command line",
                    "close the quote, or write the command as a list: [python, train.py]",
                );
                return Vec::new();
            }
        },
    };
    if let Some(i) = command.iter().position(|w| w.len() > MAX_ARG_LEN) {
        p.add(
            &format!("command[{i}]"),
            format!(
                "`command[{i}]` is {} bytes long; the kernel starts no program with an argument \
                 over 128 KiB ({MAX_ARG_LEN} bytes, MAX_ARG_STRLEN)",
                command[i].len()
            ),
            "too long",
            "pass the data in a file and its path as the argument",
        );
    }
    if let Some(i) = command.iter().position(|w| w.contains('\0')) {
        p.add(
            &format!("command[{i}]"),
            "the command contains a NUL byte, which no program argument can carry".into(),
            "NUL byte",
            "remove the NUL byte (`\\0`)",
        );
    }
    if raw.command.is_some() && command.is_empty() {
        p.add(
            "command",
            "`command` is empty".into(),
            "no program",
            "write the program and its arguments, e.g. [python, train.py]",
        );
    }
    command
}

fn environment(raw: &JobSpec, p: &mut Problems) {
    for (key, value) in &raw.env {
        let len = key.len() + 1 + value.len();
        if len > MAX_ARG_LEN {
            p.add(
                &format!("env.{key}"),
                format!(
                    "`{key}={{value}}` is {len} bytes long; the kernel starts no program with a \
                     variable over 128 KiB ({MAX_ARG_LEN} bytes, MAX_ARG_STRLEN)"
                ),
                "too long",
                "pass the data in a file and its path in the variable",
            );
        }
        if value.contains('\0') {
            p.add(
                &format!("env.{key}"),
                format!("the value of `{key}` contains a NUL byte, which no environment variable can carry"),
                "NUL byte",
                "remove the NUL byte (`\\0`)",
            );
        }
    }
    for key in raw.env.keys() {
        let valid = !key.is_empty()
            && !key.starts_with(|c: char| c.is_ascii_digit())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            p.add(
                &format!("env.{key}"),
                format!("`{key}` is not a valid environment variable name"),
                "invalid name",
                "use letters, digits and `_`, not starting with a digit",
            );
        }
    }
}
