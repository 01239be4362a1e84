//! Options several commands share: `--set KEY=VALUE` on a job spec, and the text or JSON of a
//! report.

use clap::ValueEnum;

use crate::yaml::Override;

/// `--set KEY=VALUE`, shared by the commands that read a job spec.
#[derive(Debug, Default, clap::Args)]
pub struct SpecOverrides {
    /// Override a key of the job spec (repeatable; dotted keys: `cpu.policy=exclusive`,
    /// `memory.policy=bind`, `gpus=4`, `env.NCCL_DEBUG=INFO`; a group's by name or index:
    /// `groups.rollout.gpus=4`, `groups[1].gpus=4`); the value is YAML.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<Override>,
}

pub fn key_value(arg: &str) -> Result<Override, String> {
    match arg.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok(Override::set(key, value)),
        _ => Err(format!(
            "`{arg}` is not KEY=VALUE (e.g. `cpu.policy=exclusive`)"
        )),
    }
}

/// `--format` of a report: text for people, JSON for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}
