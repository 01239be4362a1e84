//! A plan's warnings reach the user: on standard error from `compile` and `exec` (W0200, the
//! diagnostic style), dropped by `--quiet`, fatal with `--deny-warnings` (nothing written or
//! started), and at the top of every generated launcher.

mod common;

use common::{check_script, numaplan, numaplan_in, plan_warnings};

const CASE: &str = "tests/cases/compile/ignored_options_pytorch.yaml";
const DGX: &str = "examples/topologies/nvidia-dgx-a100.yaml";

fn plan_json() -> serde_json::Value {
    let json = numaplan(&["compile", CASE, "--topology", DGX, "--format", "json"]).ok();
    serde_json::from_str(&json).unwrap()
}

#[test]
fn compile_prints_the_plans_warnings_on_stderr() {
    let plan = plan_json();
    let warnings = plan_warnings(&plan);
    assert_eq!(warnings.len(), 4, "the case ignores four options");
    let run = numaplan(&["compile", CASE, "--topology", DGX]);
    assert_eq!(run.code, 0);
    let expected: String = warnings
        .iter()
        .map(|w| format!("warning[W0200]: {w}\n --> {CASE}\n"))
        .collect();
    assert_eq!(run.stderr, expected);
    // JSON lines with --message-format json.
    let run = numaplan(&[
        "compile",
        CASE,
        "--topology",
        DGX,
        "--message-format",
        "json",
    ]);
    let lines: Vec<serde_json::Value> = run
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines
            .iter()
            .all(|l| l["severity"] == "warning" && l["code"] == "W0200")
    );
    // --quiet drops them; the plan is the same.
    let quiet = numaplan(&["compile", CASE, "--topology", DGX, "--quiet"]);
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
    assert_eq!(quiet.stdout, run.stdout);
    // A plan without warnings prints nothing.
    let clean = numaplan(&["compile", "examples/lumi-g.yaml"]);
    assert_eq!((clean.code, clean.stderr.as_str()), (0, ""));
}

#[test]
fn deny_warnings_fails_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.yaml");
    let case = common::repo().join(CASE);
    let dgx = common::repo().join(DGX);
    let args = [
        "--deny-warnings",
        "compile",
        case.to_str().unwrap(),
        "--topology",
        dgx.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    let run = numaplan_in(dir.path(), &args);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("warning[W0200]: cpu.scope is ignored"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.ends_with("error[E0214]: 4 warning(s) denied by `--deny-warnings`\n = note: nothing was written or started\n = help: fix what the warnings above say, or drop `--deny-warnings`\n"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "nothing written");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file"
    );
    // Quietly: the error alone.
    let run = numaplan_in(dir.path(), &[&["--quiet"], &args[..]].concat());
    assert_eq!(run.code, 1);
    assert!(run.stderr.starts_with("error[E0214]"), "{}", run.stderr);
    // A plan without warnings passes.
    let lumi = common::repo().join("examples/lumi-g.yaml");
    let run = numaplan_in(
        dir.path(),
        &[
            "--deny-warnings",
            "compile",
            lumi.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn every_launcher_lists_the_warnings_at_its_top() {
    let dir = tempfile::tempdir().unwrap();
    let case = std::fs::read_to_string(common::repo().join(CASE)).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        format!("{case}command: [python, train.py]\n"),
    )
    .unwrap();
    let dgx = common::repo().join(DGX);
    let compile = |extra: &[&str]| {
        let args = [
            &["compile", "job.yaml", "--topology", dgx.to_str().unwrap()][..],
            extra,
        ]
        .concat();
        let run = numaplan_in(dir.path(), &args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    let plan: serde_json::Value = serde_json::from_str(&compile(&["--format", "json"])).unwrap();
    let expected: Vec<String> = plan_warnings(&plan)
        .iter()
        .map(|w| format!("# warning: {w}"))
        .collect();
    assert_eq!(expected.len(), 4);
    for kind in ["bash", "sbatch", "sbatch-exec"] {
        let file = dir.path().join(format!("launch-{kind}"));
        compile(&["--emit", kind, "-o", file.to_str().unwrap()]);
        let text = std::fs::read_to_string(&file).unwrap();
        let header: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).collect();
        let listed: Vec<&str> = header
            .iter()
            .copied()
            .filter(|l| l.starts_with("# warning: "))
            .collect();
        assert_eq!(listed, expected, "{kind}");
        check_script(&file);
    }
}

#[test]
fn exec_prints_warnings_before_starting_and_deny_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    // One CPU-only rank under `node`, which ignores `smt`.
    let job = format!(
        "command: [touch, {}]\ngpus: none\nranks_per_node: 1\ncpu: {{policy: node, smt: one}}\n",
        marker.display()
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let run = numaplan_in(dir.path(), &["exec", "job.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("warning[W0200]: cpu.smt is ignored by policy node"),
        "{}",
        run.stderr
    );
    assert!(marker.exists(), "the rank ran");
    std::fs::remove_file(&marker).unwrap();
    let run = numaplan_in(dir.path(), &["--deny-warnings", "exec", "job.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("error[E0214]"), "{}", run.stderr);
    assert!(!marker.exists(), "no rank started");
}
