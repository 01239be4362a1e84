//! What `exec` and `bind` tell about the program a rank starts: where the rank finds its plan
//! again (`NUMAPLAN_PLAN`, for a nested `bind` and `numaplan.check_binding()`), and W0220 where
//! the program given on the command line is a serving engine the plan does not name.

use std::ffi::OsString;

use crate::diag::Warning;
use crate::plan::Plan;
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
/// engine the plan does not name.
pub(super) fn engine(plan: &Plan, given: &[OsString]) -> Vec<Warning> {
    let words: Vec<String> = given
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    crate::spec::engine::unsaid(plan.engine, &words)
        .into_iter()
        .collect()
}
