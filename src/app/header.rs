//! How a generated file names its inputs: the spec and topology paths as seen from the file's
//! directory, and the `numaplan compile` command that writes it again.

use std::path::Path;

use crate::cli::{CompileArgs, PlanFormat};
use crate::topology::Source;

/// The directory of the file `compile` writes (`None`: standard output). Readers of the plan
/// find its topology relative to the plan file, and so are the paths of its header: the same
/// plan compiled from another directory, or with `./` or an absolute `-o`, is the same file.
pub(super) fn plan_dir(args: &CompileArgs) -> Option<&Path> {
    match &args.output {
        Some(o) if o != Path::new("-") => Some(o.parent().unwrap_or(Path::new(""))),
        _ => None,
    }
}

/// The spec as the header names it: `seen_from` the plan's directory, or the name standard
/// input was read under (`spec_file`).
pub(super) fn spec_shown(args: &CompileArgs, spec_file: &str, plan_dir: Option<&Path>) -> String {
    match args.spec.as_path() == Path::new("-") {
        true => spec_file.to_string(),
        false => seen_from(&args.spec, plan_dir),
    }
}

/// A path as a generated file names it: relative to the file's directory `dir` when it has
/// one, else as typed (without a leading `./`).
fn seen_from(p: &Path, dir: Option<&Path>) -> String {
    match dir {
        Some(dir) => relative_to(p, dir),
        None => p.to_string_lossy().trim_start_matches("./").to_string(),
    }
}

/// The `numaplan compile` command that writes this output, as words (each is quoted where it
/// is shown), every path `seen_from` `dir` (the plan's directory for its header; `None` for
/// standard output and for a message, as typed): every option that changes the output, none
/// that does not (`--check`, `-q`).
pub(super) fn regenerate_words(args: &CompileArgs, dir: Option<&Path>) -> Vec<String> {
    let path = |p: &Path| match p == Path::new("-") {
        true => "-".to_string(),
        false => seen_from(p, dir),
    };
    let mut words = vec!["numaplan".to_string(), "compile".into(), path(&args.spec)];
    let mut option = |flag: &str, value: String| words.extend([flag.to_string(), value]);
    for o in &args.overrides.set {
        option("--set", o.text());
    }
    match &args.topology {
        Some(t @ Source::Discover) => option("--topology", t.to_string()),
        Some(Source::File(file)) => option("--topology", path(file)),
        None => {}
    }
    if let Some(kind) = args.emit {
        option("--emit", kind.name().to_string());
    }
    if args.format == PlanFormat::Json {
        option("--format", "json".into());
    }
    if let Some(r) = &args.schema_ref {
        option("--schema-ref", r.clone());
    }
    if let Some(o) = args.output.as_deref().filter(|o| *o != Path::new("-")) {
        option("-o", path(o));
    }
    words
}

/// `target` as seen from the directory `dir` (both relative to the current directory, or
/// absolute), in `/`-separated form: `../machines/dgx.yaml`.
pub(super) fn relative_to(target: &Path, dir: &Path) -> String {
    let absolute = |p: &Path| -> Vec<String> {
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut parts: Vec<String> = Vec::new();
        for c in full.components() {
            match c {
                std::path::Component::Normal(n) => parts.push(n.to_string_lossy().into_owned()),
                std::path::Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (t, d) = (absolute(target), absolute(dir));
    let common = t.iter().zip(&d).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".to_string(); d.len() - common];
    out.extend(t[common..].iter().cloned());
    out.join("/")
}
