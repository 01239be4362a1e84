//! `numaplan completions SHELL` and `numaplan man`: both generated from the clap definition
//! (`cli/`), so they list exactly the subcommands and flags the binary has.

use clap_complete::Shell;
use clap_mangen::Man;

use crate::cli::{ENVIRONMENT, EXIT_STATUSES};

/// The completion script of `shell` for `numaplan`: files for the spec, plan and topology
/// arguments, the spec's keys for `--set`, the codes for `codes` and `--allow`.
pub fn completions(shell: Shell) -> String {
    let mut out = Vec::new();
    clap_complete::generate(
        shell,
        &mut crate::argv::completion_command(),
        "numaplan",
        &mut out,
    );
    let script = String::from_utf8(out).expect("invariant: completion scripts are UTF-8");
    match shell {
        Shell::Bash => bash_whole_words(&script),
        _ => script,
    }
}

/// bash splits a word at `=` (`COMP_WORDBREAKS`), so clap's function would see `--set
/// cpu.policy=ex` as `cpu.policy`, `=`, `ex` and offer nothing: the words after `=` go
/// uncompleted. A wrapper joins `KEY=VALUE` back for it, and offers what follows the `=`.
const BASH_WHOLE_WORDS: &str = r#"
# `--set KEY=VALUE` and `--flag=VALUE`: bash splits the word at `=`; complete it whole, as the
# function above offers it, then give bash what follows the `=`.
_numaplan_whole_words() {
    local words=("${COMP_WORDS[@]}") at=$COMP_CWORD key_at value
    if [[ ${words[at]} == "=" ]]; then
        key_at=$((at - 1)) value=""
    elif [[ $at -ge 2 && ${words[at-1]} == "=" ]]; then
        key_at=$((at - 2)) value=${words[at]}
    else
        _numaplan "$@"
        return
    fi
    local key=${words[key_at]}
    if [[ $key == -* ]]; then
        # `--format=js`: the flag's values.
        COMP_WORDS=("${words[@]:0:key_at+1}" "$value") COMP_CWORD=$((key_at + 1))
        _numaplan "$1" "$value" "$key"
        return
    fi
    COMP_WORDS=("${words[@]:0:key_at}" "$key=$value") COMP_CWORD=$key_at
    _numaplan "$1" "$key=$value" "${words[key_at-1]}"
    local i
    for i in "${!COMPREPLY[@]}"; do
        COMPREPLY[i]=${COMPREPLY[i]#"$key="}
    done
}
"#;

/// The bash script with `BASH_WHOLE_WORDS` registered in `_numaplan`'s place.
fn bash_whole_words(script: &str) -> String {
    let at = script
        .find(
            "
if [[ \"${BASH_VERSINFO[0]}\"",
        )
        .expect("invariant: clap's bash script registers its function last");
    let (function, register) = script.split_at(at);
    format!(
        "{function}\n{}{}",
        BASH_WHOLE_WORDS.trim_start(),
        register.replace(
            "complete -F _numaplan ",
            "complete -F _numaplan_whole_words "
        )
    )
}

/// One manual page: NAME, SYNOPSIS, DESCRIPTION, the global OPTIONS, the SUBCOMMANDS (each
/// pointing at its own section below), then a section per subcommand (its synopsis,
/// description and options, as subsections), EXIT STATUS, ENVIRONMENT, EXAMPLES, SEE ALSO
/// and the version.
pub fn man() -> String {
    let mut cmd = crate::argv::command().disable_help_subcommand(true);
    // Gives every subcommand its full name (`numaplan compile`) for its synopsis.
    cmd.build();
    let page = Man::new(cmd.clone());
    let mut roff = Vec::new();
    let top: [Section; 5] = [
        Man::render_title,
        Man::render_name_section,
        Man::render_synopsis_section,
        Man::render_description_section,
        Man::render_options_section,
    ];
    for section in top {
        written(section(&page, &mut roff));
    }
    let mut roff = String::from_utf8(roff).expect("invariant: roff is UTF-8");
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    roff.push_str(&subcommand_list(&subs));
    for sub in subs {
        roff.push_str(&subcommand_section(sub));
    }
    roff.push_str(&exit_status_section());
    roff.push_str(&environment_section());
    roff.push_str(EXAMPLES_AND_SEE_ALSO);
    let mut version = Vec::new();
    written(page.render_version_section(&mut version));
    roff.push_str(&String::from_utf8_lossy(&version));
    roff
}

/// SUBCOMMANDS: each with its one-line description, and where its section is (there are no
/// `numaplan-compile(1)` pages: this page has them all).
fn subcommand_list(subs: &[&clap::Command]) -> String {
    let mut out = String::from(".SH SUBCOMMANDS\n");
    for sub in subs {
        let name = full_name(sub);
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        let about = about.trim_end_matches('.');
        out.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}. See \\fB{}\\fR below.\n",
            escape(&name),
            escape(about),
            escape(&name.to_uppercase())
        ));
    }
    out
}

/// A subcommand's synopsis, description and options, as subsections of its own section.
fn subcommand_section(sub: &clap::Command) -> String {
    let mut out = format!(".SH \"{}\"\n", full_name(sub).to_uppercase());
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
    for line in String::from_utf8_lossy(&text).lines() {
        match line.strip_prefix(".SH ") {
            Some(heading) => out.push_str(&format!(".SS {heading}\n")),
            None => out.push_str(&format!("{line}\n")),
        }
    }
    out
}

fn full_name(sub: &clap::Command) -> String {
    sub.get_bin_name().unwrap_or(sub.get_name()).to_string()
}

/// EXIT STATUS: the table `--help` and the README show (`cli::EXIT_STATUSES`).
fn exit_status_section() -> String {
    tagged_list("EXIT STATUS", EXIT_STATUSES)
}

/// ENVIRONMENT: every variable numaplan reads or sets (`cli::ENVIRONMENT`).
fn environment_section() -> String {
    tagged_list("ENVIRONMENT", ENVIRONMENT)
}

fn tagged_list(heading: &str, rows: &[(&str, &str)]) -> String {
    let mut out = format!(".SH \"{heading}\"\n");
    for (tag, text) in rows {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", escape(tag), escape(text)));
    }
    out
}

/// roff text: a backslash doubled, a line that would start with `.` or `'` guarded, dashes
/// kept as typed.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    match text.chars().next() {
        Some('.' | '\'') => format!("\\&{text}"),
        _ => text,
    }
}

const EXAMPLES_AND_SEE_ALSO: &str = r#".SH EXAMPLES
Compile a job for a DGX A100 from a checked-in topology, review it, and check it in CI:
.PP
.nf
numaplan compile job.yaml \-\-topology dgx\-a100.yaml \-o plan.yaml
numaplan explain plan.yaml
numaplan compile job.yaml \-o plan.yaml \-\-check \-\-deny\-warnings
.fi
.PP
Start the ranks on this node, bound and supervised, and verify them from /proc:
.PP
.nf
numaplan exec plan.yaml \-\-verify \-\- python train.py
.fi
.PP
Bind each rank under torchrun, srun or mpirun:
.PP
.nf
torchrun \-\-nproc\-per\-node 8 \-\-no\-python numaplan bind plan.yaml \-\- python train.py
srun \-\-cpu\-bind=none numaplan bind plan.yaml \-\- python train.py
mpirun \-\-bind\-to none numaplan bind plan.yaml \-\- ./app
.fi
.PP
Generate a Slurm batch file, and compare two plans:
.PP
.nf
numaplan compile job.yaml \-\-emit sbatch \-o job.sbatch
numaplan diff git:HEAD~1:plan.yaml plan.yaml
.fi
.SH "SEE ALSO"
\fBnumactl\fR(8), \fBtaskset\fR(1), \fBhwloc\-bind\fR(1), \fBlstopo\fR(1), \fBsrun\fR(1),
\fBsbatch\fR(1), \fBmpirun\fR(1), \fBtorchrun\fR (PyTorch's elastic launcher),
\fBset_mempolicy\fR(2), \fBsched_setaffinity\fR(2)
"#;

type Section = fn(&Man, &mut dyn std::io::Write) -> std::io::Result<()>;

fn written(result: std::io::Result<()>) {
    result.expect("invariant: writing roff to memory cannot fail");
}
