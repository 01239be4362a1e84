//! One function per subcommand: load, then print or write. Returns data to `main`, never prints
//! errors itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::{Cli, Command, SchemaKind, TopoArgs, TopoFormat};
use crate::diag::codes;
use crate::error::Error;
use crate::output::write_atomic;
use crate::topology::{self, Topology, fixture, summary};

pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<(), Error> {
    match cli.command {
        Command::Topo(args) => topo(&args, stdout),
        Command::Schema { which } => emit(stdout, None, &schema(which)),
        Command::Codes { code } => codes_cmd(code.as_deref(), stdout),
    }
}

/// Loads the topology a `--topology` value names.
pub fn load_topology(spec: &str) -> Result<Topology, Error> {
    Ok(match spec {
        "discover" => topology::hwloc::discover()?,
        path => topology::load_file(Path::new(path))?,
    })
}

fn topo(args: &TopoArgs, stdout: &mut dyn Write) -> Result<(), Error> {
    let t = load_topology(&args.topology)?;
    let text = match args.format {
        TopoFormat::Text => summary::render(&t),
        TopoFormat::Yaml => fixture::dump(&t),
        TopoFormat::Json => fixture::dump_json(&t),
    };
    emit(stdout, args.output.as_deref(), &text)
}

/// The JSON schema of a file format, as committed under `schemas/`.
pub fn schema(which: SchemaKind) -> String {
    let schema = match which {
        SchemaKind::Topology => schemars::schema_for!(fixture::FixtureFile),
    };
    let mut s = serde_json::to_string_pretty(&schema).expect("invariant: schemas serialize");
    s.push('\n');
    s
}

fn codes_cmd(code: Option<&str>, stdout: &mut dyn Write) -> Result<(), Error> {
    let text = match code {
        Some(c) => {
            let explanation = codes::explain(c).ok_or_else(|| Error::UnknownCode(c.to_string()))?;
            format!("{}: {explanation}\n", c.to_ascii_uppercase())
        }
        None => codes::ALL
            .iter()
            .map(|(c, text)| format!("{c}  {}\n", text.split(". ").next().unwrap_or(text)))
            .collect(),
    };
    emit(stdout, None, &text)
}

fn emit(stdout: &mut dyn Write, output: Option<&Path>, text: &str) -> Result<(), Error> {
    match output {
        Some(path) => write_atomic(path, text.as_bytes()).map_err(|source| Error::Output {
            path: PathBuf::from(path),
            source,
        }),
        None => stdout.write_all(text.as_bytes()).map_err(Error::Stdout),
    }
}
