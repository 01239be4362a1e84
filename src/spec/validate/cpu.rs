//! The CPU side of the spec: the binding policy, its options (`cpu:`), and OpenMP's places
//! and binding (`openmp:`).

use super::{MAX_PER_NODE, Problems};
use crate::cpuset::CpuSet;
use crate::diag::{Warning, codes};
use crate::ids::NodeId;
use crate::spec::raw::{self, JobSpec};
use crate::spec::{
    AffinityMode, Balance, CpuOption, CpuSpec, MpibindOptions, OpenMpSpec, Places, Policy,
    ProcBind, Scope, Smt, Threads, TorchMode,
};
use crate::variables::{KMP_AFFINITY, OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND, omp_threads};

pub(super) fn cpu_spec(raw: &JobSpec, p: &mut Problems, warnings: &mut Vec<Warning>) -> CpuSpec {
    let mut cpu = raw.cpu.clone().unwrap_or_default();
    let policy = policy(cpu.policy.unwrap_or(raw::PolicyName::Auto));
    // mpibind's `smt` 0 is its automatic choice (docs/mpibind.md), as if the key were absent.
    if policy == Policy::Mpibind && matches!(cpu.smt, Some(raw::SmtValue::Count(0))) {
        cpu.smt = None;
    }
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
    let limits_apply = !matches!(
        policy,
        Policy::GpuAffinity(AffinityMode::Single | AffinityMode::SingleUnique)
    );
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
        smt: smt(cpu.smt, p),
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
        allowed_nodes: allowed_nodes(&cpu, policy, p),
        allowed,
        mpibind: mpibind_options(&cpu, policy, p),
        helpers: cpu.helpers.unwrap_or(0),
        set: explicit_options(&cpu),
    }
}

fn smt(value: Option<raw::SmtValue>, p: &mut Problems) -> Smt {
    match value {
        Some(raw::SmtValue::Keyword(raw::SmtName::One)) => Smt::One,
        Some(raw::SmtValue::Keyword(raw::SmtName::All)) | None => Smt::All,
        Some(raw::SmtValue::Count(0)) => {
            p.add(
                "cpu.smt",
                "`cpu.smt` must be at least 1 hardware thread per core".into(),
                "zero threads per core",
                "write `all`, `one` or a number of threads per core (under mpibind, 0 or no \
                 `smt` is mpibind's own choice)",
            );
            Smt::All
        }
        Some(raw::SmtValue::Count(n)) => Smt::Count(n),
    }
}

/// `cpu.allowed_nodes` as node ids; under mpibind not together with `cpu.allowed` (mpibind
/// takes one restriction).
fn allowed_nodes(cpu: &raw::CpuOptions, policy: Policy, p: &mut Problems) -> Option<Vec<NodeId>> {
    let list = cpu.allowed_nodes.as_ref()?;
    if policy == Policy::Mpibind && cpu.allowed.is_some() {
        p.add(
            "cpu.allowed_nodes",
            "`cpu.allowed` and `cpu.allowed_nodes` are both set: mpibind restricts to CPUs or to \
             NUMA nodes, not both"
                .into(),
            "second restriction",
            "keep one of them",
        );
    }
    match list.0.parse::<CpuSet>() {
        Ok(set) if !set.is_empty() => Some(set.iter().map(NodeId).collect()),
        Ok(_) => {
            p.add(
                "cpu.allowed_nodes",
                "`cpu.allowed_nodes` names no NUMA node".into(),
                "empty list",
                "write node ids such as \"0-1\", or remove the key",
            );
            None
        }
        Err(e) => {
            p.add(
                "cpu.allowed_nodes",
                format!("invalid NUMA node list `{}`: {e}", list.0),
                "not a node list",
                "write node ids such as \"0\" or \"0-1,4\"",
            );
            None
        }
    }
}

/// `cpu.greedy`, `cpu.gpu_optim` and `cpu.threads`: mpibind's knobs, which only `policy:
/// mpibind` reads (elsewhere an error, never a silent no-op).
fn mpibind_options(cpu: &raw::CpuOptions, policy: Policy, p: &mut Problems) -> MpibindOptions {
    if policy != Policy::Mpibind {
        for (key, set) in [
            ("cpu.greedy", cpu.greedy.is_some()),
            ("cpu.gpu_optim", cpu.gpu_optim.is_some()),
            ("cpu.threads", cpu.threads.is_some()),
        ] {
            if set {
                p.add(
                    key,
                    format!(
                        "`{key}` is a setting of policy mpibind, not of {}",
                        policy.name()
                    ),
                    "mpibind only",
                    "remove it, or write `policy: mpibind`",
                );
            }
        }
    }
    if cpu.threads.is_some_and(|t| t == 0 || t > MAX_PER_NODE) {
        p.add(
            "cpu.threads",
            format!("`cpu.threads` must be between 1 and {MAX_PER_NODE}"),
            "out of range",
            "leave it out for mpibind's own choice",
        );
    }
    MpibindOptions {
        greedy: cpu.greedy.unwrap_or(true),
        gpu_optim: cpu.gpu_optim.unwrap_or(true),
        threads: cpu.threads.filter(|&t| t > 0),
    }
}

/// What mpibind decides itself and a spec may not also say: GPUs per rank, OpenMP's places,
/// helper cores.
pub(super) fn mpibind_refusals(raw: &JobSpec, p: &mut Problems) {
    let policy = raw.cpu.as_ref().and_then(|c| c.policy);
    if policy != Some(raw::PolicyName::Mpibind) {
        return;
    }
    let helpers = raw
        .cpu
        .as_ref()
        .and_then(|c| c.helpers)
        .is_some_and(|h| h > 0);
    for (key, set, what) in [
        (
            "gpus_per_rank",
            raw.gpus_per_rank.is_some(),
            "how many GPUs each task gets",
        ),
        (
            "openmp",
            raw.openmp.is_some(),
            "OMP_NUM_THREADS, OMP_PLACES and OMP_PROC_BIND",
        ),
        ("cpu.helpers", helpers, "every CPU of a task"),
    ] {
        if set {
            p.add(
                key,
                format!("`{key}` cannot be used with policy mpibind: mpibind decides {what}"),
                "decided by mpibind",
                "remove it; `env:` may still override a variable of the plan",
            );
        }
    }
}

/// The variables `openmp:` computes, which `env:` may not also set (OMP_NUM_THREADS may: the
/// places follow it).
const OPENMP_VARIABLES: [&str; 3] = [OMP_PLACES, OMP_PROC_BIND, KMP_AFFINITY];

/// `openmp:` with its defaults; the thread count from `env: {OMP_NUM_THREADS}` when set there.
pub(super) fn openmp_spec(raw: &JobSpec, p: &mut Problems) -> Option<OpenMpSpec> {
    let o = raw.openmp.as_ref()?;
    let kmp_affinity = o.kmp_affinity.unwrap_or(true);
    for var in OPENMP_VARIABLES {
        if raw.env.contains_key(var) && (var != KMP_AFFINITY || kmp_affinity) {
            p.add(
                &format!("env.{var}"),
                format!("`env:` sets {var}, which `openmp:` computes"),
                "set twice",
                &format!("remove {var} from `env:`, or remove `openmp:` to place threads yourself"),
            );
        }
    }
    let from_env = raw.env.get(OMP_NUM_THREADS).map(|v| omp_threads(v));
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
        (None, Some(Some(n))) if n > 0 => Threads::FromEnv(n),
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
    use raw::PolicyName as P;
    match name {
        P::Auto => Policy::Auto,
        P::Node => Policy::Torch(TorchMode::Node),
        P::Socket => Policy::Torch(TorchMode::Socket),
        P::Exclusive => Policy::Torch(TorchMode::Exclusive),
        P::CoreComplex => Policy::Torch(TorchMode::CoreComplex),
        P::All => Policy::GpuAffinity(AffinityMode::All),
        P::Single => Policy::GpuAffinity(AffinityMode::Single),
        P::SingleUnique => Policy::GpuAffinity(AffinityMode::SingleUnique),
        P::UniqueContiguous => Policy::GpuAffinity(AffinityMode::UniqueContiguous),
        P::UniqueInterleaved => Policy::GpuAffinity(AffinityMode::UniqueInterleaved),
        P::Mpibind => Policy::Mpibind,
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
        (cpu.gpu_optim.is_some(), CpuOption::GpuOptim),
    ]
    .into_iter()
    .filter_map(|(set, option)| set.then_some(option))
    .collect()
}
