//! `--emit sbatch`: the batch file for every example (snapshot, `bash -n`, shellcheck), and,
//! when `NUMAPLAN_SLURM=1` (scripts/test.sh starts a one-node Slurm from tests/slurm first),
//! a generated file submitted with `sbatch` whose tasks report what Slurm really applied.

mod common;

use std::path::Path;

use common::{numaplan, repo};

/// vLLM's and SGLang's examples have no command: the engine starts its own workers (`--emit
/// vllm`, `--emit sglang`, tests/engines.rs).
fn started_by_its_engine(path: &std::path::Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap();
    text.contains("\nengine: ") && !text.contains("\ncommand:")
}

#[test]
fn every_example_gets_a_clean_batch_file() {
    let dir = tempfile::tempdir().unwrap();
    insta::glob!("../examples", "*.yaml", |path| {
        if started_by_its_engine(path) {
            return;
        }
        let job = common::rel(path);
        let script = numaplan(&["compile", &job, "--emit", "sbatch"]).ok();
        let file = dir.path().join("job.sbatch");
        std::fs::write(&file, &script).unwrap();
        common::check_script(&file);
        insta::assert_snapshot!(script);
    });
}

/// `--emit sbatch-exec`: a clean file for every example whose embedded plan is the plan file
/// `compile` writes; the two-node DGX A100 example in full as a snapshot.
#[test]
fn every_example_gets_a_clean_exec_batch_file() {
    let dir = tempfile::tempdir().unwrap();
    for path in std::fs::read_dir(repo().join("examples")).unwrap() {
        let path = path.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") || started_by_its_engine(&path) {
            continue;
        }
        let job = common::rel(&path);
        let script = numaplan(&["compile", &job, "--emit", "sbatch-exec"]).ok();
        let file = dir.path().join("job.sbatch");
        std::fs::write(&file, &script).unwrap();
        common::check_script(&file);
        let plan = numaplan(&["compile", &job]).ok();
        let embedded = script
            .split_once("<<'END_OF_PLAN'\n")
            .and_then(|(_, rest)| rest.split_once("END_OF_PLAN\n)"))
            .map(|(plan, _)| plan)
            .unwrap();
        // The same plan; only the header's regenerate line names the batch file's command.
        let without_regenerate = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with("#   numaplan compile"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            without_regenerate(embedded),
            without_regenerate(&plan),
            "{job}"
        );
        if job == "examples/dgx-a100-llama.yaml" {
            insta::assert_snapshot!(script);
        }
    }
}

#[test]
fn lumi_masks_are_the_user_guides() {
    let script = numaplan(&["compile", "examples/lumi-g.yaml", "--emit", "sbatch"]).ok();
    // LUMI user guide: CPU_BIND="mask_cpu:fe000000000000,fe00000000000000,fe0000,fe000000,fe,fe00,fe00000000,fe0000000000"
    assert!(script.contains(
        "--cpu-bind=mask_cpu:0xfe000000000000,0xfe00000000000000,0xfe0000,0xfe000000,0xfe,0xfe00,0xfe00000000,0xfe0000000000"
    ));
}

fn slurm_enabled() -> bool {
    std::env::var("NUMAPLAN_SLURM").as_deref() == Ok("1")
}

/// Submits `file` with `OUT=out_dir` in its environment, waits (bounded) for it and asserts it
/// completed; returns its output file's text.
fn run_job(file: &Path, output: &Path, out_dir: &Path) -> String {
    let ended = common::sbatch(file, &[("OUT", out_dir.to_str().unwrap())]);
    let text = std::fs::read_to_string(output).unwrap_or_default();
    assert_eq!(ended.state, "COMPLETED", "job {}:\n{text}", ended.id);
    text
}

#[test]
fn sbatch_binds_every_task_as_planned() {
    if !slurm_enabled() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job.out");
    let job = format!(
        r#"name: numaplan-binding
command:
  - bash
  - -c
  - 'echo "TASK $LOCAL_RANK $RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(head -1 /proc/self/numa_maps | cut -d" " -f2) $NUMAPLAN_BOUND"'
gpus: none
ranks_per_node: 2
memory: {{policy: bind}}
rendezvous: {{port: 29511}}
slurm: {{verbose: true, time: "00:02:00", extra: ["--output={}"]}}
"#,
        out.display()
    );
    let plan = common::emit_here(dir.path(), &job, "sbatch", "job.sbatch");
    let text = run_job(&dir.path().join("job.sbatch"), &out, dir.path());
    // Each task carries its rank's mark, as exec's and bind's ranks do.
    let plan_id = common::plan_id(dir.path(), "job.yaml");
    for r in plan["ranks"].as_array().unwrap() {
        let local = r["local_rank"].as_u64().unwrap();
        // A one-node job meets at the plan's address, as `exec` (and `sbatch-exec`) does.
        let master = r["env"]["MASTER_ADDR"].as_str().unwrap();
        let expected = format!(
            "TASK {local} {local} 2 {master} 29511 {} bind:{} {plan_id}:{local}",
            r["cpus"].as_str().unwrap(),
            r["memory"]["nodes"].as_str().unwrap()
        );
        assert!(
            text.lines().any(|l| l == expected),
            "missing `{expected}` in:\n{text}"
        );
    }
    assert!(
        text.contains("cpu-bind=MASK"),
        "--cpu-bind=verbose shows what Slurm applied:\n{text}"
    );
}

#[test]
fn sbatch_passes_arguments_and_environment_byte_for_byte() {
    if !slurm_enabled() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job.out");
    let job = common::quoting_job(&format!(
        "slurm: {{time: \"00:02:00\", extra: [\"--output={}\"]}}\n",
        out.display()
    ));
    common::emit_here(dir.path(), &job, "sbatch", "job.sbatch");
    // sbatch exports the submitter's environment (OUT) to the tasks.
    run_job(&dir.path().join("job.sbatch"), &out, dir.path());
    assert_eq!(
        std::fs::read(dir.path().join("args-0")).unwrap(),
        common::nul_joined(common::NASTY.iter().copied())
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("env-0")).unwrap(),
        common::NASTY.join("|")
    );
    assert!(!dir.path().join("pwned").exists());
}

/// A 70 KB value on two ranks: the per-task function of `sbatch` would carry 140 KB and the
/// embedded plan of `sbatch-exec` more, past the kernel's 128 KiB limit for one variable (srun
/// failed with E2BIG). Each rank must get the value whole, and nothing of numaplan's transport.
#[test]
fn values_past_the_variable_limit_reach_every_task() {
    if !slurm_enabled() {
        return;
    }
    let big: String = (0..70_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    for kind in ["sbatch", "sbatch-exec"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("job.out");
        let job = format!(
            r#"command: [bash, -c, 'printf %s "$BIG" > "$OUT/big-$LOCAL_RANK"; compgen -v NUMAPLAN_VALUE_ > "$OUT/carriers-$LOCAL_RANK" || true']
gpus: none
ranks_per_node: 2
env: {{BIG: {big}}}
slurm: {{time: "00:02:00", extra: ["--output={}"]}}
"#,
            out.display()
        );
        let plan = common::emit_here(dir.path(), &job, kind, "job.sbatch");
        assert!(serde_json::to_string(&plan).unwrap().len() > 128 * 1024);
        let ended = common::sbatch(
            &dir.path().join("job.sbatch"),
            &[
                ("OUT", dir.path().to_str().unwrap()),
                ("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan")),
            ],
        );
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        assert_eq!(
            ended.state, "COMPLETED",
            "{kind}: job {}:\n{text}",
            ended.id
        );
        for rank in 0..2 {
            let got = std::fs::read_to_string(dir.path().join(format!("big-{rank}"))).unwrap();
            assert!(got == big, "{kind}: rank {rank} got {} bytes", got.len());
            let carriers = dir.path().join(format!("carriers-{rank}"));
            assert_eq!(std::fs::read_to_string(carriers).unwrap(), "", "{kind}");
        }
    }
}

/// Ranks that share CPUs (`node`, `socket`, `all`, `single`, ...) once asked Slurm for each
/// rank's whole set per task, which Slurm refuses ("More processors requested than
/// permitted"). Every policy family's batch file must start its step on the node it was
/// planned for, each task bound to its planned CPUs; a one-node job meets at the plan's
/// MASTER_ADDR, as under `sbatch-exec`.
#[test]
fn sbatch_runs_every_policy_family_on_its_node() {
    if !slurm_enabled() {
        return;
    }
    for (i, policy) in [
        "auto",
        "node",
        "socket",
        "exclusive",
        "core-complex",
        "all",
        "single",
        "single-unique",
        "unique-contiguous",
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("job.out");
        let job = format!(
            r#"command: [bash, -c, 'echo "TASK $LOCAL_RANK $MASTER_ADDR $(grep Cpus_allowed_list /proc/self/status | cut -f2)"']
gpus: none
ranks_per_node: 2
cpu: {{policy: {policy}}}
rendezvous: {{port: {}}}
slurm: {{time: "00:02:00", extra: ["--output={}"]}}
allow_warnings: [W0212]
"#,
            29620 + i,
            out.display()
        );
        let plan = common::emit_here(dir.path(), &job, "sbatch", "job.sbatch");
        let text = run_job(&dir.path().join("job.sbatch"), &out, dir.path());
        for r in plan["ranks"].as_array().unwrap() {
            let expected = format!(
                "TASK {} {} {}",
                r["local_rank"],
                r["env"]["MASTER_ADDR"].as_str().unwrap(),
                r["cpus"].as_str().unwrap()
            );
            assert!(
                text.lines().any(|l| l == expected),
                "{policy}: missing `{expected}` in:\n{text}"
            );
        }
    }
}
