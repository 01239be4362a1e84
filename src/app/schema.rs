//! `numaplan schema`: the JSON schema of each file format and report, as committed under
//! `schemas/`.

use super::{bind, codes, exec, verify};
use crate::cli::SchemaKind;
use crate::plan_file;
use crate::topology::fixture;

/// The JSON schema of a file format, as committed under `schemas/`.
pub fn schema(which: SchemaKind) -> String {
    let schema = match which {
        SchemaKind::Topology => schemars::schema_for!(fixture::FixtureFile),
        SchemaKind::Job => schemars::schema_for!(crate::spec::raw::JobSpec),
        SchemaKind::Plan => schemars::schema_for!(plan_file::job::AnyPlanFile),
        SchemaKind::Explain => schemars::schema_for!(crate::review::groups::AnyExplain),
        SchemaKind::Diff => schemars::schema_for!(crate::review::groups::AnyDiff),
        SchemaKind::Bind => schemars::schema_for!(bind::Report),
        SchemaKind::Exec => schemars::schema_for!(exec::DryRun),
        SchemaKind::Verify => schemars::schema_for!(verify::VerifyReport),
        SchemaKind::Watch => schemars::schema_for!(verify::WatchLine),
        SchemaKind::Codes => schemars::schema_for!(codes::CodesReport),
    };
    let mut s = serde_json::to_string_pretty(&schema).expect("invariant: schemas serialize");
    s.push('\n');
    s
}
