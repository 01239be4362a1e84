//! Regressions of the hardening pass (issue 16): each test reproduces one defect that fuzzing,
//! hostile arguments or fault injection found, through the real binary. The inputs that crashed
//! or stalled numaplan are also seeds of the fuzzer (tests/fuzz/seeds, tests/fuzz.rs).

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{numaplan, numaplan_in, repo};

const DGX: &str = "examples/topologies/nvidia-dgx-a100.yaml";

fn seed(name: &str) -> String {
    format!("tests/fuzz/seeds/{name}")
}

/// Compiles a seed spec for the DGX A100 fixture.
fn compile_seed(name: &str) -> common::Run {
    numaplan(&["compile", &seed(name), "--topology", DGX])
}

/// Runs `cmd` to its end, or kills it after `limit` and fails: a stall is the defect.
fn finishes_within(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// 1. Counts that multiply past their type: refused with the count named, before any
///    allocation, instead of a panic, an abort or `WORLD_SIZE: '0'`.
#[test]
fn huge_counts_are_refused_not_wrapped() {
    let run = compile_seed("spec-gpus-per-rank-overflow.yaml");
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0103]: `gpus_per_rank` is larger than 65536: more GPUs than a node can have
     --> tests/fuzz/seeds/spec-gpus-per-rank-overflow.yaml:2:16
      |
    2 | gpus_per_rank: 2147483648
      |                ^^^^^^^^^^ too large
      |
      = help: a rank takes at most the GPUs of its node
    ");
    let run = compile_seed("spec-ranks-per-node-huge.yaml");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error[E0103]: `ranks_per_node` is larger than 65536")
    );
    // 2^31 nodes of 8 ranks (one per NUMA node): the total is known only once the ranks are
    // formed.
    let run = compile_seed("spec-nodes-overflow.yaml");
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0215]: 2147483648 nodes x 8 ranks per node are 17179869184 ranks, more than `WORLD_SIZE` can count
     --> tests/fuzz/seeds/spec-nodes-overflow.yaml:1:8
      |
    1 | nodes: 2147483648
      |        ^^^^^^^^^^ `nodes`
      |
      = help: run fewer nodes, or set `ranks_per_node` lower
    ");
}

/// 2-4. XML that crashed hwloc or its bindings, or took seconds and a gigabyte: each ends in a
///      diagnostic with its line, never in a signal or a panic.
#[test]
fn hostile_xml_ends_in_a_diagnostic() {
    // A host bridge where a PCI bridge belongs panicked in hwlocality; the GPU below it is
    // still found.
    let run = numaplan(&[
        "topo",
        "--topology",
        &seed("xml-host-bridge-below-a-pci-bridge.xml"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("GPU 0: nvidia NVIDIA A100-SXM4-40GB (0000:01:00.0)")
    );

    let run = numaplan(&[
        "topo",
        "--topology",
        &seed("xml-l3-without-complete-cpuset.xml"),
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0305]: `tests/fuzz/seeds/xml-l3-without-complete-cpuset.xml` cannot be imported: the L3Cache object has a cpuset but no complete_cpuset
     --> tests/fuzz/seeds/xml-l3-without-complete-cpuset.xml:7:7
     = note: numaplan refuses such an object before hwloc reads it: hwloc would crash on it, or take minutes
     = help: re-export the topology with `lstopo --of xml`
    ");

    // The fixture loader's own error for the same CPU.
    let run = numaplan(&["topo", "--topology", &seed("xml-pu-os-index-huge.xml")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("CPU 2147483647 is larger than the supported maximum 65536"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("xml-pu-os-index-huge.xml:12:11"));

    // Past the pre-check, hwloc itself aborts (a failed assertion): the importing child dies,
    // numaplan reports it.
    let run = numaplan(&["topo", "--topology", &seed("xml-hwloc-assertion.xml")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("hwloc crashed reading it (signal 6")
            && run.stderr.contains("Assertion"),
        "{}",
        run.stderr
    );
}

/// 5. A second document, however it nests, is refused at its line before any parser runs;
///    collections nested past 100 levels are refused at once (libyaml took 16 s for 100,000);
///    JSON with trailing junk is said as JSON.
#[test]
fn yaml_that_was_quadratic_is_refused_at_once() {
    let run = compile_seed("spec-second-document-nested.yaml");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with(
            "error[E0101]: job spec is not well-formed YAML: a second YAML document starts here, and a file holds one\n --> tests/fuzz/seeds/spec-second-document-nested.yaml:2:1"
        ),
        "{}",
        run.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        "command: [x]\nenv: {{A: {}{}}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    for (file, kind) in [
        ("job.yaml", "compile"),
        ("fixture.yaml", "topo"),
        ("plan.yaml", "explain"),
    ] {
        let content = match kind {
            "compile" => deep.clone(),
            "topo" => format!("numaplan_topology: 1\nname: {}\n", "[".repeat(100_000)),
            _ => format!("numaplan_plan: 1\nname: {}\n", "[".repeat(100_000)),
        };
        std::fs::write(dir.path().join(file), content).unwrap();
        let args: Vec<&str> = match kind {
            "topo" => vec!["topo", "--topology", file],
            _ => vec![kind, file],
        };
        let out = finishes_within(
            Command::new(env!("CARGO_BIN_EXE_numaplan"))
                .args(&args)
                .current_dir(dir.path()),
            Duration::from_secs(10),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {stderr}");
        assert!(
            stderr.contains("collections nest more than 100 levels deep here"),
            "{kind}: {stderr}"
        );
        // The snippet shows the part of the 100,000-character line around the column.
        assert!(stderr.lines().all(|l| l.len() < 200), "{kind}: {stderr}");
    }
    let run = compile_seed("spec-json-trailing-junk.json");
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error[E0101]: job spec is not well-formed JSON: trailing characters\n"),
        "{}",
        run.stderr
    );
}

/// 5b. An error at the end of one long line (a 2 MB spec whose flow list ends in a value of
///     the wrong type) is reported in time linear in the input: measuring every scalar from the
///     start of its line took 15-30 s (issue 28). A quadratic path takes minutes here.
#[test]
fn an_error_at_the_end_of_a_long_line_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let zeros = vec!["0"; 700_000].join(", ");
    std::fs::write(
        dir.path().join("long.yaml"),
        format!("gpus: [{zeros}, x]\n"),
    )
    .unwrap();
    let quoted = vec!["'a''b'"; 250_000].join(", ");
    std::fs::write(
        dir.path().join("quoted.yaml"),
        format!("command: [{quoted}, {{x: 1}}]\n"),
    )
    .unwrap();
    let dgx = common::repo().join(DGX);
    for (file, at) in [
        ("long.yaml", "gpus[700000]"),
        ("quoted.yaml", "command[250000]"),
    ] {
        let out = finishes_within(
            Command::new(env!("CARGO_BIN_EXE_numaplan"))
                .args(["compile", file, "--topology"])
                .arg(&dgx)
                .current_dir(dir.path()),
            Duration::from_secs(30),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(at), "{file}: {stderr}");
    }
}

/// 8. Extra arguments that are not UTF-8 reach the rank byte for byte, as the bash launcher
///    passes them.
#[test]
fn non_utf8_arguments_reach_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'printf \"%s\" \"$1\" > \"$OUT/arg\"', rank]\ngpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml", "--"])
        .arg(OsStr::from_bytes(b"caf\xe9"))
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(dir.path().join("arg")).unwrap(), b"caf\xe9");
}

/// A variable in numaplan's own environment that is not UTF-8 (a latin-1 locale's leftovers)
/// crashed `exec` when it read the environment for its checks; it runs, and the rank inherits
/// the variable byte for byte, under `exec` and `bind` alike.
#[test]
fn a_non_utf8_environment_variable_reaches_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'printf \"%s\" \"$LEGACY\" > \"$OUT/$LOCAL_RANK\"']\ngpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    for (args, file) in [
        (&["exec", "job.yaml"][..], "0"),
        (&["bind", "--local-rank", "0", "job.yaml"][..], "0"),
    ] {
        let _ = std::fs::remove_file(dir.path().join(file));
        let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(args)
            .current_dir(dir.path())
            .env("OUT", dir.path())
            .env("LEGACY", OsStr::from_bytes(b"caf\xe9"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(
            std::fs::read(dir.path().join(file)).unwrap(),
            b"caf\xe9",
            "{args:?}"
        );
    }
}

/// 9. What no launcher can pass (one argument or variable over 128 KiB) is refused when the
///    plan is compiled, with the limit named. (What fits is carried: tests/emit_sbatch.rs,
///    tests/bind.rs.)
#[test]
fn arguments_past_the_kernel_limit_are_refused_at_compile() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(132_000);
    std::fs::write(
        dir.path().join("job.yaml"),
        format!("command: [run, {long}]\ngpus: none\nenv: {{BIG: {long}}}\n"),
    )
    .unwrap();
    let run = numaplan_in(
        dir.path(),
        &[
            "compile",
            "job.yaml",
            "--topology",
            repo().join(DGX).to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("`command[1]` is 132000 bytes long; the kernel starts no program with an argument over 128 KiB (131071 bytes, MAX_ARG_STRLEN)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`BIG={value}` is 132004 bytes long"),
        "{}",
        run.stderr
    );
}

/// 10. A JSON plan round-trips: a DEL byte (which YAML refuses raw) is read back, and JSON's
///     surrogate pairs are read as JSON reads them.
#[test]
fn json_plans_round_trip_control_and_astral_characters() {
    let dir = tempfile::tempdir().unwrap();
    let dgx = repo().join(DGX);
    let spec = repo().join(seed("spec-json-escapes.json"));
    let compile = |format: &str, out: &str| {
        numaplan_in(
            dir.path(),
            &[
                "compile",
                spec.to_str().unwrap(),
                "--topology",
                dgx.to_str().unwrap(),
                "--format",
                format,
                "-o",
                out,
            ],
        )
        .ok()
    };
    compile("json", "plan.json");
    compile("yaml", "plan.yaml");
    let json = std::fs::read_to_string(dir.path().join("plan.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed["ranks"][0]["env"]["DEL"], "a\x7fb");
    assert_eq!(parsed["ranks"][0]["env"]["BOOM"], "💥");
    // Read back by numaplan, the JSON plan is the YAML plan.
    let run = numaplan_in(
        dir.path(),
        &["diff", "plan.json", "plan.yaml", "--exit-code"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// 11. A NUL byte, which no argument or variable can carry, is refused at compile time (the
///     bash launcher dropped it, exec refused it only when starting).
#[test]
fn nul_bytes_are_refused_at_compile() {
    let run = compile_seed("spec-nul-bytes.yaml");
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r#"
    error[E0103]: the command contains a NUL byte, which no program argument can carry
     --> tests/fuzz/seeds/spec-nul-bytes.yaml:2:11
      |
    2 | command: ["a\0b"]
      |           ^^^^^^ NUL byte
      |
      = help: remove the NUL byte (`\0`)
    error[E0103]: the value of `A` contains a NUL byte, which no environment variable can carry
     --> tests/fuzz/seeds/spec-nul-bytes.yaml:3:10
      |
    3 | env: {A: "x\0y"}
      |          ^^^^^^ NUL byte
      |
      = help: remove the NUL byte (`\0`)
    "#);
}

/// `numaplan topo DGX -o out` in `dir`.
fn topo_to(dir: &Path, out: &str) {
    let fixture = repo().join(DGX);
    numaplan_in(
        dir,
        &["topo", "--topology", fixture.to_str().unwrap(), "-o", out],
    )
    .ok();
}

fn written(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains("package 0"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// 12. `-o` writes character devices and FIFOs in place (it replaced `/dev/null` with a file).
#[test]
fn output_to_a_device_or_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A null device of the test's own (mknod needs root, which CI has): a regression must not
    // replace the system's /dev/null.
    let null = d.join("null");
    let made = Command::new("mknod")
        .args(["-m", "666"])
        .arg(&null)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if made {
        topo_to(d, "null");
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    } else {
        eprintln!("mknod refused (not root): the character device case is not checked");
    }
    let fifo = d.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::read_to_string(fifo).unwrap()
    });
    topo_to(d, "fifo");
    assert!(reader.join().unwrap().contains("package 0"));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// 12. `-o` keeps an existing file's mode (0600 became 0644), and a link's target is replaced,
///     the link kept.
#[test]
fn output_keeps_the_mode_and_follows_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let private = d.join("private.txt");
    std::fs::write(&private, "old\n").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    topo_to(d, "private.txt");
    assert!(written(&private));
    assert_eq!(mode(&private), 0o600, "the mode is kept");

    std::os::unix::fs::symlink("private.txt", d.join("link.txt")).unwrap();
    std::fs::write(&private, "old\n").unwrap();
    topo_to(d, "link.txt");
    let link = std::fs::symlink_metadata(d.join("link.txt")).unwrap();
    assert!(link.file_type().is_symlink());
    assert!(written(&private));
}

/// 12. The temporary file's name cannot be guessed: a link planted at the old name
///     `.NAME.numaplan-PID.tmp` (a shell that plants it and then becomes numaplan, exec keeping
///     the PID, knows it) was written through and its target chmod'ed.
#[test]
fn output_never_writes_through_a_planted_link() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let status = Command::new("sh")
        .args([
            "-c",
            r#"ln -s victim ".out.txt.numaplan-$$.tmp" && exec "$0" topo --topology "$1" -o out.txt"#,
        ])
        .arg(env!("CARGO_BIN_EXE_numaplan"))
        .arg(repo().join(DGX))
        .current_dir(d)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(mode(&victim), 0o600);
    assert!(written(&d.join("out.txt")));
    let leftovers: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".numaplan.tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// 13. A GPU's model and the fingerprint do not depend on the order of its OS devices: the
///     vendor library's (RSMI here) is preferred to OpenCL's.
#[test]
fn gpu_information_does_not_depend_on_element_order() {
    let dir = tempfile::tempdir().unwrap();
    let xml = std::fs::read_to_string(repo().join(seed("xml-gpu-opencl-before-rsmi.xml"))).unwrap();
    let start = xml
        .find("          <object type=\"OSDev\" gp_index=\"12\"")
        .unwrap();
    let middle = xml
        .find("          <object type=\"OSDev\" gp_index=\"13\"")
        .unwrap();
    let end = xml[middle..].find("          </object>\n").unwrap()
        + middle
        + "          </object>\n".len();
    let swapped = format!(
        "{}{}{}{}",
        &xml[..start],
        &xml[middle..end],
        &xml[start..middle],
        &xml[end..]
    );
    assert_ne!(swapped, xml);
    let mut outputs = Vec::new();
    for (sub, text) in [("a", &xml), ("b", &swapped)] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        let file = dir.path().join(sub).join("machine.xml");
        std::fs::write(&file, text).unwrap();
        let fixture = numaplan(&[
            "topo",
            "--topology",
            file.to_str().unwrap(),
            "--format",
            "yaml",
        ])
        .ok();
        // The provenance names the file.
        outputs.push(fixture.replace(&format!("/{sub}/"), "/"));
    }
    assert_eq!(outputs[0], outputs[1]);
    assert!(
        outputs[0].contains("model: Radeon Instinct MI50 32GB"),
        "{}",
        outputs[0]
    );
}

/// 14. A spec that is not UTF-8 is an encoding error in the input (exit 1, with where the bad
///     byte is), not an unreadable file (exit 3, "check the path").
#[test]
fn a_non_utf8_spec_is_an_input_error() {
    let run = compile_seed("spec-latin1.yaml");
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @r"
    error[E0105]: job spec `tests/fuzz/seeds/spec-latin1.yaml` is not UTF-8 text: byte 24 (line 2, column 14) is not part of a UTF-8 character
     --> tests/fuzz/seeds/spec-latin1.yaml:2:14
     = help: save the file as UTF-8 (`iconv -f LATIN1 -t UTF-8`, for one)
    ");
    let run = numaplan(&["topo", "--topology", &seed("spec-latin1.yaml")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("error[E0105]: topology file"),
        "{}",
        run.stderr
    );
}

fn pgrep(pattern: &str) -> String {
    text(
        &Command::new("pgrep")
            .args(["-af", pattern])
            .output()
            .unwrap()
            .stdout,
    )
}

/// 6. A rank that leaves a daemon (`setsid`, outside its process group) holding its output does
///    not keep numaplan waiting: once every rank has exited, numaplan drains what is waiting,
///    says what holds the pipes, and ends.
#[test]
fn exec_does_not_wait_for_a_daemon_holding_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = format!("sleep 30.{}", std::process::id());
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "command: [sh, -c, 'echo before; setsid {daemon} & sleep 0.2; echo after; printf unterminated']\ngpus: none\nranks_per_node: 1\n"
        ),
    )
    .unwrap();
    let out = finishes_within(
        Command::new(env!("CARGO_BIN_EXE_numaplan"))
            .args(["exec", "job.yaml"])
            .current_dir(dir.path()),
        Duration::from_secs(10),
    );
    let still = pgrep(&daemon);
    let _ = Command::new("pkill").args(["-f", &daemon]).status();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[0] before\n[0] after\n[0] unterminated\n"
    );
    assert!(
        text(&out.stderr).contains(
            "numaplan: rank 0 exited, but a process it started outside its process group (a daemon) still holds its stdout and stderr; numaplan stopped relaying it"
        ),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !still.is_empty(),
        "the daemon left its session, out of numaplan's reach"
    );
}

/// 7. `kill -KILL numaplan`: the ranks die (PR_SET_PDEATHSIG), and so does what every rank
///    started in its process group (a data loader's workers), through the job's guard.
#[test]
fn sigkill_to_numaplan_takes_the_ranks_children_too() {
    killed_numaplan_leaves_no_worker(Kill::Numaplan);
}

/// The same when numaplan's whole process group is killed (`timeout -s KILL`, a batch system
/// ending a step): the guard is in a group of its own, so it lives to kill the ranks' groups.
#[test]
fn sigkill_to_numaplans_group_takes_the_ranks_children_too() {
    killed_numaplan_leaves_no_worker(Kill::NumaplansGroup);
}

#[derive(Clone, Copy)]
enum Kill {
    Numaplan = 1,
    NumaplansGroup = 2,
}

fn killed_numaplan_leaves_no_worker(kill: Kill) {
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    // Each test's own worker, which only the workers' command lines match.
    let worker = format!("sleep 31.{}{}", std::process::id(), kill as u8);
    let workers = || pgrep(&format!("^{worker}$"));
    std::fs::write(
        dir.path().join("job.yaml"),
        format!("command: [sh, -c, '{worker} & echo $! > \"$OUT/w.$LOCAL_RANK\"; mv \"$OUT/w.$LOCAL_RANK\" \"$OUT/worker-$LOCAL_RANK\"; sleep 60']\ngpus: none\nranks_per_node: 2\ncpu: {{policy: node}}\n"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml"])
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(0..2).all(|r| dir.path().join(format!("worker-{r}")).exists()) {
        assert!(
            Instant::now() < deadline,
            "the ranks did not start their workers"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(workers().lines().count(), 2, "{}", workers());
    match kill {
        Kill::Numaplan => child.kill().unwrap(),
        Kill::NumaplansGroup => {
            let status = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !workers().is_empty() {
        if Instant::now() > deadline {
            let _ = Command::new("pkill").args(["-f", &worker]).status();
            panic!("a rank's child outlived numaplan");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A normal end leaves nothing of the rank's process group, its guard included.
#[test]
fn guards_end_with_the_job() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "command: [sh, -c, 'ps -o pgid= -p $$ > \"$OUT/pgid\"']\ngpus: none\nranks_per_node: 1\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_numaplan"))
        .args(["exec", "job.yaml"])
        .current_dir(dir.path())
        .env("OUT", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pgid = std::fs::read_to_string(dir.path().join("pgid")).unwrap();
    let group = text(
        &Command::new("pgrep")
            .args(["-g", pgid.trim()])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(group.is_empty(), "left in the rank's group: {group}");
}

/// 5c. An object id hwloc never writes (`gp_index="-1"`) made hwloc's consistency check mark a
///     bitmap of 2^32 bits: 526 MB where lstopo takes 8 MB. Such a file is read as lstopo reads
///     it, without the check (said in a note), within a 300 MB address-space limit.
#[test]
fn an_object_id_of_minus_one_takes_no_runaway_memory() {
    let dir = tempfile::tempdir().unwrap();
    let xml =
        std::fs::read_to_string(common::repo().join("tests/data/xml/epyc-corona.xml")).unwrap();
    assert!(xml.contains(r#" gp_index="1">"#), "the machine's own id");
    let xml = xml.replacen(r#" gp_index="1">"#, r#" gp_index="-1">"#, 1);
    std::fs::write(dir.path().join("ids.xml"), xml).unwrap();
    let out = finishes_within(
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v 300000 && exec {} topo --topology ids.xml",
                env!("CARGO_BIN_EXE_numaplan")
            ))
            .current_dir(dir.path()),
        Duration::from_secs(30),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.starts_with("corona145: 2 packages"), "{stdout}");
    assert!(
        stdout.contains("note: hwloc's consistency check was skipped for `ids.xml`: its object ids (gp_index) are not hwloc's"),
        "{stdout}"
    );
}

/// The peak memory (KiB) and CPU time of running `cmd` to its end, and its output. The child
/// is reaped by `wait4`, which alone reports its usage (so std's `wait` is never called).
#[allow(clippy::zombie_processes)]
fn peak(cmd: &mut Command) -> (std::process::Output, u64, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let child = cmd
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage, which wait4 fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child's, not yet waited for; both pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let output = std::process::Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: std::fs::read(out).unwrap(),
        stderr: std::fs::read(err).unwrap(),
    };
    (
        output,
        usage.ru_maxrss as u64,
        time(usage.ru_utime) + time(usage.ru_stime),
    )
}

/// 13. Inputs the fuzzer found refused only after growing (issue 50): a malformed hwloc export
///     (527 MB before E0305), anchors nested 20 deep before a stray alias (1.34 GB), an alias
///     bomb of a plan (392 MB, as a file or in a variable), thousands of bad `allow_warnings`
///     (each diagnostic held the whole line: 216 MB for 6,000). Each is refused now within
///     64 MB and a second of CPU: the XML and `allow_warnings` with the error they always had,
///     the alias bombs with E0441 (too large), where they were E0101 (not well-formed YAML),
///     which they are not.
#[test]
fn inputs_that_grew_are_refused_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut nested = String::from("x-l0: &l0 [0]\n");
    for i in 1..=20 {
        nested += &format!("x-l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1);
    }
    let gpus: Vec<String> = (0..150_000).map(|i| (i % 8).to_string()).collect();
    nested += &format!("gpus: [{}, *]\n", gpus.join(", "));
    std::fs::write(dir.path().join("nested.yaml"), nested).unwrap();
    let codes: Vec<String> = (0..6000).map(|i| format!("X{i}")).collect();
    std::fs::write(
        dir.path().join("allow.yaml"),
        format!("gpus: none\nallow_warnings: [{}]\n", codes.join(", ")),
    )
    .unwrap();
    let bomb = repo().join("tests/fuzz/seeds/plan-anchor-bomb.yaml");
    let xml = repo().join("tests/data/unbounded/malformed-export-527mb.xml");
    let bin = env!("CARGO_BIN_EXE_numaplan");
    let cases: [(&str, Vec<String>, &str); 5] = [
        (
            "malformed XML",
            vec![
                "topo".into(),
                "--topology".into(),
                xml.display().to_string(),
            ],
            "error[E0305]",
        ),
        (
            "nested anchors",
            vec![
                "compile".into(),
                "nested.yaml".into(),
                "--topology".into(),
                repo().join(DGX).display().to_string(),
            ],
            "error[E0441]",
        ),
        (
            "alias bomb",
            vec!["explain".into(), bomb.display().to_string()],
            "error[E0441]",
        ),
        (
            "alias bomb in a variable",
            vec!["explain".into(), "env:BOMB".into()],
            "error[E0441]",
        ),
        (
            "6,000 bad allow_warnings",
            vec![
                "compile".into(),
                "allow.yaml".into(),
                "--topology".into(),
                repo().join(DGX).display().to_string(),
            ],
            "error[E0103]",
        ),
    ];
    for (what, args, error) in cases {
        let (out, kib, cpu) = peak(
            Command::new(bin)
                .args(&args)
                .current_dir(dir.path())
                .env("BOMB", std::fs::read_to_string(&bomb).unwrap()),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.starts_with(error), "{what}: {stderr}");
        assert!(kib < 64 * 1024, "{what}: {kib} KiB");
        assert!(cpu < Duration::from_secs(1), "{what}: {cpu:?}");
        assert!(
            stderr.len() < 4096,
            "{what}: {} bytes of diagnostics",
            stderr.len()
        );
    }
}

/// 14. A plan file is input too (issue 56): a machine of 2^64 GPUs panicked `exec` and `bind`
///     (capacity overflow), 2^32 aborted on a 96 GB allocation, 40 million took 2.2 GB and 5 s
///     before E0411, and `explain` and `diff` took such a plan. Every count of a plan is bounded
///     before anything is sized by it: each is refused with the count named, at its key, within
///     64 MB and a second, by every command that reads a plan. A spec that plans 65,535 ranks
///     with no command for them is refused before it is planned, by `exec` and a launch script
///     that needs the command; a spec's indented first key is named as such, not "more than one
///     document".
#[test]
fn plan_counts_and_a_missing_command_are_refused_before_any_cost() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_numaplan");
    let plan = numaplan(&["compile", "examples/dgx-a100-llama.yaml"]).ok();
    let grouped = numaplan(&["compile", "examples/rl-groups.yaml"]).ok();
    let huge = |from: &str, to: &str| {
        assert!(plan.contains(from), "the example plan has `{from}`");
        plan.replacen(from, to, 1)
    };
    // Where a replaced key's value is: the line of `key` (a whole line of the plan), the column
    // after its `: `.
    let at = |key: &str| {
        let line = plan.lines().position(|l| format!("{l}\n") == key).unwrap() + 1;
        format!("{line}:{}", key.find(": ").unwrap() + 3)
    };
    let plans = [
        (
            "gpus-2^64",
            huge("  gpus: 8\n", "  gpus: 18446744073709551615\n"),
            at("  gpus: 8\n"),
        ),
        (
            "gpus-2^32",
            huge("  gpus: 8\n", "  gpus: 4294967296\n"),
            at("  gpus: 8\n"),
        ),
        (
            "gpus-40M",
            huge("  gpus: 8\n", "  gpus: 40000000\n"),
            at("  gpus: 8\n"),
        ),
        (
            "cpus-2^32",
            huge("  cpus: 256\n", "  cpus: 4294967296\n"),
            at("  cpus: 256\n"),
        ),
        (
            "nodes-0",
            huge("nodes: 2\n", "nodes: 0\n"),
            at("nodes: 2\n"),
        ),
        (
            "world-2^33",
            grouped
                .replacen("world_size: ", "world_size: 8589934592 #", 1)
                .replacen("\n  nodes: 2\n", "\n  nodes: 4294967295\n", 1),
            String::new(),
        ),
    ];
    for (name, content, at) in &plans {
        let file = format!("{name}.yaml");
        std::fs::write(dir.path().join(&file), content).unwrap();
        for args in [
            vec!["bind", "--dry-run", "--local-rank", "0", &file],
            vec!["exec", "--dry-run", &file],
            vec!["explain", &file],
            vec!["diff", &file, &file],
            vec!["verify", &file, "--pids", "1"],
        ] {
            let (out, kib, cpu) = peak(Command::new(bin).args(&args).current_dir(dir.path()));
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name} {args:?}: {stderr}");
            assert!(
                stderr.starts_with("error[E0406]"),
                "{name} {args:?}: {stderr}"
            );
            assert!(stderr.contains(&format!("{file}:{at}")), "{name}: {stderr}");
            assert!(kib < 64 * 1024, "{name} {args:?}: {kib} KiB");
            assert!(cpu < Duration::from_secs(1), "{name} {args:?}: {cpu:?}");
        }
    }
    let run = numaplan_in(dir.path(), &["explain", "gpus-40M.yaml"]);
    insta::assert_snapshot!(run.stderr, @"
    error[E0406]: invalid plan: 40000000 GPUs: more than the 65536 a machine can have
      --> gpus-40M.yaml:14:9
       |
    14 |   gpus: 40000000
       |         ^^^^^^^^ in `topology.gpus`
       |
       = help: regenerate the plan with the command in its header
    ");

    let spec = format!(
        "topology: {}\nranks_per_node: 65535\ncpu: {{policy: mpibind}}\n",
        repo().join(DGX).display()
    );
    std::fs::write(dir.path().join("no-command.yaml"), spec).unwrap();
    for args in [
        vec!["exec", "no-command.yaml"],
        vec!["exec", "--dry-run", "no-command.yaml"],
        vec!["compile", "no-command.yaml", "--emit", "bash"],
        vec!["compile", "no-command.yaml", "--emit", "sbatch-exec"],
    ] {
        let (out, kib, cpu) = peak(Command::new(bin).args(&args).current_dir(dir.path()));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error[E0402]"), "{args:?}: {stderr}");
        assert!(kib < 64 * 1024, "{args:?}: {kib} KiB");
        assert!(cpu < Duration::from_secs(1), "{args:?}: {cpu:?}");
    }

    std::fs::write(
        dir.path().join("indented.yaml"),
        "  topology: machine.yaml\ncommand: [python, train.py]\n",
    )
    .unwrap();
    let run = numaplan_in(dir.path(), &["compile", "indented.yaml"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @"
    error[E0101]: job spec is not well-formed YAML: the first key `topology` is indented by 2 space(s), and `command` on line 2 by 0: a document's top-level keys start in one column
     --> indented.yaml:1:3
      |
    1 |   topology: machine.yaml
      |   ^^^^^^^^ here
      |
      = help: fix the YAML syntax here; a truncated file fails at its end
    ");
}
