//! One file per subcommand, and this front door that routes each command to it. Commands return
//! data to `main` and never print errors themselves: `compile.rs` (with `header.rs`, how
//! generated files name their inputs), `exec/`, `bind.rs`, `verify/`, `review.rs` (`diff`,
//! `explain`), `topo.rs`, `schema.rs`, `codes.rs`, `version.rs` and `docs.rs` (completions, the
//! manual page); `input/` reads what a command is given (a spec planned on its machines
//! included), `node.rs` this node's facts, `program.rs` what a started rank's program is told,
//! `write.rs` writes what it makes.

mod bind;
mod bind_all;
mod codes;
mod compile;
mod docs;
mod exec;
mod header;
mod input;
mod memory;
mod node;
mod pod;
mod program;
mod review;
mod schema;
mod topo;
mod verify;
mod version;
mod write;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::diag::report::Reporter;
use crate::error::Error;
use write::emit;

pub use schema::schema;

/// Runs a command: its data goes to `stdout`, the plan's warnings to `warnings`.
pub fn run(cli: Cli, stdout: &mut dyn Write, warnings: &mut Reporter) -> Result<(), Error> {
    let command = match cli.command {
        Some(command) if !cli.version => command,
        // `--version` (main refuses no subcommand without it).
        _ => return emit(stdout, None, &version::version(cli.verbose)),
    };
    match command {
        Command::Version => emit(stdout, None, &version::version(true)),
        Command::Completions { shell } => emit(stdout, None, &docs::completions(shell)),
        Command::Man { output } => emit(stdout, output.as_deref(), &docs::man()),
        Command::Compile(args) => compile::compile(&args, stdout, warnings),
        Command::Exec(args) => exec::exec(&args, stdout, warnings),
        Command::Bind(args) if args.all_ranks => bind_all::bind_all(&args, stdout, warnings),
        Command::Bind(args) => bind::bind(&args, stdout, warnings),
        Command::Verify(args) => verify::verify(&args, stdout),
        Command::Diff(args) => review::diff(&args, stdout),
        Command::Explain(args) => review::explain(&args, stdout),
        Command::Topo(args) => topo::topo(&args, stdout),
        Command::Schema { which, output } => emit(stdout, output.as_deref(), &schema(which)),
        Command::Codes { code, format } => codes::codes_cmd(code.as_deref(), format, stdout),
    }
}
