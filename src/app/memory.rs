//! A memory policy this node refuses (a container's seccomp profile without `CAP_SYS_NICE`),
//! found before anything is bound or started: where a rank requires its policy (one the spec
//! wrote, or `memory.required: true`), the job stops with the refusal named; where none does
//! (the family's default, which no one asked for), the ranks run with their CPUs bound and no
//! memory policy, and W0217 says so, once per `bind` or `exec`.

use crate::diag::Warning;
use crate::diag::codes::W0217_MEMORY_POLICY_REFUSED;
use crate::diag::report::{Reporter, Voice};
use crate::error::Error;
use crate::exec::{self, ExecError, refusal_cause};
use crate::plan::{MemoryBinding, RankBinding};
use crate::spec::MemPolicy;

/// Probes the memory policy of `ranks`; on a refusal none of them requires, drops their
/// policies (they run with CPUs only), reports W0217 (fatal under `--deny-warnings`) and
/// returns `true`. `voice`: whether this process speaks for the node.
pub(crate) fn without_refused_policies(
    ranks: &mut [RankBinding],
    input: &str,
    allowed: &[crate::diag::Code],
    voice: Voice,
    warnings: &mut Reporter,
) -> Result<bool, Error> {
    let refused = match exec::memory_probe(ranks) {
        Ok(()) => return Ok(false),
        Err(e) => e,
    };
    let ExecError::Bind {
        call: Some(call),
        source,
        confinement,
        memory,
        ..
    } = &refused
    else {
        return Err(refused.into());
    };
    if ranks.iter().any(|r| r.memory.required) {
        return Err(refused.into());
    }
    let cause = match source.raw_os_error() {
        Some(libc::EPERM) => refusal_cause(*call, confinement),
        _ => "the node may not be allowed to this process (`cpuset.mems`)".into(),
    };
    // `Operation not permitted`, without Rust's ` (os error 1)`.
    let said = source.to_string();
    let said = said.split(" (os error").next().unwrap_or_default();
    let warning = Warning::new(
        W0217_MEMORY_POLICY_REFUSED,
        format!(
            "the ranks run with their CPUs bound and no memory policy: {} of {memory} was \
             refused ({said}), and the plan does not require it (the family's default policy, \
             or `memory.required: false`): {cause}",
            call.name()
        ),
    );
    warnings.plan_warnings_as(voice, input, &[warning], allowed)?;
    for r in ranks.iter_mut() {
        r.memory = MemoryBinding {
            policy: MemPolicy::None,
            nodes: Vec::new(),
            required: true,
        };
    }
    Ok(true)
}
