//! The command line: clap's own consistency check and the help text users read.

mod common;

use clap::CommandFactory;
use common::numaplan;

#[test]
fn cli_definition_is_consistent() {
    numaplan::cli::Cli::command().debug_assert();
}

#[test]
fn help_texts() {
    insta::assert_snapshot!("help", numaplan(&["--help"]).ok());
    insta::assert_snapshot!("topo_help", numaplan(&["topo", "--help"]).ok());
}

#[test]
fn usage_errors_exit_2() {
    let run = numaplan(&["topo", "--format", "xml"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("invalid value 'xml'"), "{}", run.stderr);
}

#[test]
fn topo_on_this_machine() {
    // Live discovery through hwloc works on any Linux machine, including CI's.
    let text = numaplan(&["topo"]).ok();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert!(text.contains(" NUMA node"), "{text}");
    assert!(text.contains(&format!(" {cpus} CPU")), "{text}");
}

#[test]
fn dash_as_output_is_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let job = common::repo().join("examples/lumi-g.yaml");
    let job = job.to_str().unwrap();
    let to_stdout = common::numaplan_in(dir.path(), &["compile", job]).ok();
    let dash = common::numaplan_in(dir.path(), &["compile", job, "-o", "-"]).ok();
    // The same plan; only its "regenerate with" line repeats the command.
    assert_eq!(
        dash.replace(&format!("compile {job} -o -"), &format!("compile {job}")),
        to_stdout
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "`-o -` wrote a file"
    );
}

#[test]
fn version_and_what_it_runs_with() {
    let short = numaplan(&["--version"]).ok();
    assert_eq!(short, format!("numaplan {}\n", env!("CARGO_PKG_VERSION")));
    let verbose = numaplan(&["--version", "--verbose"]).ok();
    assert_eq!(numaplan(&["version"]).ok(), verbose);
    let lines: Vec<&str> = verbose.lines().collect();
    assert_eq!(lines.len(), 2, "{verbose}");
    assert_eq!(format!("{}\n", lines[0]), short);
    // The release pkg-config names, as hwloc's own tools print it.
    let lstopo = std::process::Command::new("lstopo-no-graphics")
        .arg("--version")
        .output()
        .unwrap();
    let hwloc = String::from_utf8_lossy(&lstopo.stdout);
    let release = hwloc.split_whitespace().last().unwrap();
    assert!(
        lines[1].starts_with(&format!("hwloc {release} (linked statically, API 2.")),
        "{verbose} vs {hwloc}"
    );
    let nvml = if std::path::Path::new("/dev/nvidiactl").exists() {
        "NVML: found (driver "
    } else {
        "NVML: not found ("
    };
    assert!(lines[1].contains(nvml), "{verbose}");
    assert!(
        lines[1].contains("; features: static-hwloc; target: "),
        "{verbose}"
    );
}

#[test]
fn verbose_needs_version_and_a_subcommand_is_needed() {
    assert_eq!(numaplan(&["--verbose"]).code, 2);
    let run = numaplan(&["--quiet"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("a subcommand is required"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_plan_format_with_emit_is_a_usage_error() {
    let run = numaplan(&[
        "compile",
        "examples/lumi-g.yaml",
        "--emit",
        "bash",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

/// What a real bash completes with numaplan's completion script sourced: `COMPREPLY` after
/// calling its function for `words`, the last being the word under the cursor.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let line = words.join(" ");
    let program = format!(
        r#"source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _numaplan numaplan "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"; printf '%s\n' "${{COMPREPLY[@]}}""#
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &program, "bash"])
        .arg(script)
        .args(words)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_flags_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("numaplan.bash");
    std::fs::write(&script, numaplan(&["completions", "bash"]).ok()).unwrap();
    assert_eq!(
        bash_completes(&script, &["numaplan", "com"]),
        ["compile", "completions"]
    );
    assert_eq!(
        bash_completes(&script, &["numaplan", "compile", "--em"]),
        ["--emit"]
    );
    assert_eq!(
        bash_completes(&script, &["numaplan", "compile", "--emit", ""]),
        ["bash", "sbatch", "sbatch-exec", "torchrun", "mpirun"]
    );
    for shell in ["zsh", "fish"] {
        let script = numaplan(&["completions", shell]).ok();
        assert!(
            script.contains("compile") && script.contains("schema-ref"),
            "{shell}"
        );
    }
}

/// `numaplan man` is one page that groff renders without a warning, with a section for every
/// subcommand naming each of its flags.
#[test]
fn the_man_page_has_every_subcommand_and_flag() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("numaplan.1");
    numaplan(&["man", "-o", page.to_str().unwrap()]).ok();
    let out = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-P-c", "-P-u", "-P-b"])
        .arg(&page)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("EXIT STATUS"), "{text}");
    let cli = numaplan::cli::Cli::command();
    for sub in cli.get_subcommands() {
        let heading = format!("\nNUMAPLAN {}\n", sub.get_name().to_uppercase());
        let section = text
            .split(&heading)
            .nth(1)
            .unwrap_or_else(|| panic!("no section {heading:?}"));
        let section = section.split("\nNUMAPLAN ").next().unwrap();
        for arg in sub.get_arguments() {
            if let Some(long) = arg.get_long() {
                assert!(
                    section.contains(&format!("--{long}")),
                    "numaplan {}: --{long} is not in the man page",
                    sub.get_name()
                );
            }
        }
    }
}
