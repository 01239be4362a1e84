//! Every error kind, pinned with its full message (file:line:col included). Broken fixtures are
//! files in tests/cases/topology/err_*.yaml; the other kinds need a filesystem or a command.

mod common;

use common::{numaplan, numaplan_in, repo};

#[test]
fn broken_fixtures() {
    insta::glob!("cases/topology", "err_*.yaml", |path| {
        let rel = path
            .strip_prefix(repo())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let run = numaplan(&["topo", "--topology", &rel]);
        assert_eq!(run.code, 1, "{rel}");
        assert!(run.stdout.is_empty(), "{rel}: nothing on stdout");
        insta::with_settings!({description => std::fs::read_to_string(path).unwrap()}, {
            insta::assert_snapshot!(run.stderr);
        });
    });
}

#[test]
fn missing_topology_file_is_an_environment_error() {
    let run = numaplan(&["topo", "--topology", "no/such/machine.yaml"]);
    assert_eq!(run.code, 3);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0300]: cannot read topology file `no/such/machine.yaml`: No such file or directory (os error 2)
     = help: check the path given to `--topology` or the spec's `topology:` key
    ");
}

/// A topology file the spec names that is missing: the error points at the key that names it
/// and, in a group, names the group.
#[test]
fn a_missing_topology_named_by_the_spec_points_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("groups.yaml"),
        "gpus: none\ngroups:\n  - name: a\n  - name: b\n    topology: gone.yaml\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("flat.yaml"),
        "gpus: none\ntopology: gone.yaml\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["compile", "groups.yaml"]);
    assert_eq!(run.code, 3);
    insta::assert_snapshot!(run.stderr, @"
    error[E0300]: cannot read topology file `gone.yaml`: No such file or directory (os error 2)
     --> groups.yaml:5:15
      |
    5 |     topology: gone.yaml
      |               ^^^^^^^^^ this file, relative to the spec
      |
      = note: the topology of group `b`, named by `groups[1].topology`
      = help: check the path given to `--topology` or the spec's `topology:` key
    ");
    let run = numaplan_in(dir.path(), &["compile", "flat.yaml"]);
    assert_eq!(run.code, 3);
    insta::assert_snapshot!(run.stderr, @"
    error[E0300]: cannot read topology file `gone.yaml`: No such file or directory (os error 2)
     --> flat.yaml:2:11
      |
    2 | topology: gone.yaml
      |           ^^^^^^^^^ this file, relative to the spec
      |
      = help: check the path given to `--topology` or the spec's `topology:` key
    ");
}

/// A YAML file whose aliases would expand it far past its size (an alias bomb) is too large
/// (E0441), refused where the expansion crosses the bound, before anything expands it.
#[test]
fn an_alias_bomb_is_too_large_where_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("gpus: none\nx-0: &a0 [a, b, c, d, e, f, g, h, i]\n");
    for i in 1..8 {
        let alias = format!("*a{}", i - 1);
        text += &format!("x-{i}: &a{i} [{}]\n", [alias.as_str(); 9].join(", "));
    }
    std::fs::write(dir.path().join("bomb.yaml"), text).unwrap();
    let run = numaplan_in(dir.path(), &["compile", "bomb.yaml"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @"
    error[E0441]: job spec is too large: its aliases expand it to 14763 nodes or more by here, more than a document of its size may have (11732): an alias bomb, or anchors nested too deep
     --> bomb.yaml:6:16
      |
    6 | x-4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]
      |                ^ here
      |
      = note: numaplan counts what aliases (`*name`) stand for before it expands them
      = help: write the values out, or reuse fewer, smaller anchors
    ");
}

#[test]
fn nccl_topology_file_is_not_hwloc() {
    let run = numaplan(&[
        "topo",
        "--topology",
        "tests/data/xml/aws-p4d.24xlarge--p4d-24xl-topo.xml",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0303]: `tests/data/xml/aws-p4d.24xlarge--p4d-24xl-topo.xml` is an NCCL topology file (root element `<system>`), not an hwloc topology export
     --> tests/data/xml/aws-p4d.24xlarge--p4d-24xl-topo.xml
     = help: export the machine with `lstopo --of xml machine.xml` on it, or write a numaplan fixture (see examples/topologies/)
    ");
}

#[test]
fn a_newer_hwloc_xml_format_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("hwloc4.xml");
    std::fs::write(
        &xml,
        "<?xml version=\"1.0\"?>\n<topology version=\"4.0\">\n  <object type=\"Machine\"/>\n</topology>\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["topo", "--topology", "hwloc4.xml"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0304]: `hwloc4.xml` is hwloc XML version 4.0, which numaplan cannot import
     --> hwloc4.xml
     = note: numaplan reads the hwloc 1.x, 2.x and 3.x XML formats (with hwloc 2.x, translating 3.x)
     = help: re-export with hwloc 2.x or 3.x (`lstopo --of xml`), or with `--export-xml-flags v2` where the newer lstopo offers it
    ");
}

#[test]
fn unwritable_output_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = repo().join("examples/topologies/lumi-g.yaml");
    let run = numaplan_in(
        dir.path(),
        &[
            "topo",
            "--topology",
            fixture.to_str().unwrap(),
            "-o",
            "missing-dir/node.txt",
        ],
    );
    assert_eq!(run.code, 3);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0400]: cannot write `missing-dir/node.txt`: No such file or directory (os error 2)
     = note: nothing was written: the previous file, if any, is unchanged
     = help: check that the directory exists and is writable
    ");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn failed_conversion_keeps_the_previous_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("node.yaml"), "previous\n").unwrap();
    let bad = repo().join("tests/cases/topology/err_truncated.yaml");
    let run = numaplan_in(
        dir.path(),
        &[
            "topo",
            "--topology",
            bad.to_str().unwrap(),
            "--format",
            "yaml",
            "-o",
            "node.yaml",
        ],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("node.yaml")).unwrap(),
        "previous\n"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn unknown_error_code() {
    let run = numaplan(&["codes", "E302"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0401]: unknown error code `E302`
     = help: did you mean `E0302`? `numaplan codes` lists every code
    ");
}

#[test]
fn json_message_format() {
    let run = numaplan(&[
        "--message-format",
        "json",
        "topo",
        "--topology",
        "tests/cases/topology/err_unknown_key.yaml",
    ]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(v["code"], "E0302");
    assert_eq!(v["line"], 6);
    assert_eq!(v["column"], 3);
    assert_eq!(v["help"], "did you mean `l3_groups`?");
}

#[test]
fn every_code_is_explained_and_listed() {
    let listed = numaplan(&["codes"]).ok();
    let codes = numaplan::diag::codes::ALL;
    // One line per code, each starting with its code: no explanation breaks the table.
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), codes.len(), "{listed}");
    for ((code, _), line) in codes.iter().zip(&lines) {
        assert!(line.starts_with(&format!("{code}  ")), "{line}");
        let text = numaplan(&["codes", code.0]).ok();
        assert!(text.starts_with(&format!("{code}: ")), "{text}");
    }
}

/// A code means one thing: no two problems share a number, so `numaplan codes CODE` explains
/// the problem that was reported. A topology given as a job spec once said E0105, whose
/// explanation was the other E0105's (a file that is not UTF-8).
#[test]
fn each_code_has_one_meaning_and_explains_what_was_reported() {
    let codes = numaplan::diag::codes::ALL;
    let mut seen = std::collections::BTreeSet::new();
    for (code, _) in codes {
        assert!(seen.insert(code.0), "{code} has two meanings");
    }
    let run = numaplan(&["compile", "examples/topologies/nvidia-dgx-a100.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let reported = run
        .stderr
        .strip_prefix("error[")
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert_eq!(reported, "E0106", "{}", run.stderr);
    let explained = numaplan(&["codes", reported]).ok();
    assert!(
        explained.contains("of another kind than the command takes")
            && explained.contains("(formerly part of E0105)"),
        "{explained}"
    );
    let utf8 = numaplan(&["codes", "E0105"]).ok();
    assert!(utf8.contains("is not UTF-8 text"), "{utf8}");
}

#[test]
fn missing_job_spec_is_an_environment_error() {
    let run = numaplan(&[
        "compile",
        "no/such/job.yaml",
        "--topology",
        "examples/topologies/lumi-g.yaml",
    ]);
    assert_eq!(run.code, 3);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0100]: cannot read job spec `no/such/job.yaml`: No such file or directory (os error 2)
     = help: check the path of the job spec
    ");
}

#[test]
fn failed_compile_leaves_the_previous_plan() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plan.yaml"), "previous\n").unwrap();
    let job = repo().join("tests/cases/compile/err_min_cores.yaml");
    let topo = repo().join("examples/topologies/aws-p4d.24xlarge.yaml");
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            job.to_str().unwrap(),
            "--topology",
            topo.to_str().unwrap(),
            "-o",
            "plan.yaml",
        ],
    );
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap(),
        "previous\n"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// On a machine where discovery finds no GPU (this CI runner, a login node, a container without
/// the devices), a spec that asks for GPUs outright fails and says why none were found; one
/// that does not (no `gpus:`) still compiles CPU-only ranks.
#[test]
fn gpus_asked_for_on_a_machine_without_any() {
    let topo: serde_json::Value =
        serde_json::from_str(&common::numaplan(&["topo", "--format", "json"]).ok()).unwrap();
    if topo["gpus"].as_array().is_some_and(|g| !g.is_empty()) {
        eprintln!("skipped: this machine has GPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (spec, asked) in [
        ("gpus: all\n", "`gpus: all` asks for GPUs"),
        ("gpus: visible\n", "`gpus: visible` asks for GPUs"),
        (
            "ranks_per_node: 1\ngpus_per_rank: 1\n",
            "`gpus_per_rank: 1` asks for GPUs",
        ),
    ] {
        std::fs::write(dir.path().join("job.yaml"), spec).unwrap();
        let run = common::numaplan_in(dir.path(), &["compile", "job.yaml"]);
        assert_eq!(run.code, 1, "{spec}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!("error[E0201]: {asked}")),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains(
                "was discovered with hwloc on this machine: hwloc found no GPU on its PCI bus"
            ),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("write `gpus: none` for CPU-only ranks"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "no plan: {}", run.stdout);
    }
    std::fs::write(dir.path().join("job.yaml"), "ranks_per_node: 1\n").unwrap();
    let run = common::numaplan_in(dir.path(), &["compile", "job.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = common::numaplan_in(dir.path(), &["compile", "job.yaml", "--set", "gpus=none"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The `--set` a help line suggests, run on the case at hand, works.
fn suggested_set(stderr: &str) -> String {
    let help = stderr
        .lines()
        .find(|l| l.contains("= help:"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let at = help
        .find("`--set ")
        .unwrap_or_else(|| panic!("no --set in {help}"));
    help[at + 1..]
        .split('`')
        .next()
        .unwrap()
        .trim_start_matches("--set ")
        .to_string()
}

/// More ranks than this machine has cores: the help offers sharing the cores (no idle node to
/// borrow here), and `exec` with that `--set` runs.
#[test]
fn help_for_too_many_ranks_is_a_command_that_works() {
    let cpus = std::thread::available_parallelism().unwrap().get() * 4;
    let dir = tempfile::tempdir().unwrap();
    let n = cpus.to_string();
    let run = numaplan_in(
        dir.path(),
        &["exec", "--nproc-per-node", &n, "--dry-run", "--", "true"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("error[E0205]"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("cpu.scope"),
        "every node runs ranks: {}",
        run.stderr
    );
    let set = suggested_set(&run.stderr);
    assert_eq!(set, "cpu.policy=node");
    let run = numaplan_in(
        dir.path(),
        &[
            "exec",
            "--nproc-per-node",
            &n,
            "--set",
            &set,
            "--dry-run",
            "--",
            "true",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // A node short of `min_cores` beside idle nodes: borrowing one is offered, and works.
    let topo = repo().join("examples/topologies/nvidia-dgx-a100.yaml");
    let topo = topo.to_str().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: [0]\ncpu: {min_cores: 40}\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["compile", "job.yaml", "--topology", topo]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("ask for fewer cores per rank (`cpu.min_cores`)"),
        "{}",
        run.stderr
    );
    let set = suggested_set(&run.stderr);
    assert_eq!(set, "cpu.scope=socket");
    let run = numaplan_in(
        dir.path(),
        &["compile", "job.yaml", "--topology", topo, "--set", &set],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// A launcher whose world size is not the plan's: the recompile the help suggests makes `bind`
/// accept the same launcher; a local size that differs is named first.
#[test]
fn help_for_a_launcher_of_another_size_is_a_command_that_works() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "gpus: none\nranks_per_node: 2\ncpu: {policy: node}\n",
    )
    .unwrap();
    let bind = |plan: &str, env: &[(&str, &str)]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(["bind", plan, "--", "true"])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env_remove("LOCAL_WORLD_SIZE")
            .env_remove("SLURM_LOCALID")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for world in ["1", "4"] {
        let env = [("LOCAL_RANK", "0"), ("WORLD_SIZE", world)];
        let (code, stderr) = bind("job.yaml", &env);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.starts_with("error[E0434]"), "{stderr}");
        assert!(!stderr.contains("nodes=0"), "{stderr}");
        let set = suggested_set(&stderr);
        numaplan_in(
            dir.path(),
            &["compile", "job.yaml", "--set", &set, "-o", "fixed.yaml"],
        )
        .ok();
        let (code, stderr) = bind("fixed.yaml", &env);
        assert_eq!(code, Some(0), "WORLD_SIZE={world}, `--set {set}`: {stderr}");
    }
    let (code, stderr) = bind(
        "job.yaml",
        &[
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("WORLD_SIZE", "4"),
        ],
    );
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with(
            "error[E0420]: the launcher runs 4 local ranks (LOCAL_WORLD_SIZE), and the plan has 2"
        ),
        "{stderr}"
    );
    assert_eq!(suggested_set(&stderr), "ranks_per_node=4");
}

/// `exec` with neither a spec nor a program says where the program goes: after `--`, and
/// never "the plan" or "the job spec", which the user did not give. With a spec that has no
/// command, it says the spec's `command` or `--`.
#[test]
fn exec_without_a_program_says_where_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    // Given no `--` (bare `exec` too), the message speaks of none; before, "nothing follows
    // `--`".
    for args in [
        &["exec", "--nproc-per-node", "1"][..],
        &["exec"],
        &["exec", "--"],
    ] {
        let bare = numaplan_in(dir.path(), args);
        assert_eq!(bare.code, 1, "{}", bare.stderr);
        assert!(
            bare.stderr
                .starts_with("error[E0402]: no program for the ranks to run\n"),
            "{args:?}: {}",
            bare.stderr
        );
    }
    let run = numaplan_in(dir.path(), &["exec", "--nproc-per-node", "1"]);
    assert!(!run.stderr.contains("the plan"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("give the program each rank runs after `--`"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("job spec"), "{}", run.stderr);
    let run = numaplan_in(dir.path(), &["exec", "--nproc-per-node", "1", "--", "true"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(
        dir.path().join("job.yaml"),
        "ranks_per_node: 1\ngpus: none\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["exec", "job.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stderr, @"
    error[E0402]: the plan has no `command` for the ranks to run
     = help: add the program each rank runs to the job spec, e.g. `command: [python, train.py]`, or give it after `--`
    ");
}

/// A numaplan file of another kind than the command takes says what it is and which command
/// takes it (E0106), instead of "unknown key `numaplan_plan`": a plan given to `compile`, a
/// fixture given as a job spec (to `compile` and `exec`), a plan or a job spec given as
/// `--topology`.
#[test]
fn a_file_of_another_kind_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo().join("examples/topologies/aws-p4d.24xlarge.yaml"),
        dir.path().join("machine.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "topology: machine.yaml\ncommand: [python, train.py]\n",
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    for (name, args) in [
        ("plan_as_spec", &["compile", "plan.yaml"][..]),
        ("fixture_as_spec", &["compile", "machine.yaml"][..]),
        (
            "fixture_to_exec",
            &["exec", "machine.yaml", "--dry-run"][..],
        ),
        ("plan_as_topology", &["topo", "--topology", "plan.yaml"][..]),
        (
            "spec_as_topology",
            &["compile", "job.yaml", "--topology", "job.yaml"][..],
        ),
    ] {
        let run = numaplan_in(dir.path(), args);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{name}");
        insta::assert_snapshot!(format!("wrong_kind_{name}"), run.stderr);
    }
}

/// A hand-edited plan whose field contradicts the rest is refused, the error at that field's
/// own line (rank 3's, not rank 0's): a core count its CPUs cannot have, torchrun numbering of
/// another job, and, where the plan's machine is at hand (`explain`, `diff`), a home node that
/// holds none of the rank's CPUs or a core count the machine does not give them. Before, all
/// were accepted and `diff` said "no change" beside "cores per rank 8-8 -> 7-8".
#[test]
fn a_hand_edited_plan_is_refused_at_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo().join("examples/topologies/nvidia-dgx-a100.yaml"),
        dir.path().join("machine.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "topology: machine.yaml\ncommand: [python, train.py]\nnodes: 2\n",
    )
    .unwrap();
    numaplan_in(dir.path(), &["compile", "job.yaml", "-o", "plan.yaml"]).ok();
    let plan = std::fs::read_to_string(dir.path().join("plan.yaml")).unwrap();
    // Rank 3's entry, edited once per case.
    let at = plan.find("- rank: 3\n").unwrap();
    let edit = |from: &str, to: &str| {
        let (head, rank3) = plan.split_at(at);
        assert!(rank3.contains(from), "{from}");
        format!("{head}{}", rank3.replacen(from, to, 1))
    };
    for (name, from, to, command) in [
        ("cores_past_cpus", "cores: 8", "cores: 70", "exec"),
        ("world_size", "WORLD_SIZE: '16'", "WORLD_SIZE: '8'", "exec"),
        (
            "local_world_size",
            "LOCAL_WORLD_SIZE: '8'",
            "LOCAL_WORLD_SIZE: '4'",
            "exec",
        ),
        ("cores_not_the_machines", "cores: 8", "cores: 7", "explain"),
        ("numa_node", "numa_node: 1", "numa_node: 5", "explain"),
        ("cores_in_diff", "cores: 8", "cores: 7", "diff"),
    ] {
        std::fs::write(dir.path().join("edited.yaml"), edit(from, to)).unwrap();
        let args: &[&str] = match command {
            "exec" => &["exec", "edited.yaml", "--dry-run"],
            "explain" => &["explain", "edited.yaml"],
            _ => &["diff", "plan.yaml", "edited.yaml"],
        };
        let run = numaplan_in(dir.path(), args);
        assert_eq!(run.code, 1, "{name}: {}{}", run.stdout, run.stderr);
        insta::assert_snapshot!(format!("hand_edited_{name}"), run.stderr);
    }
}

/// An input that never ends (`/dev/zero`) or is larger than any of numaplan's files is
/// refused once 128 MiB are read (E0441, bad input: exit 1), whichever command reads it as
/// whatever it is. Before, `compile /dev/zero` read until memory ran out.
#[test]
fn an_endless_input_is_refused() {
    for args in [
        &["compile", "/dev/zero"][..],
        &["exec", "/dev/zero", "--dry-run"][..],
        &["topo", "--topology", "/dev/zero"][..],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{args:?} kept reading");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error[E0441]: ") && stderr.contains("larger than 128 MiB"),
            "{args:?}: {stderr}"
        );
    }
}

/// `exec --nproc-per-node gpu` without a spec on a machine without GPUs asks for GPUs outright:
/// E0201 in the flag's words, never one CPU-only rank planned in silence (as before).
#[test]
fn one_rank_per_gpu_without_gpus_is_an_error() {
    let run = numaplan(&[
        "exec",
        "--nproc-per-node",
        "gpu",
        "--topology",
        "examples/topologies/amd-epyc-genoa-9654-2s.yaml",
        "--dry-run",
        "--",
        "true",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!(run.stderr);
}
