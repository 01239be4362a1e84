//! The binary: parse the command line, run it, render any error as a diagnostic, exit. The only
//! place that prints errors or exits.

use std::io::Write;
use std::process::ExitCode;

use numaplan::diag::render::{MessageFormat, render};
use numaplan::diag::report::{Reporter, WarningMode};

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "error[internal]: numaplan crashed: {info}\n = help: this is a bug in numaplan; please file an issue with the command and its input files"
        );
    }));
    // A plain `bind` line is read without clap (per-rank start-up cost; see argv.rs).
    let cli = match numaplan::argv::parse() {
        Ok(cli) if cli.command.is_none() && !cli.version => {
            return usage_error(numaplan::argv::command().error(
                clap::error::ErrorKind::MissingSubcommand,
                "a subcommand is required (or --version)",
            ));
        }
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let format = cli.message_format;
    let mode = match (cli.deny_warnings, cli.quiet) {
        (true, true) => WarningMode::DenyQuietly,
        (true, false) => WarningMode::Deny,
        (false, true) => WarningMode::Quiet,
        (false, false) => WarningMode::Show,
    };
    // Not locked for the whole run: `exec` relays ranks' output to stdout from other threads.
    let mut stdout = std::io::stdout();
    let mut warnings_out = std::io::stderr();
    let mut reporter = Reporter::new(&mut warnings_out, format, mode).allowing(cli.allow.clone());
    match numaplan::app::run(cli, &mut stdout, &mut reporter) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = stdout.flush();
            let mut stderr = std::io::stderr().lock();
            for d in e.diagnostics() {
                let _ = stderr.write_all(render(&d, format).as_bytes());
            }
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// A command line numaplan does not take: clap's message (help and version are shown as they
/// are), or with `--message-format json` one JSON diagnostic (E0423); exit 2.
fn usage_error(e: clap::Error) -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !e.use_stderr() || !numaplan::argv::wants_json(&args) {
        e.exit();
    }
    let d = numaplan::diag::Diagnostic::usage(&e.render().to_string());
    let _ = std::io::stderr().write_all(render(&d, MessageFormat::Json).as_bytes());
    ExitCode::from(2)
}
