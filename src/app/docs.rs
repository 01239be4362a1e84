//! `numaplan completions SHELL` and `numaplan man`: both generated from the clap definition
//! (`cli.rs`), so they list exactly the subcommands and flags the binary has.

use clap::CommandFactory as _;
use clap_complete::Shell;
use clap_mangen::Man;

use crate::cli::Cli;

/// The completion script of `shell` for `numaplan`.
pub fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "numaplan", &mut out);
    String::from_utf8(out).expect("invariant: completion scripts are UTF-8")
}

/// One manual page: the top level (synopsis, description, global options, the subcommands'
/// list), then a section per subcommand (its synopsis, description and options, as
/// subsections), then the exit statuses and the version.
pub fn man() -> String {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // Gives every subcommand its full name (`numaplan compile`) for its synopsis.
    cmd.build();
    let page = Man::new(cmd.clone());
    let mut roff = Vec::new();
    let top: [Section; 6] = [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
        Man::render_subcommands_section,
    ];
    for section in top {
        written(section(&page, &mut roff));
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_bin_name().unwrap_or(sub.get_name()).to_uppercase();
        roff.extend_from_slice(format!(".SH \"{name}\"\n").as_bytes());
        let sub_page = Man::new(sub.clone());
        let mut text = Vec::new();
        let parts: [Section; 3] = [
            Man::render_synopsis_section,
            Man::render_description_section,
            Man::render_options_section,
        ];
        for section in parts {
            written(section(&sub_page, &mut text));
        }
        // The subcommand's sections become subsections of its own section.
        for line in String::from_utf8_lossy(&text).lines() {
            let line = match line.strip_prefix(".SH ") {
                Some(heading) => format!(".SS {heading}\n"),
                None => format!("{line}\n"),
            };
            roff.extend_from_slice(line.as_bytes());
        }
    }
    let mut extra = Vec::new();
    written(page.render_extra_section(&mut extra));
    let extra = String::from_utf8_lossy(&extra).replacen(".SH EXTRA", ".SH \"EXIT STATUS\"", 1);
    roff.extend_from_slice(extra.as_bytes());
    written(page.render_version_section(&mut roff));
    String::from_utf8(roff).expect("invariant: roff is UTF-8")
}

type Section = fn(&Man, &mut dyn std::io::Write) -> std::io::Result<()>;

fn written(result: std::io::Result<()>) {
    result.expect("invariant: writing roff to memory cannot fail");
}
