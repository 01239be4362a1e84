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
