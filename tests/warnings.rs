//! A plan's warnings reach the user: on standard error from `compile` and `exec` (W02xx, the
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
        .map(|w| format!("warning[W0204]: {w}\n --> {CASE}\n"))
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
            .all(|l| l["severity"] == "warning" && l["code"] == "W0204")
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
        run.stderr.contains("warning[W0204]: cpu.scope is ignored"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.ends_with("error[E0214]: 4 warning(s) denied by `--deny-warnings`\n = note: nothing was written or started\n = help: fix what the warnings above say, accept a kind that was reviewed with `--allow CODE` (or the spec's `allow_warnings:`), or drop `--deny-warnings`\n"),
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
        .zip(common::warning_codes(&plan))
        .map(|(w, code)| format!("# warning: [{code}] {w}"))
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
            .starts_with("warning[W0204]: cpu.smt is ignored by policy node"),
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

/// Every kind of warning has its own code, explained by `numaplan codes`; W0200 is left for
/// plans of an earlier numaplan.
#[test]
fn each_kind_of_warning_has_its_own_explained_code() {
    let list = numaplan(&["codes"]);
    assert_eq!(list.code, 0);
    for n in 1..=15 {
        let code = format!("W02{n:02}");
        assert!(list.stdout.contains(&code), "{code} is listed");
        let one = numaplan(&["codes", &code]);
        assert_eq!(one.code, 0, "{code}: {}", one.stderr);
        assert!(one.stdout.len() > 80, "{code} is explained: {}", one.stdout);
    }
    // Three kinds from three specs: an ignored option, a restriction, shared CPUs.
    let codes_of = |args: &[&str]| {
        let json = numaplan(&[args, &["--format", "json"]].concat()).ok();
        let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
        common::warning_codes(&plan)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        codes_of(&["compile", CASE, "--topology", DGX]),
        ["W0204"; 4]
    );
    assert_eq!(codes_of(&["compile", "examples/dgx-spark.yaml"]), ["W0203"]);
    assert_eq!(
        codes_of(&[
            "compile",
            "examples/dgx-a100-llama.yaml",
            "--set",
            "cpu.policy=node"
        ]),
        ["W0204", "W0212"]
    );
}

/// `--allow CODE` accepts one kind: not printed, not fatal under `--deny-warnings`, still in the
/// plan; a kind it does not name is still denied.
#[test]
fn allow_accepts_one_kind_and_only_that_kind() {
    let base = ["compile", CASE, "--topology", DGX];
    let allowed = numaplan(&[&base[..], &["--deny-warnings", "--allow", "W0204"]].concat());
    assert_eq!((allowed.code, allowed.stderr.as_str()), (0, ""));
    assert_eq!(
        plan_warnings(
            &serde_json::from_str(
                &numaplan(&[&base[..], &["--allow=w0204", "--format", "json"]].concat()).ok()
            )
            .unwrap()
        )
        .len(),
        4,
        "the plan keeps the warnings for its reader"
    );
    let other = numaplan(&[&base[..], &["--deny-warnings", "--allow", "W0203"]].concat());
    assert_eq!(other.code, 1, "{}", other.stderr);
    assert!(
        other.stderr.contains("error[E0214]: 4 warning(s)"),
        "{}",
        other.stderr
    );
    // Codes that are no warning are usage errors.
    for bad in ["E0201", "W9999", "x"] {
        let run = numaplan(&[&base[..], &["--allow", bad]].concat());
        assert_eq!(run.code, 2, "{bad}: {}", run.stderr);
        assert!(run.stderr.contains("--allow"), "{}", run.stderr);
    }
}

/// The spec's `allow_warnings:` travels with the plan: the shipped DGX Spark example passes
/// `--deny-warnings`, its plan records the accepted kind, `explain` marks the warning, and the
/// plan starts under `exec --deny-warnings`; the same spec without the key is denied.
#[test]
fn allow_warnings_in_the_spec_is_recorded_in_the_plan_and_honoured_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let spark = common::repo().join("examples/dgx-spark.yaml");
    let plan = dir.path().join("plan.yaml");
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            spark.to_str().unwrap(),
            "--deny-warnings",
            "-o",
            plan.to_str().unwrap(),
        ],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("allow_warnings: [W0203]"), "{text}");
    assert!(
        text.contains("- code: W0203\n  message: node 0 has 10 of 20 CPUs allowed"),
        "{text}"
    );
    let explained = numaplan_in(dir.path(), &["explain", "plan.yaml"]).ok();
    assert!(
        explained.contains("  - [W0203] node 0 has 10 of 20 CPUs allowed (allowed)"),
        "{explained}"
    );
    // Without the key, the same spec is denied.
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            spark.to_str().unwrap(),
            "--deny-warnings",
            "--set",
            "allow_warnings=[]",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("warning[W0203]"), "{}", run.stderr);
    // A plan that allows the kind of its one warning starts under `exec --deny-warnings`.
    let marker = dir.path().join("started");
    let job = format!(
        "command: [touch, {}]\ngpus: none\nranks_per_node: 1\ncpu: {{policy: node, smt: one}}\n\
         allow_warnings: [W0204]\n",
        marker.display()
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let run = numaplan_in(dir.path(), &["exec", "job.yaml", "--deny-warnings"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert!(marker.exists(), "the rank ran");
}

/// A plan written before warnings had codes (plain strings) still reads: its warnings are
/// W0200, shown and denied as before.
#[test]
fn a_plan_with_uncoded_warnings_reads_them_as_w0200() {
    let dir = tempfile::tempdir().unwrap();
    // A plan for this machine, with one warning: `node` ignores `smt`.
    let job = "gpus: none\nranks_per_node: 1\ncpu: {policy: node, smt: one}\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let plan = numaplan_in(dir.path(), &["compile", "job.yaml"]).ok();
    let old = plan
        .lines()
        .filter_map(|l| match l.strip_prefix("- code: ") {
            Some(_) => None,
            None => Some(l.replace("  message: ", "- ")),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(old.contains("\n- cpu.smt is ignored"), "{old}");
    std::fs::write(dir.path().join("old.yaml"), old + "\n").unwrap();
    let run = numaplan_in(
        dir.path(),
        &["bind", "old.yaml", "--local-rank", "0", "--dry-run"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("warning[W0200]: cpu.smt is ignored"),
        "{}",
        run.stderr
    );
}
