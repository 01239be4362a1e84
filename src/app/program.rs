//! What `exec` and `bind` tell about the program a rank starts: where the rank finds its plan
//! again (`NUMAPLAN_PLAN`, for a nested `bind` and `numaplan.check_binding()`), and W0220 where
//! the program given on the command line is a serving engine the plan does not name.

use std::ffi::OsString;

use crate::diag::Warning;
use crate::exec::ExecError;
use crate::plan::Plan;
use crate::spec::Engine;
use crate::variables::NUMAPLAN_PLAN;

/// Where a started rank finds its plan again: the input as given, a file as an absolute path;
/// none for `env:NUMAPLAN_PLAN` (the rank inherits it) and standard input.
pub(super) fn plan_source(input: &str) -> Option<String> {
    match input {
        "-" => None,
        i if i == format!("env:{NUMAPLAN_PLAN}") => None,
        i if i.starts_with("env:") || i.starts_with("git:") => Some(i.to_string()),
        path => std::path::absolute(path)
            .ok()
            .map(|p| p.to_string_lossy().into_owned()),
    }
}

/// W0220 where `given`, a program given on the command line (not the plan's), is a serving
/// engine the plan does not name; W0224 where it passes the named engine's own binding flags;
/// W0225 where it is a framework that binds its workers, unless the ranks' environment (the
/// plan's, over this process's) turns that off.
pub(super) fn engine(plan: &Plan, given: &[OsString]) -> Vec<Warning> {
    let env = |var: &str| {
        plan.ranks
            .first()
            .and_then(|r| r.env.get(var).cloned())
            .or_else(|| std::env::var(var).ok())
    };
    crate::spec::engine::command_warnings(plan.engine, &words(given), &env)
}

/// W0220 alone, for `bind --all-ranks`: the server the `--emit sglang` script starts under it
/// is given the engine's binding flags by the script itself, from the plan.
pub(super) fn engine_unsaid(plan: &Plan, given: &[OsString]) -> Vec<Warning> {
    crate::spec::engine::unsaid(plan.engine, &words(given))
        .into_iter()
        .collect()
}

fn words(line: &[OsString]) -> Vec<String> {
    line.iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect()
}

/// Refused where `line`, the program every rank of this node would run (`exec`) or this rank
/// runs (`bind`), is the server of the plan's engine and the node has several ranks: each
/// would start a whole server. The engine's own launch (`--emit vllm|sglang`) starts one.
pub(super) fn one_server(
    plan: &Plan,
    line: &[OsString],
    command: &'static str,
) -> Result<(), ExecError> {
    let words = words(line);
    let engine = match plan.engine {
        Some(e @ (Engine::Vllm | Engine::Sglang)) => e,
        _ => return Ok(()),
    };
    if crate::spec::engine::runs(&words) != Some(engine) || plan.ranks_per_node < 2 {
        return Ok(());
    }
    Err(ExecError::ServerPerRank {
        engine: engine.title(),
        emit: engine.word(),
        command,
        ranks: plan.ranks_per_node,
    })
}
