//! The CPU side of the spec: the binding policy, its options (`cpu:`), and OpenMP's places
//! and binding (`openmp:`).

use super::{MAX_PER_NODE, Problems};
use crate::diag::{Warning, codes};
use crate::spec::raw::{self, JobSpec};
use crate::spec::{
    AffinityMode, Balance, CpuOption, CpuSpec, OpenMpSpec, Places, Policy, ProcBind, Scope, Smt,
    Threads, TorchMode,
};

pub(super) fn cpu_spec(raw: &JobSpec, p: &mut Problems, warnings: &mut Vec<Warning>) -> CpuSpec {
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
pub(super) fn openmp_spec(raw: &JobSpec, p: &mut Problems) -> Option<OpenMpSpec> {
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
