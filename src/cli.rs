//! Command-line syntax (clap). Doc comments are the help text; no logic lives here.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diag::render::MessageFormat;

/// numaplan: compile a job spec and a machine topology into a reviewable per-rank binding plan.
#[derive(Debug, Parser)]
#[command(name = "numaplan", version, propagate_version = true)]
pub struct Cli {
    /// How errors are printed on stderr.
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compile a job spec and a topology into a per-rank binding plan.
    Compile(CompileArgs),
    /// Print a machine's topology: packages, NUMA nodes, cores, L3 groups, GPUs and NICs.
    Topo(TopoArgs),
    /// Print a JSON schema of one of numaplan's file formats.
    Schema {
        #[arg(value_enum)]
        which: SchemaKind,
    },
    /// List error codes, or explain one (`numaplan codes E0302`).
    Codes { code: Option<String> },
}

#[derive(Debug, clap::Args)]
pub struct CompileArgs {
    /// The job spec (YAML).
    #[arg(value_name = "JOB.yaml")]
    pub spec: PathBuf,

    /// The machine to plan for: a fixture, an hwloc XML export, or `discover`. Overrides the
    /// spec's `topology:`; default: the spec's, else this machine.
    #[arg(long, value_name = "PATH|discover")]
    pub topology: Option<String>,

    /// Plan format: YAML for people and diffs, JSON for scripts.
    #[arg(long, value_enum, default_value_t = PlanFormat::Yaml)]
    pub format: PlanFormat,

    /// Write the plan to FILE (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Emit a launch script for the plan instead of the plan itself.
    #[arg(long, value_enum, value_name = "KIND")]
    pub emit: Option<crate::emit::EmitKind>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Yaml,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct TopoArgs {
    /// A topology file (numaplan YAML fixture or `lstopo --of xml` export, told apart by
    /// content), or `discover` for this machine (the default).
    #[arg(long, value_name = "PATH|discover", default_value = "discover")]
    pub topology: String,

    /// Output format: a readable summary, a numaplan fixture (YAML), or the same as JSON.
    #[arg(long, value_enum, default_value_t = TopoFormat::Text)]
    pub format: TopoFormat,

    /// Write to FILE (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopoFormat {
    Text,
    Yaml,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// The topology fixture format (schemas/topology.schema.json).
    Topology,
    /// The job spec format (schemas/job.schema.json).
    Job,
    /// The plan format (schemas/plan.schema.json).
    Plan,
}
