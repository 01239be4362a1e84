//! Which of numaplan's files a text is. Every numaplan file but the job spec names its kind on
//! its first key (`numaplan_plan: 1`, `numaplan_topology: 1`); an hwloc export is XML. A file of
//! one kind given where another is wanted is said to be what it is, with the command that takes
//! it, instead of failing on its first key as an unknown one.

use std::fmt;

use super::parse::has_top_level_key;

/// A kind of input file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    JobSpec,
    Plan,
    /// numaplan's topology fixture.
    Fixture,
    /// `lstopo --of xml`.
    HwlocXml,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::JobSpec => "a job spec",
            Kind::Plan => "a plan",
            Kind::Fixture => "a topology fixture",
            Kind::HwlocXml => "an hwloc topology (XML)",
        })
    }
}

/// The keys only a job spec has at its top (a fixture has `name`, `nodes` and `gpus` too).
const SPEC_ONLY: [&str; 14] = [
    "command",
    "topology",
    "ranks_per_node",
    "gpus_per_rank",
    "gpu",
    "cpu",
    "memory",
    "nic",
    "env",
    "openmp",
    "rendezvous",
    "slurm",
    "mpirun",
    "allow_warnings",
];

/// The kind `text` says it is: its kind key, or XML; `None` for a text that names no kind and
/// has none of a job spec's own keys (an empty or broken file is left to its parser).
pub fn kind_of(text: &str) -> Option<Kind> {
    if text.trim_start().starts_with('<') {
        return Some(Kind::HwlocXml);
    }
    for (key, kind) in [
        ("numaplan_plan", Kind::Plan),
        ("numaplan_topology", Kind::Fixture),
    ] {
        if names_first(text, key) {
            return Some(kind);
        }
    }
    SPEC_ONLY
        .iter()
        .any(|key| text.contains(key) && has_top_level_key(text, key) == Some(true))
        .then_some(Kind::JobSpec)
}

/// Whether `text`'s first key, in YAML or JSON, is `key` (after comments and blank lines),
/// else whether it has `key` at its top at all.
fn names_first(text: &str, key: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim_start)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != "---")
        .take(2)
        .any(|l| {
            let l = l.trim_start_matches('{').trim_start();
            l.starts_with(&format!("{key}:")) || l.starts_with(&format!("\"{key}\""))
        });
    first || (text.contains(key) && has_top_level_key(text, key) == Some(true))
}

/// A file of one kind where another is wanted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{file}` is {is}, not {}", match wanted {
    Kind::Fixture | Kind::HwlocXml => "a topology",
    _ => "a job spec",
})]
pub struct WrongKind {
    pub file: String,
    pub is: Kind,
    pub wanted: Kind,
    /// The job spec a plan was made from, from its header (`# spec: job.yaml`).
    pub spec: Option<String>,
}

impl WrongKind {
    /// `Err` when `text` names a kind other than `wanted` (`Fixture` and `HwlocXml` are both a
    /// topology where one is wanted).
    pub fn check(file: &str, text: &str, wanted: Kind) -> Result<(), WrongKind> {
        let topology = |k: Kind| matches!(k, Kind::Fixture | Kind::HwlocXml);
        match kind_of(text) {
            Some(is) if is != wanted && !(topology(is) && topology(wanted)) => Err(WrongKind {
                file: file.to_string(),
                is,
                wanted,
                spec: text
                    .lines()
                    .take(12)
                    .find_map(|l| l.strip_prefix("# spec: "))
                    .map(|s| s.trim().to_string()),
            }),
            _ => Ok(()),
        }
    }

    /// What to do instead: the command that takes such a file.
    pub fn help(&self) -> String {
        let file = crate::shell::quote(self.file.clone());
        match (self.is, self.wanted) {
            (Kind::Plan, Kind::JobSpec) => format!(
                "a plan is compiled already: `numaplan exec`, `bind`, `verify`, `explain` and \
                 `diff` take it as it is; `compile` takes the job spec it was made from{}",
                match &self.spec {
                    Some(spec) => format!(" (`numaplan compile {spec}`, its header says)"),
                    None => String::new(),
                }
            ),
            (Kind::Fixture | Kind::HwlocXml, _) => format!(
                "it describes a machine: give it as `--topology {file}` beside a job spec (or as \
                 the spec's `topology:`); `numaplan topo --topology {file}` shows it"
            ),
            (Kind::Plan, _) => format!(
                "`--topology` takes the machine a plan was made for (the file its `topology:` \
                 names); `numaplan explain {file}` draws the plan on it"
            ),
            (Kind::JobSpec, _) => format!(
                "`--topology` takes a fixture (`numaplan topo > machine.yaml`) or an hwloc XML \
                 (`lstopo --of xml`); a job spec comes first: `numaplan compile {file}`"
            ),
        }
    }
}
