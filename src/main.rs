//! The binary: parse the command line, run it, render any error as a diagnostic, exit. The only
//! place that prints errors or exits.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use numaplan::cli::Cli;
use numaplan::diag::render::render;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "error[internal]: numaplan crashed: {info}\n = help: this is a bug in numaplan; please file an issue with the command and its input files"
        );
    }));
    let cli = Cli::parse();
    let format = cli.message_format;
    // Not locked for the whole run: `exec` relays ranks' output to stdout from other threads.
    let mut stdout = std::io::stdout();
    match numaplan::app::run(cli, &mut stdout) {
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
