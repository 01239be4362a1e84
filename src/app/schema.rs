//! `numaplan schema`: the JSON schema of each file format and report, as committed under
//! `schemas/`.

use super::{bind, codes, exec, verify};
use crate::cli::SchemaKind;
use crate::plan_file;
use crate::topology::fixture;

use serde_json::{Map, Value};

/// The JSON schema of a file format, as committed under `schemas/`.
pub fn schema(which: SchemaKind) -> String {
    use crate::review::{diff, explain};
    let schema = match which {
        SchemaKind::Topology => value(schemars::schema_for!(fixture::FixtureFile)),
        SchemaKind::Job => value(schemars::schema_for!(crate::spec::raw::JobSpec)),
        SchemaKind::Plan => either(
            "numaplan plan",
            "A plan file: of a job of one group (`PlanFile`), or of several groups (`GroupedPlanFile`, \
             which has `groups`).",
            (
                "PlanFile",
                value(schemars::schema_for!(plan_file::PlanFile)),
            ),
            (
                "GroupedPlanFile",
                value(schemars::schema_for!(plan_file::job::GroupedPlanFile)),
            ),
        ),
        SchemaKind::Explain => either(
            "numaplan explain",
            "`explain --format json`: the report of a plan of one group (`Report`), or of several \
             (`GroupedExplain`, which has `groups`).",
            ("Report", value(schemars::schema_for!(explain::Report))),
            (
                "GroupedExplain",
                value(schemars::schema_for!(explain::GroupedExplain)),
            ),
        ),
        SchemaKind::Diff => either(
            "numaplan diff",
            "`diff --format json`: the diff of two plans of one group (`Report`), or of plans of \
             several (`GroupedReport`, which has `groups`).",
            ("Report", value(schemars::schema_for!(diff::Report))),
            (
                "GroupedReport",
                value(schemars::schema_for!(diff::GroupedReport)),
            ),
        ),
        SchemaKind::Bind => value(schemars::schema_for!(bind::Report)),
        SchemaKind::Exec => value(schemars::schema_for!(exec::DryRun)),
        SchemaKind::Verify => value(schemars::schema_for!(verify::VerifyReport)),
        SchemaKind::Watch => value(schemars::schema_for!(verify::WatchLine)),
        SchemaKind::Codes => value(schemars::schema_for!(codes::CodesReport)),
    };
    let schema = schemars::Schema::try_from(schema).expect("invariant: a schema is an object");
    let mut s = serde_json::to_string_pretty(&schema).expect("invariant: schemas serialize");
    s.push('\n');
    s
}

fn value(schema: schemars::Schema) -> Value {
    schema.to_value()
}

/// The schema of a file or report of two shapes: `one`'s, or where it has `groups`, the
/// grouped one's, each a definition (`$defs`) under its type's name. Chosen by
/// `if`/`then`/`else` on that key, not `anyOf`: an editor checks a document against the one
/// shape it has and says what is wrong with it, instead of that it matches neither.
fn either(title: &str, description: &str, one: (&str, Value), grouped: (&str, Value)) -> Value {
    let mut defs = Map::new();
    let mut refs = Vec::new();
    for (name, mut shape) in [one, grouped] {
        let Some(object) = shape.as_object_mut() else {
            continue;
        };
        if let Some(Value::Object(inner)) = object.remove("$defs") {
            defs.extend(inner);
        }
        object.remove("$schema");
        refs.push(serde_json::json!({ "$ref": format!("#/$defs/{name}") }));
        defs.insert(name.to_string(), Value::Object(object.clone()));
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": description,
        "if": { "required": ["groups"] },
        "then": refs[1],
        "else": refs[0],
        "$defs": defs,
    })
}
