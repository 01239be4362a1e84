//! The command line: clap's own consistency check and the help text users read.

mod common;

use clap::CommandFactory;
use common::numaplan;

#[test]
fn cli_definition_is_consistent() {
    numaplan::cli::Cli::command().debug_assert();
    numaplan::argv::command().debug_assert();
    numaplan::argv::completion_command().debug_assert();
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
    let args: Vec<&str> = [script.to_str().unwrap()]
        .into_iter()
        .chain(words.iter().copied())
        .collect();
    completion_lines(&program, &args)
}

/// The lines a `bash --norc -c PROGRAM bash ARGS...` prints; it must succeed.
fn completion_lines(program: &str, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", program, "bash"])
        .args(args)
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

/// What bash completes for a line it splits at `=` (as its `COMP_WORDBREAKS` makes it):
/// `words` as `COMP_WORDS`, the word under the cursor last, and the function the script
/// registers called as bash calls it (`cur`: readline's word, empty right after a `=`).
fn bash_completes_split(script: &std::path::Path, words: &[&str], cur: &str) -> Vec<String> {
    let prev = words[words.len() - 2];
    let program = r#"source "$1"; cur=$2; prev=$3; shift 3; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); f=$(complete -p numaplan | sed 's/.*-F \([^ ]*\).*/\1/'); "$f" numaplan "$cur" "$prev"; printf '%s\n' "${COMPREPLY[@]}""#;
    let args: Vec<&str> = [script.to_str().unwrap(), cur, prev]
        .into_iter()
        .chain(words.iter().copied())
        .collect();
    completion_lines(program, &args)
        .into_iter()
        .filter(|l| !l.is_empty())
        .collect()
}

/// Values complete after `=` as bash splits the line: `--set cpu.policy=` offers the policies
/// (before, nothing: bash saw `=` and clap's function offered no word), `--set
/// memory.policy=pr` the one it starts, `--format=j` the flag's value; `--nproc-per-node` and
/// `--local-rank` offer `gpu`, not file names; `--allow` offers warning kinds, not W0200.
#[test]
fn bash_completes_values_after_an_equals_sign() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("numaplan.bash");
    std::fs::write(&script, numaplan(&["completions", "bash"]).ok()).unwrap();
    let policies = bash_completes_split(
        &script,
        &[
            "numaplan",
            "compile",
            "job.yaml",
            "--set",
            "cpu.policy",
            "=",
        ],
        "",
    );
    for policy in [
        "exclusive",
        "node",
        "socket",
        "unique-contiguous",
        "mpibind",
    ] {
        assert!(policies.contains(&policy.to_string()), "{policies:?}");
    }
    let memory = bash_completes_split(
        &script,
        &["numaplan", "exec", "--set", "memory.policy", "=", "pr"],
        "pr",
    );
    assert_eq!(memory, ["preferred"]);
    let format = bash_completes_split(&script, &["numaplan", "topo", "--format", "=", "j"], "j");
    assert_eq!(format, ["json"]);
    assert_eq!(
        bash_completes(&script, &["numaplan", "exec", "--nproc-per-node", ""]),
        ["gpu"]
    );
    assert_eq!(
        bash_completes(
            &script,
            &["numaplan", "bind", "plan.yaml", "--local-rank", "g"]
        ),
        ["gpu"]
    );
    let allow = bash_completes(&script, &["numaplan", "exec", "--allow", "W020"]);
    assert!(!allow.contains(&"W0200".to_string()), "{allow:?}");
    assert!(allow.contains(&"W0201".to_string()), "{allow:?}");
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
        [
            "bash",
            "sbatch",
            "sbatch-exec",
            "torchrun",
            "mpirun",
            "vllm",
            "sglang",
            "flux",
            "k8s",
            "kubelet"
        ]
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

/// The man page as groff renders it, without formatting.
fn man_text() -> String {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("numaplan.1");
    numaplan(&["man", "-o", page.to_str().unwrap()]).ok();
    let out = std::process::Command::new("groff")
        // No hyphenation: variable names are compared whole.
        .args(["-man", "-rHY=0", "-Tutf8", "-ww", "-P-c", "-P-u", "-P-b"])
        .arg(&page)
        .output()
        .unwrap();
    // groff joins a paragraph's lines; for comparing words, one space between words.
    String::from_utf8_lossy(&out.stdout).replace(['\u{2010}', '\u{2212}'], "-")
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One exit-status table: the README's block is what `--help` ends with, and the manual's
/// EXIT STATUS has every row.
#[test]
fn the_exit_status_table_is_the_same_in_readme_help_and_man() {
    let table = numaplan::argv::exit_status_text();
    let help = numaplan(&["--help"]).ok();
    assert!(help.trim_end().ends_with(&table), "{help}");
    let readme = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let block = readme
        .split("## Exit status")
        .nth(1)
        .and_then(|s| s.split("```text\n").nth(1))
        .and_then(|s| s.split("\n```").next())
        .unwrap();
    assert_eq!(block, table, "README's Exit status block");
    let man = words(&man_text());
    let section = man.split("EXIT STATUS").nth(1).unwrap();
    for (status, meaning) in numaplan::cli::EXIT_STATUSES {
        assert!(
            section.contains(&words(&format!("{status} {meaning}"))),
            "status {status} is not in the manual: {section}"
        );
    }
}

/// The manual: a NAME that does not repeat the name, no pointers to pages that do not exist,
/// and the sections a manual has.
#[test]
fn the_man_page_names_itself_once_and_has_its_sections() {
    let text = man_text();
    let name = text.split("NAME").nth(1).unwrap();
    assert!(
        words(name).starts_with("numaplan - Compile a job spec"),
        "{name}"
    );
    assert!(!text.contains("numaplan-compile(1)"), "{text}");
    for section in [
        "SUBCOMMANDS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(text.contains(&format!("\n{section}\n")), "no {section}");
    }
    let see_also = words(text.split("SEE ALSO").nth(1).unwrap());
    for page in ["numactl(8)", "hwloc-bind(1)", "srun(1)", "torchrun"] {
        assert!(see_also.contains(page), "{page}: {see_also}");
    }
}

/// ENVIRONMENT names every variable numaplan reads or sets: its own `NUMAPLAN_*`, in the code
/// and in the generated scripts, and the launchers' variables `bind` reads.
#[test]
fn the_man_pages_environment_names_every_variable() {
    let man = words(&man_text());
    let section = man
        .split(" ENVIRONMENT ")
        .nth(1)
        .and_then(|s| s.split(" EXAMPLES ").next())
        .unwrap()
        .to_string();
    let mut sources = String::new();
    for dir in ["src", "templates"] {
        for file in walk(&common::repo().join(dir)) {
            sources.push_str(&std::fs::read_to_string(file).unwrap());
        }
    }
    let mut named: Vec<String> = sources
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("NUMAPLAN_") && w.len() > 9)
        .filter(|w| !w.starts_with("NUMAPLAN_HWLOC_VERSION"))
        .map(|w| {
            w.trim_end_matches(|c: char| c.is_ascii_digit() || c == '_')
                .to_string()
        })
        .collect();
    named.extend(
        numaplan::rank::local_rank_variables()
            .into_iter()
            .chain(numaplan::variables::VISIBILITY)
            .map(String::from),
    );
    named.extend(
        [
            "MPIRUN",
            "TORCHRUN",
            "OMP_NUM_THREADS",
            "MASTER_ADDR",
            "NO_COLOR",
        ]
        .map(String::from),
    );
    named.sort();
    named.dedup();
    for var in named {
        let var = match var.as_str() {
            "NUMAPLAN_PLAN_" | "NUMAPLAN_VALUE" | "NUMAPLAN_VALUE_N" => continue,
            _ => var,
        };
        assert!(
            section.contains(&var),
            "{var} is not in ENVIRONMENT: {section}"
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Completion offers files for spec and plan arguments, the spec's keys for `--set`, and the
/// codes for `codes` and `--allow`.
#[test]
fn bash_completes_files_spec_keys_and_codes() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("numaplan.bash");
    std::fs::write(&script, numaplan(&["completions", "bash"]).ok()).unwrap();
    let keys = bash_completes(
        &script,
        &["numaplan", "compile", "job.yaml", "--set", "cpu.po"],
    );
    // The key and each of its values: bash inserts what they share, `cpu.policy=`.
    assert_eq!(keys[0], "cpu.policy=");
    assert!(
        keys.iter().all(|k| k.starts_with("cpu.policy=")),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"cpu.policy=exclusive".to_string()),
        "{keys:?}"
    );
    let keys = bash_completes(&script, &["numaplan", "exec", "--set", "env"]);
    assert_eq!(keys, ["env."]);
    let keys = bash_completes(&script, &["numaplan", "exec", "--set", "eng"]);
    assert_eq!(
        keys,
        ["engine=", "engine=vllm", "engine=sglang", "engine=trtllm"]
    );
    // mpibind's knobs are spec keys like any other.
    let keys = bash_completes(&script, &["numaplan", "exec", "--set", "cpu.gpu_"]);
    assert!(
        keys.iter().all(|k| k.starts_with("cpu.gpu_optim=")) && !keys.is_empty(),
        "{keys:?}"
    );
    assert_eq!(
        bash_completes(&script, &["numaplan", "codes", "E030"]).len(),
        8
    );
    let allow = bash_completes(&script, &["numaplan", "compile", "--allow", "W020"]);
    assert!(allow.contains(&"W0203".to_string()), "{allow:?}");
    assert!(!allow.iter().any(|c| c.starts_with('E')), "{allow:?}");
    // Spec and plan arguments complete file names: bash falls back to them (`-o default`)
    // where the script offers nothing, zsh is told so.
    assert!(
        bash_completes(&script, &["numaplan", "compile", "exa"])
            .iter()
            .all(|w| w.is_empty())
    );
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("-o bashdefault -o default numaplan")
    );
    let zsh = numaplan(&["completions", "zsh"]).ok();
    for arg in [
        ":spec -- The job spec",
        "::input -- A job spec",
        ":input -- A plan file",
    ] {
        let line = zsh
            .lines()
            .find(|l| l.starts_with(&format!("'{arg}")))
            .unwrap_or_else(|| panic!("{arg}"));
        assert!(line.ends_with(":_files' \\"), "{line}");
    }
    // `-q`, `--deny-warnings` and `--allow` are not offered where they mean nothing.
    let offered = bash_completes(&script, &["numaplan", "codes", "--de"]);
    assert!(offered.iter().all(|w| w.is_empty()), "{offered:?}");
    assert_eq!(
        bash_completes(&script, &["numaplan", "compile", "--de"]),
        ["--deny-warnings"]
    );
}

/// `-q`, `--deny-warnings` and `--allow` mean something to compile, exec and bind only:
/// elsewhere they are not in the help and are a usage error, as usage errors are JSON under
/// `--message-format json`.
#[test]
fn warning_flags_are_refused_where_they_mean_nothing_and_usage_errors_speak_json() {
    for sub in ["man", "codes", "schema", "completions", "topo", "explain"] {
        let help = numaplan(&[sub, "--help"]).ok();
        assert!(!help.contains("--deny-warnings"), "{sub}: {help}");
    }
    assert!(
        numaplan(&["compile", "--help"])
            .ok()
            .contains("--deny-warnings")
    );
    let run = numaplan(&["man", "-q"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: `--quiet` does nothing for `numaplan man`"),
        "{}",
        run.stderr
    );
    let run = numaplan(&["--deny-warnings", "codes", "W0203"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for args in [
        &["--message-format", "json", "compile", "--bogus"][..],
        &["codes", "--allow", "W0203", "--message-format=json"],
        &["--message-format=json", "topo", "--format", "xml"],
    ] {
        let run = numaplan(args);
        assert_eq!(run.code, 2, "{args:?}");
        let d: serde_json::Value = serde_json::from_str(run.stderr.trim())
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON diagnostic ({e}): {}", run.stderr));
        assert_eq!(d["code"], "E0423", "{d}");
        assert_eq!(d["severity"], "error", "{d}");
    }
    // `--help` is help, not an error, in either format.
    let run = numaplan(&["--message-format", "json", "codes", "--help"]);
    assert_eq!(run.code, 0);
}

/// A missing input of `exec` is reported with a code whose explanation names `exec` (it once
/// named only `diff` and `explain`), exit 3.
#[test]
fn a_missing_exec_input_is_explained_for_exec() {
    let run = numaplan(&["exec", "missing.yaml"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.starts_with("error[E0407]"), "{}", run.stderr);
    let explained = numaplan(&["codes", "E0407"]).ok();
    for command in ["`exec`", "`bind`", "`verify`", "`diff`", "`explain`"] {
        assert!(explained.contains(command), "{command}: {explained}");
    }
}
