//! Reviewing plans in pull requests: `compile --check` as a repository's CI runs it, `diff`
//! between plans, specs and git history, and `explain` (text and SVG).

mod common;

use std::path::Path;
use std::process::Command;

use common::{numaplan, numaplan_in, repo};

const DGX: &str = "examples/topologies/nvidia-dgx-a100.yaml";
const MOVED: &str = "tests/cases/topologies/nvidia-dgx-a100-gpu3-moved.yaml";

fn git(dir: &Path, args: &[&str]) {
    common::succeed(
        Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir),
    );
}

/// A repository with a job spec, its topology, and the committed plan and launcher.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("machines")).unwrap();
    std::fs::copy(repo().join(DGX), dir.path().join("machines/dgx.yaml")).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "name: train\ncommand: [python, train.py]\ntopology: machines/dgx.yaml\ncpu: {policy: exclusive}\n",
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "--emit", "bash", "-o", "launch.sh"],
    )
    .ok();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "plan"]);
    dir
}

fn snapshot_of(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (
        std::fs::read(path).unwrap(),
        std::fs::metadata(path).unwrap().modified().unwrap(),
    )
}

#[test]
fn check_passes_on_current_files_and_writes_nothing() {
    let dir = repository();
    let before = [
        snapshot_of(&dir.path().join("plan.yaml")),
        snapshot_of(&dir.path().join("launch.sh")),
    ];
    std::thread::sleep(std::time::Duration::from_millis(20));
    let run = numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "-o", "plan.yaml", "--check"],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--emit",
            "bash",
            "-o",
            "launch.sh",
            "--check",
        ],
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    let after = [
        snapshot_of(&dir.path().join("plan.yaml")),
        snapshot_of(&dir.path().join("launch.sh")),
    ];
    assert_eq!(before, after, "--check must not touch the files");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("numaplan"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn check_fails_with_a_diff_after_the_spec_changes() {
    let dir = repository();
    let job = dir.path().join("job.yaml");
    let text = std::fs::read_to_string(&job)
        .unwrap()
        .replace("exclusive", "node");
    std::fs::write(&job, text).unwrap();
    let before = snapshot_of(&dir.path().join("plan.yaml"));
    let run = numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "-o", "plan.yaml", "--check"],
    );
    assert_eq!(run.code, 1);
    assert_eq!(before, snapshot_of(&dir.path().join("plan.yaml")));
    insta::assert_snapshot!(
        "check_plan_stale",
        format!("{}\n--- stderr\n{}", run.stdout, run.stderr)
    );

    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--emit",
            "bash",
            "-o",
            "launch.sh",
            "--check",
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .starts_with("--- launch.sh (on disk)\n+++ launch.sh (compiled now)\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with('+') && l.contains("48-63,176-191"))
            && run
                .stdout
                .lines()
                .any(|l| l.starts_with('-') && l.contains("48-55,176-183")),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("regenerate it with `numaplan compile job.yaml --emit bash -o launch.sh`"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_of_a_missing_file_fails_and_creates_nothing() {
    let dir = repository();
    let run = numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "-o", "other.yaml", "--check"],
    );
    assert_eq!(run.code, 1);
    assert!(!dir.path().join("other.yaml").exists());
    insta::assert_snapshot!(run.stderr, @r"
    error[E0404]: `other.yaml` is missing
     = help: regenerate it with `numaplan compile job.yaml -o other.yaml`
    ");
}

/// The way a repository's CI runs it: a shell step over every committed plan.
#[test]
fn check_in_a_ci_step() {
    let dir = repository();
    let script = format!(
        "set -e\nfor f in plan.yaml; do {bin} compile job.yaml -o \"$f\" --check; done\n{bin} compile job.yaml --emit bash -o launch.sh --check\necho clean\n",
        bin = env!("CARGO_BIN_EXE_numaplan")
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "clean\n");
    std::fs::write(
        dir.path().join("job.yaml"),
        std::fs::read_to_string(dir.path().join("job.yaml"))
            .unwrap()
            .replace("exclusive", "socket"),
    )
    .unwrap();
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the CI step fails on a stale plan"
    );
}

#[test]
fn diffs() {
    let cases: &[(&str, &[&str])] = &[
        (
            "node_to_exclusive",
            &[
                "tests/cases/diff/dgx-a100-node.yaml",
                "tests/cases/diff/dgx-a100-exclusive.yaml",
            ],
        ),
        (
            "reserve_per_l3_on_lumi",
            &[
                "tests/cases/diff/lumi-g.yaml",
                "tests/cases/diff/lumi-g-reserved.yaml",
            ],
        ),
        (
            "gpu_moved",
            &[
                "examples/dgx-a100-llama.yaml",
                "examples/dgx-a100-llama.yaml",
                "--new-topology",
                MOVED,
            ],
        ),
        ("same", &["examples/lumi-g.yaml", "examples/lumi-g.yaml"]),
        (
            "helpers_and_openmp_on_lumi",
            &[
                "tests/cases/diff/lumi-g-reserved.yaml",
                "tests/cases/diff/lumi-g-helpers.yaml",
            ],
        ),
        (
            "reserve_per_l3_json",
            &[
                "tests/cases/diff/lumi-g.yaml",
                "tests/cases/diff/lumi-g-reserved.yaml",
                "--format",
                "json",
            ],
        ),
    ];
    for (name, args) in cases {
        let mut all = vec!["diff"];
        all.extend_from_slice(args);
        let run = numaplan(&all);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        insta::with_settings!({description => all.join(" ")}, {
            insta::assert_snapshot!(format!("diff_{name}"), run.stdout);
        });
    }
}

#[test]
fn diff_json_is_structured() {
    let run = numaplan(&[
        "diff",
        "tests/cases/diff/dgx-a100-node.yaml",
        "tests/cases/diff/dgx-a100-exclusive.yaml",
        "--format",
        "json",
    ])
    .ok();
    let v: serde_json::Value = serde_json::from_str(&run).unwrap();
    assert_eq!(v["summary"]["ranks_changed"], 8);
    assert_eq!(v["summary"]["cores_moved"], 64);
    assert_eq!(v["summary"]["quality_old"]["shared_cores"], 64);
    assert_eq!(v["summary"]["quality_new"]["shared_cores"], 0);
    assert_eq!(v["plan"][0]["field"], "policy");
    assert_eq!(v["ranks"][0]["changes"][0]["field"], "cpus");
    assert_eq!(
        v["ranks"][0]["changes"][0]["detail"],
        "8 cores dropped from L3 groups 14-15"
    );
}

/// Plan files from git history against the working tree, and a spec against a plan.
#[test]
fn diff_against_git_history() {
    let dir = repository();
    let job = dir.path().join("job.yaml");
    std::fs::write(
        &job,
        std::fs::read_to_string(&job)
            .unwrap()
            .replace("exclusive", "node"),
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let run = numaplan_in(
        dir.path(),
        &[
            "diff",
            "git:HEAD:plan.yaml",
            "plan.yaml",
            "--topology",
            "machines/dgx.yaml",
        ],
    )
    .ok();
    insta::assert_snapshot!("diff_git_plan", run);
    // A spec from history compiles against its topology, found relative to the spec.
    let run = numaplan_in(dir.path(), &["diff", "git:HEAD:job.yaml", "job.yaml"]).ok();
    assert!(run.contains("plan: policy exclusive -> node"), "{run}");
    // Plans find the topology file they name (relative to the plan): cores and figures.
    let run = numaplan_in(dir.path(), &["diff", "git:HEAD:plan.yaml", "plan.yaml"]).ok();
    assert!(
        run.contains(
            "rank 0: CPUs 48-55,176-183 -> 48-63,176-191 (8 cores added in L3 groups 14-15)"
        ),
        "{run}"
    );
    assert!(run.contains("64 cores moved; NUMA-local"), "{run}");
    // Without it, plans still diff rank by rank.
    std::fs::rename(dir.path().join("machines"), dir.path().join("elsewhere")).unwrap();
    let run = numaplan_in(dir.path(), &["diff", "git:HEAD:plan.yaml", "plan.yaml"]).ok();
    assert!(
        run.contains("rank 0: CPUs 48-55,176-183 -> 48-63,176-191"),
        "{run}"
    );
    assert!(
        run.ends_with("pass --topology for cores, L3 groups and quality figures\n"),
        "{run}"
    );
}

#[test]
fn diff_and_explain_errors() {
    let dir = repository();
    std::fs::write(
        dir.path().join("broken.yaml"),
        "numaplan_plan: 1\nname: x\nranks: [\n",
    )
    .unwrap();
    let plan = std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap();
    std::fs::write(
        dir.path().join("bad-cpus.yaml"),
        plan.replacen("cpus: 48-55,176-183", "cpus: 48-55,oops", 1),
    )
    .unwrap();
    // Another machine than the plan's, and a plan whose named topology file is not there.
    std::fs::copy(repo().join(MOVED), dir.path().join("machines/other.yaml")).unwrap();
    std::fs::create_dir(dir.path().join("moved")).unwrap();
    std::fs::copy(
        dir.path().join("plan.yaml"),
        dir.path().join("moved/plan.yaml"),
    )
    .unwrap();
    let cases: &[(&str, &[&str], i32)] = &[
        ("plan_syntax", &["diff", "broken.yaml", "plan.yaml"], 1),
        ("plan_invalid", &["diff", "bad-cpus.yaml", "plan.yaml"], 1),
        ("input_missing", &["diff", "nope.yaml", "plan.yaml"], 3),
        (
            "git_bad_path",
            &["diff", "git:HEAD:nope.yaml", "plan.yaml"],
            1,
        ),
        (
            "explain_plan_without_topology",
            &["explain", "moved/plan.yaml"],
            1,
        ),
        (
            "explain_plan_on_another_machine",
            &["explain", "plan.yaml", "--topology", "machines/other.yaml"],
            1,
        ),
    ];
    for (name, args, code) in cases {
        let run = numaplan_in(dir.path(), args);
        assert_eq!(run.code, *code, "{name}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{name}");
        insta::assert_snapshot!(format!("error_{name}"), run.stderr);
    }
}

/// `cpu.helpers` and `openmp:` in the table, the quality line and the picture (`h`).
#[test]
fn explain_shows_what_runs_inside_the_ranks() {
    let run = numaplan(&["explain", "tests/cases/diff/lumi-g-helpers.yaml"]).ok();
    insta::assert_snapshot!("explain_helpers_and_openmp", run);
}

#[test]
fn explain_examples() {
    for job in [
        "dgx-a100-llama",
        "lumi-g",
        "gh200",
        "p4d-exclusive",
        "cpu-only",
    ] {
        let run = numaplan(&["explain", &format!("examples/{job}.yaml")]).ok();
        assert!(
            !run.contains('\x1b'),
            "{job}: no colour when not a terminal"
        );
        for line in run.lines() {
            assert!(line.chars().count() <= 160, "{job}: line too wide: {line}");
        }
        insta::assert_snapshot!(format!("explain_{job}"), run);
    }
}

#[test]
fn explain_a_plan_with_its_topology_matches_the_spec() {
    let dir = repository();
    let from_spec = numaplan_in(dir.path(), &["explain", "job.yaml"]).ok();
    let from_plan = numaplan_in(
        dir.path(),
        &["explain", "plan.yaml", "--topology", "machines/dgx.yaml"],
    )
    .ok();
    assert_eq!(from_spec, from_plan);
    // The plan names its topology file: no `--topology` needed.
    let named = numaplan_in(dir.path(), &["explain", "plan.yaml"]).ok();
    assert_eq!(named, from_spec);
    // Another machine than the plan's is refused (E0418, snapshot in `diff_and_explain_errors`);
    // `--force` draws it under a banner.
    let moved = repo().join(MOVED).display().to_string();
    let run = numaplan_in(dir.path(), &["explain", "plan.yaml", "--topology", &moved]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.starts_with("error[E0418]"), "{}", run.stderr);
    let run = numaplan_in(
        dir.path(),
        &["explain", "plan.yaml", "--topology", &moved, "--force"],
    )
    .ok();
    let lines: Vec<&str> = run.lines().take(3).collect();
    assert_eq!(
        lines[1],
        "note: DRAWN ON ANOTHER MACHINE (--force): cores, L3 groups and reasons below may not be the plan's"
    );
    assert!(lines[2].starts_with("note: `plan.yaml` was made for topology fingerprint"));
}

/// A JSON plan rewritten on one line (`jq -c`, Python's `json.dump`) is still a plan: plans and
/// specs are told apart by parsing, not by layout; a spec whose first line mentions the key is
/// still a spec.
#[test]
fn a_plan_on_one_line_is_a_plan() {
    let dir = repository();
    let json = numaplan_in(dir.path(), &["compile", "job.yaml", "--format", "json"]).ok();
    let plan: serde_json::Value = serde_json::from_str(&json).unwrap();
    std::fs::write(
        dir.path().join("one.json"),
        serde_json::to_string(&plan).unwrap(),
    )
    .unwrap();
    let from_plan = numaplan_in(
        dir.path(),
        &["explain", "one.json", "--topology", "machines/dgx.yaml"],
    )
    .ok();
    let from_spec = numaplan_in(dir.path(), &["explain", "job.yaml"]).ok();
    assert_eq!(from_plan, from_spec);
    // A spec with a comment that starts like a plan is a spec.
    std::fs::write(
        dir.path().join("commented.yaml"),
        "# numaplan_plan: 1 is what a plan starts with\ntopology: machines/dgx.yaml\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["explain", "commented.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn explain_colour() {
    let run = numaplan(&["explain", "examples/lumi-g.yaml", "--color", "always"]).ok();
    assert!(
        run.contains("\x1b[1;38;5;33m0\x1b[0m"),
        "rank 0 in its colour"
    );
    let plain = numaplan(&["explain", "examples/lumi-g.yaml", "--color", "never"]).ok();
    let stripped = strip_ansi(&run);
    assert_eq!(stripped, plain, "colour adds escapes only");
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The SVG is well-formed XML with a cell per core, and rsvg-convert renders it.
#[test]
fn explain_svg_parses_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    for (job, cores) in [("dgx-a100-llama", 128), ("gh200", 288), ("lumi-g", 64)] {
        let svg_path = dir.path().join(format!("{job}.svg"));
        numaplan(&[
            "explain",
            &format!("examples/{job}.yaml"),
            "--format",
            "svg",
            "-o",
            svg_path.to_str().unwrap(),
        ])
        .ok();
        let text = std::fs::read_to_string(&svg_path).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{job}: {e}"));
        let cells = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("width") == Some("18"))
            .count();
        assert_eq!(cells, cores, "{job}: one cell per core");
        let png = dir.path().join(format!("{job}.png"));
        let out = Command::new("rsvg-convert")
            .args(["-o", png.to_str().unwrap(), svg_path.to_str().unwrap()])
            .output()
            .expect("rsvg-convert (librsvg2-bin; scripts/deps.sh installs it)");
        assert!(
            out.status.success(),
            "{job}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(&png).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 2000,
            "{job}: a real PNG"
        );
    }
}

/// The README's picture is what `explain --format svg` draws now.
#[test]
fn readme_picture_is_current() {
    let svg = numaplan(&["explain", "examples/lumi-g.yaml", "--format", "svg"]).ok();
    let committed = std::fs::read_to_string(repo().join("docs/explain-lumi-g.svg")).unwrap();
    assert!(
        svg == committed,
        "docs/explain-lumi-g.svg is stale; regenerate with\n  numaplan explain examples/lumi-g.yaml --format svg -o docs/explain-lumi-g.svg && rsvg-convert -o docs/explain-lumi-g.png docs/explain-lumi-g.svg"
    );
}

/// `diff --exit-code`, a plan that loses its name, and ranks that exist on one side only: they
/// read `added`/`removed` with their CPUs and their cores count as moved.
#[test]
fn diff_removed_ranks_names_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let job = std::fs::read_to_string(repo().join("examples/dgx-a100-llama.yaml")).unwrap();
    let topo = repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let fewer = job
        .lines()
        .filter(|l| !l.starts_with("name:"))
        .map(|l| l.replace("ranks_per_node: 8", "ranks_per_node: 7"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.path().join("old.yaml"), &job).unwrap();
    std::fs::write(dir.path().join("new.yaml"), fewer).unwrap();
    let t = topo.to_str().unwrap();
    let args = ["diff", "old.yaml", "new.yaml", "--topology", t];
    let run = numaplan_in(dir.path(), &args).ok();
    assert!(
        run.contains("plan: name llama-pretrain -> (none)\n"),
        "{run}"
    );
    assert!(run.contains("plan: ranks_per_node 8 -> 7\n"), "{run}");
    assert!(
        run.contains("rank 7: removed (CPUs 88-95,216-223)\n"),
        "{run}"
    );
    assert!(
        run.contains("summary: 8 of 8 ranks changed, 8 cores moved;"),
        "{run}"
    );
    // The other way round.
    let run = numaplan_in(
        dir.path(),
        &["diff", "new.yaml", "old.yaml", "--topology", t],
    )
    .ok();
    assert!(
        run.contains("rank 7: added (CPUs 88-95,216-223)\n"),
        "{run}"
    );
    // --exit-code: 1 with the diff when they differ, 0 when they do not; no error message.
    let differ = numaplan_in(dir.path(), &[&args[..], &["--exit-code"]].concat());
    assert_eq!((differ.code, differ.stderr.as_str()), (1, ""));
    assert!(differ.stdout.contains("rank 7: removed"));
    let same = numaplan_in(
        dir.path(),
        &[
            "diff",
            "old.yaml",
            "old.yaml",
            "--topology",
            t,
            "--exit-code",
        ],
    );
    assert_eq!((same.code, same.stderr.as_str()), (0, ""));
    assert!(same.stdout.contains("no change"));
}

/// hwloc 1.x exports put NUMA nodes above packages: the picture still draws each node inside
/// its package (by its cores), as `topo` lists it, and no package box is empty.
#[test]
fn explain_draws_nodes_inside_their_packages_for_hwloc1_exports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.yaml"), "gpus: none\n").unwrap();
    let xml = repo().join("tests/data/xml/coral-lassen-hwloc1.xml");
    let run = numaplan_in(
        dir.path(),
        &["explain", "job.yaml", "--topology", xml.to_str().unwrap()],
    )
    .ok();
    let lines: Vec<&str> = run.lines().collect();
    let packages: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("┌─ package"))
        .collect();
    assert_eq!(packages.len(), 2, "{run}");
    for i in packages {
        assert!(
            lines[i + 1].starts_with("│ ┌─ node "),
            "{}\n{}",
            lines[i],
            lines[i + 1]
        );
    }
    assert!(run.contains("┌─ package 0 ──") && run.contains("┌─ node 0 · 127.7 GiB · rank 0"));
}

/// A plan's header names its paths relative to the plan, so `--check` passes whatever the
/// spelling or the working directory (`./job.yaml`, absolute paths, another directory), the
/// committed file holds no absolute path, and the command in its header, run in the plan's
/// directory, writes the file byte for byte (`--schema-ref` and `--emit` included).
#[test]
fn check_compares_plans_not_spellings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("jobs")).unwrap();
    std::fs::create_dir_all(root.join("plans")).unwrap();
    std::fs::copy(repo().join(DGX), root.join("jobs/dgx.yaml")).unwrap();
    std::fs::write(
        root.join("jobs/job.yaml"),
        "topology: dgx.yaml\ncommand: [python, train.py]\n",
    )
    .unwrap();
    let abs = |p: &str| root.join(p).display().to_string();
    numaplan_in(
        root,
        &[
            "compile",
            "./jobs/job.yaml",
            "--schema-ref",
            "../schema.json",
            "-o",
            &abs("plans/job.yaml"),
        ],
    )
    .ok();
    let written = std::fs::read_to_string(root.join("plans/job.yaml")).unwrap();
    assert!(
        !written.contains(&root.display().to_string()),
        "an absolute path: {written}"
    );
    let header: Vec<&str> = written.lines().take(4).collect();
    assert_eq!(
        header[2], "#   numaplan compile ../jobs/job.yaml --schema-ref ../schema.json -o job.yaml",
        "{written}"
    );
    assert_eq!(header[3], "# spec: ../jobs/job.yaml");
    // --check from the root, from the plans directory, with absolute paths: up to date.
    for (cwd, spec, out) in [
        (
            root.to_path_buf(),
            "jobs/job.yaml".to_string(),
            "plans/job.yaml".to_string(),
        ),
        (
            root.join("plans"),
            "../jobs/job.yaml".to_string(),
            "job.yaml".to_string(),
        ),
        (
            std::env::temp_dir(),
            abs("jobs/job.yaml"),
            abs("plans/job.yaml"),
        ),
    ] {
        let run = numaplan_in(
            &cwd,
            &[
                "compile",
                &spec,
                "--schema-ref",
                "../schema.json",
                "-o",
                &out,
                "--check",
            ],
        );
        assert_eq!(
            run.code,
            0,
            "from {}: {}{}",
            cwd.display(),
            run.stdout,
            run.stderr
        );
    }
    // The header's command, run where the plan is, writes the same bytes.
    for emit in [None, Some("bash")] {
        let name = if emit.is_some() {
            "plans/launch.sh"
        } else {
            "plans/job.yaml"
        };
        let mut args = vec![
            "compile",
            "./jobs/job.yaml",
            "--schema-ref",
            "../schema.json",
        ];
        if let Some(kind) = emit {
            args.extend(["--emit", kind]);
        }
        args.extend(["-o", name]);
        numaplan_in(root, &args).ok();
        let first = std::fs::read(root.join(name)).unwrap();
        let text = String::from_utf8_lossy(&first).into_owned();
        let line = text
            .lines()
            .skip_while(|l| !l.ends_with("regenerate with"))
            .nth(1)
            .unwrap()
            .trim_start_matches("#   ")
            .to_string();
        let out = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(root.join("plans"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    Path::new(env!("CARGO_BIN_EXE_numaplan"))
                        .parent()
                        .unwrap()
                        .display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(root.join(name)).unwrap(),
            first,
            "`{line}` in plans/"
        );
    }
    // A change of content still fails the check.
    let run = numaplan_in(
        root,
        &[
            "compile",
            "jobs/job.yaml",
            "--schema-ref",
            "../schema.json",
            "--set",
            "cpu.policy=node",
            "-o",
            "plans/job.yaml",
            "--check",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
}

/// `diff` names the `--set`s of its new side in its header, and a change of threads per core
/// shows the CPUs as well as the cores (`smt: one` -> `all`: 7 -> 16 CPUs is one core added).
#[test]
fn diff_shows_its_overrides_and_counts_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let topo = repo().join(DGX);
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "topology: {}\ncpu: {{smt: one, reserve_cores: 1}}\n",
            topo.display()
        ),
    )
    .unwrap();
    let run = numaplan_in(
        dir.path(),
        &[
            "diff",
            "job.yaml",
            "job.yaml",
            "--set",
            "cpu.smt=all",
            "--set",
            "cpu.reserve_cores=0",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "--- job.yaml on nvidia-dgx-a100");
    assert_eq!(
        lines[1],
        "+++ job.yaml on nvidia-dgx-a100 --set cpu.smt=all --set cpu.reserve_cores=0"
    );
    let rank0 = lines.iter().find(|l| l.starts_with("rank 0: ")).unwrap();
    assert_eq!(
        *rank0, "rank 0: CPUs 48-54 -> 48-55,176-183 (1 core added in L3 group 13, 7 -> 16 CPUs)",
        "{}",
        run.stdout
    );
    // What every rank has in common is said once, above the ranks.
    assert!(
        lines.contains(&"every rank: env OMP_NUM_THREADS 7 -> 8"),
        "{}",
        run.stdout
    );
}

/// `explain` draws the cores `cpu.allowed` leaves out as not allowed (`×`), as it draws a
/// cgroup's, from a spec and from its plan file alike; idle cores stay `·`.
#[test]
fn explain_marks_cores_the_spec_excludes() {
    let dir = tempfile::tempdir().unwrap();
    let topo = repo().join("examples/topologies/lumi-g.yaml");
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "topology: {}\ncpu: {{allowed: \"0-31\"}}\ngpus: [4, 5]\n",
            topo.display()
        ),
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    for input in ["job.yaml", "plan.yaml"] {
        let run = numaplan_in(dir.path(), &["explain", input, "--color", "never"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let row = |first: &str| {
            run.stdout
                .lines()
                .find(|l| l.contains(&format!(" {first} [")))
                .unwrap_or_else(|| panic!("no row {first}: {}", run.stdout))
                .to_string()
        };
        assert!(
            row("16").contains("[· · · · · · · ·]"),
            "idle: {}",
            row("16")
        );
        for excluded in ["32", "48"] {
            assert!(
                row(excluded).contains("[× × × × × × × ×]"),
                "{input}: {}",
                row(excluded)
            );
        }
    }
}

/// A plan compiled on this machine (discovered here, no topology file) is explained on this
/// machine without `--topology discover`.
#[test]
fn explain_a_plan_made_here_needs_no_topology() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let run = numaplan_in(dir.path(), &["explain", "plan.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("plan: 1 rank per node on "),
        "{}",
        run.stdout
    );
    // A plan of another machine without its file still needs one (E0409).
    let other = std::fs::read_to_string(dir.path().join("plan.yaml"))
        .unwrap()
        .replace(&format!("name: {}", hostname()), "name: elsewhere");
    std::fs::write(dir.path().join("other.yaml"), other).unwrap();
    let run = numaplan_in(dir.path(), &["explain", "other.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.starts_with("error[E0409]"), "{}", run.stderr);
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// A node's memory reads the same in `topo` and in `explain`'s picture (503.4 GiB on Aurora's
/// first node, which `explain` once rounded down to 503 GiB).
#[test]
fn node_memory_reads_the_same_in_topo_and_explain() {
    let topo = numaplan(&["topo", "--topology", "examples/topologies/alcf-aurora.yaml"]).ok();
    let explain = numaplan(&["explain", "examples/aurora.yaml", "--color", "never"]).ok();
    for size in ["503.4 GiB", "502.9 GiB", "64 GiB"] {
        assert!(topo.contains(size), "topo: {size} in\n{topo}");
        assert!(explain.contains(size), "explain: {size} in\n{explain}");
    }
}

/// Runs `line` with `sh -c` in `dir`, with this build's numaplan first on PATH.
fn pasted(line: &str, dir: &Path) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_numaplan")).parent().unwrap();
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap()
}

/// Paths with spaces and quotes: the header's "regenerate with" command and the hint of a
/// stale `--check`, each pasted into `sh`, regenerate the file, byte for byte.
#[test]
fn regenerate_commands_paste_into_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("my jobs")).unwrap();
    std::fs::copy(
        repo().join("examples/topologies/nvidia-dgx-a100.yaml"),
        root.join("my jobs/dgx a100.yaml"),
    )
    .unwrap();
    std::fs::write(
        root.join("my jobs/job.yaml"),
        "topology: dgx a100.yaml\ncommand: [python, train.py]\n",
    )
    .unwrap();
    for (out, emit) in [("stale plan.yaml", None), ("it's launch.sh", Some("bash"))] {
        let mut args = vec!["compile", "my jobs/job.yaml", "--set", "env.X=a b"];
        args.extend(emit.map(|e| ["--emit", e]).into_iter().flatten());
        args.extend(["-o", out]);
        numaplan_in(root, &args).ok();
        let written = std::fs::read(root.join(out)).unwrap();
        // The header's command, from the file's directory.
        let text = String::from_utf8_lossy(&written).into_owned();
        let line = numaplan::provenance::command_of(&text).unwrap().to_string();
        assert!(line.contains("'my jobs/job.yaml'"), "{line}");
        std::fs::remove_file(root.join(out)).unwrap();
        let run = pasted(&line, root);
        assert!(
            run.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(std::fs::read(root.join(out)).unwrap(), written, "`{line}`");
        // A stale file: the hint of --check, as typed.
        std::fs::write(root.join(out), "stale\n").unwrap();
        args.push("--check");
        let check = numaplan_in(root, &args);
        assert_eq!(check.code, 1, "{}", check.stderr);
        let hint = check
            .stderr
            .split("regenerate it with `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("no hint: {}", check.stderr))
            .to_string();
        let run = pasted(&hint, root);
        assert!(
            run.status.success(),
            "`{hint}`: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(std::fs::read(root.join(out)).unwrap(), written, "`{hint}`");
        assert_eq!(
            numaplan_in(root, &args).code,
            0,
            "up to date after `{hint}`"
        );
    }
}

/// `diff` quotes a command as a shell reads it (an argument with a space is one word), and says
/// a change all ranks share once, as `every rank:`; before, `python my train.py` (three words?)
/// and the same `env` change on every rank's line.
#[test]
fn diff_quotes_commands_and_says_shared_changes_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = |command: &str, env: &str| {
        format!(
            "topology: {}\ngpus: none\nranks_per_node: 4\ncommand: {command}\nenv: {env}\n",
            repo()
                .join("examples/topologies/amd-epyc-genoa-9654-2s.yaml")
                .display()
        )
    };
    std::fs::write(
        dir.path().join("a.yaml"),
        spec("[python, train.py]", "{A: x}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        spec("[python, 'my train.py', --lr, '3e-4']", "{A: y}"),
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["diff", "a.yaml", "b.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[2..4],
        [
            "plan: command python train.py -> python 'my train.py' --lr 3e-4",
            "every rank: env A x -> y",
        ],
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("rank 0:"), "{}", run.stdout);
}

/// A plan of an earlier numaplan lists each rank's NIC by name alone (no `nic_kind`, `nic_pci`,
/// nor the machine's `topology.nics`): it still reads, and places its ranks as the plan of
/// today does (`diff --exit-code` finds no difference).
#[test]
fn a_plan_without_the_nics_kinds_and_addresses_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let plan = numaplan(&["compile", "examples/dgx-a100-llama.yaml"]).ok();
    assert!(plan.contains("nic_kind:") && plan.contains("nic_pci:"));
    let old: String = plan
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            // The machine's names: the topology's list of them all.
            !t.starts_with("nic_kind:")
                && !t.starts_with("nic_pci:")
                && !l.starts_with("  nics: [mlx5_0, mlx5_1,")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!old.contains("nic_") && old.contains("  nics: [mlx5_0]\n"));
    std::fs::write(dir.path().join("old.yaml"), &old).unwrap();
    std::fs::write(dir.path().join("new.yaml"), &plan).unwrap();
    let run = numaplan_in(dir.path(), &["diff", "old.yaml", "new.yaml", "--exit-code"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = numaplan_in(
        dir.path(),
        &[
            "bind",
            "--dry-run",
            "--local-rank",
            "0",
            "--force",
            "old.yaml",
        ],
    );
    assert!(
        run.stdout.contains("NCCL_IB_HCA='=mlx5_0'"),
        "{}",
        run.stdout
    );
}
