//! docs/policies.md, "Options a policy ignores": every `cpu:` option the spec sets that its policy
//! does not use becomes a warning, so that a spec never changes meaning silently.

use crate::diag::{Warning, codes};
use crate::spec::AffinityMode::{All, Single, SingleUnique};
use crate::spec::{CpuOption, CpuSpec, Family, Policy};

/// One warning per option the spec sets and the policy ignores (in `CpuOption` order).
pub fn ignored_options(cpu: &CpuSpec) -> Vec<Warning> {
    cpu.set
        .iter()
        .filter_map(|&option| {
            let why = why_ignored(cpu.policy, option)?;
            Some(Warning::new(
                codes::W0204_OPTION_IGNORED,
                format!(
                    "{} is ignored by policy {} ({why}); {}",
                    option.key(),
                    cpu.policy.name(),
                    hint(cpu.policy, option)
                ),
            ))
        })
        .collect()
}

/// Why `policy` does not use `option`, or `None` when it does.
fn why_ignored(policy: Policy, option: CpuOption) -> Option<String> {
    use CpuOption::*;
    let reserve = matches!(option, ReserveCpus | ReserveCores | ReservePerL3);
    match policy.family() {
        Family::Auto => None,
        Family::PyTorch if reserve => {
            Some(format!("PyTorch's {} has no reserved cores", policy.name()))
        }
        Family::PyTorch => Some(format!(
            "`torchrun --numa-binding={}` has no such setting",
            policy.name()
        )),
        Family::Mpibind => match option {
            Smt | GpuOptim => None,
            _ => Some("mpibind has no such setting".into()),
        },
        Family::GpuAffinity if reserve => Some("gpu_affinity has no reserved cores".into()),
        Family::GpuAffinity => match (policy, option) {
            (Policy::GpuAffinity(Single | SingleUnique), MinCores | MaxCores | Balanced) => {
                Some("it always gives a GPU one core".into())
            }
            (Policy::GpuAffinity(Single | SingleUnique), Scope) => {
                Some("the first core of a GPU's list is the same under either scope".into())
            }
            (Policy::GpuAffinity(All), Balanced) => {
                Some("gpu_affinity balances only the unique-* modes".into())
            }
            _ => None,
        },
    }
}

fn hint(policy: Policy, option: CpuOption) -> &'static str {
    match (policy.family(), option) {
        (Family::GpuAffinity, CpuOption::MinCores | CpuOption::MaxCores) => {
            "use unique-contiguous for several cores per GPU, or remove it"
        }
        (Family::GpuAffinity, CpuOption::Balanced | CpuOption::Scope) => "remove it",
        (Family::Mpibind, _) => "remove it, or use policy auto, which honours it",
        _ => "use policy auto, which honours it",
    }
}
