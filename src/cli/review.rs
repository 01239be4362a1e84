//! The commands that review plans: `diff` and `explain`.

use std::path::PathBuf;

use clap::ValueEnum;

use super::{ReportFormat, SpecOverrides};

/// Where a plan comes from: a plan file, a job spec (compiled on the fly), or `git:REV:PATH`
/// for either one in git history.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The plan before: a plan file, a job spec, or `git:REV:PATH` (e.g. `git:HEAD:plan.yaml`).
    #[arg(value_name = "OLD", value_hint = clap::ValueHint::FilePath)]
    pub old: String,

    /// The plan after, in the same forms.
    #[arg(value_name = "NEW", value_hint = clap::ValueHint::FilePath)]
    pub new: String,

    /// The machine of both sides, for cores, L3 groups and quality figures (a job spec names its
    /// own; a plan file does not).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    /// The machine of OLD only (overrides `--topology`).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub old_topology: Option<crate::topology::Source>,

    /// The machine of NEW only (overrides `--topology`).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub new_topology: Option<crate::topology::Source>,

    /// `--set KEY=VALUE` applies to NEW when it is a job spec: `diff job.yaml job.yaml --set
    /// cpu.policy=exclusive` shows what the change would do.
    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Text for people, or JSON for bots (`"numaplan_diff": 1`, schemas/diff.schema.json).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,

    /// Exit 1 when the plans differ, 0 when they do not (as `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// A job spec, a plan file (its machine: `--topology`, else the topology file the plan
    /// names), or `git:REV:PATH`.
    #[arg(value_name = "JOB.yaml|PLAN.yaml", value_hint = clap::ValueHint::FilePath)]
    pub input: String,

    /// The machine (a job spec names its own; a plan file needs this).
    #[arg(long, value_name = "PATH|discover", value_hint = clap::ValueHint::FilePath)]
    pub topology: Option<crate::topology::Source>,

    #[command(flatten)]
    pub overrides: SpecOverrides,

    /// Text for the terminal, an SVG picture for a pull request or docs, JSON for scripts
    /// (`"numaplan_explain": 1`, schemas/explain.schema.json), or mpibind's own verbose lines.
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,

    /// Colour the text: `auto` colours a terminal unless `NO_COLOR` is set.
    #[arg(long, value_enum, default_value_t = ColourChoice::Auto)]
    pub color: ColourChoice,

    /// Write to FILE (atomically) instead of standard output (`-`).
    #[arg(short, long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub output: Option<PathBuf>,

    /// Draw a plan on a topology whose fingerprint differs from the plan's, under a banner.
    #[arg(long)]
    pub force: bool,

    /// Of a plan of several groups (`groups:`), explain this group only (default: every
    /// group, one after the other; an SVG picture needs one).
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Text,
    Svg,
    Json,
    /// mpibind's verbose lines (`mpibind: task   0 nths  4 gpus 0 cpus 0-3`), to diff
    /// against `flux run -o mpibind=verbose`.
    Mpibind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColourChoice {
    Auto,
    Always,
    Never,
}
