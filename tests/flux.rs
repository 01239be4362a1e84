//! `--emit flux` (docs/flux.md) without Flux, which is packaged neither for Debian nor for
//! PyPI: its `-o cpu-affinity=map:` list read as Flux's job shell reads it (flux-core 0.88,
//! src/shell/affinity.c: every entry form, the cyclic reuse, an empty or zero set refused)
//! gives every local task exactly its plan rank's CPUs on the Tioga export and the LUMI-G and
//! DGX A100 fixtures; and under a stand-in `flux` (tests/flux/flux) that starts the tasks with
//! Flux's variables and the map's affinity, `numaplan bind` finds every task's rank, gives it
//! its rank's GPUs (the DGX A100's order trap included) and binds it as planned, and the script
//! starts no task unless every rank can be bound.

mod common;

use std::path::Path;
use std::process::Command;

use common::{numaplan, numaplan_in, repo};
use numaplan::cpuset::CpuSet;

/// Flux's `map:LIST` for `tasks` local tasks: entries `;`-separated, one per local task, reused
/// cyclically; an entry starting `0x` with a `,` is an hwloc bitmask (32-bit words, the most
/// significant first), one starting `0x` without is a taskset mask, anything else an hwloc list.
/// An entry of no CPU, one that does not parse, or no entry, fails the job.
fn flux_map(list: &str, tasks: usize) -> Result<Vec<CpuSet>, String> {
    let entries: Vec<&str> = list.split(';').filter(|e| !e.is_empty()).collect();
    if entries.is_empty() {
        return Err("no cpusets found".into());
    }
    let sets = entries
        .iter()
        .map(|e| {
            let set = entry(e).ok_or_else(|| format!("cpuset {e} is invalid"))?;
            match set.is_empty() {
                true => Err(format!("cpuset {e} contains no cores")),
                false => Ok(set),
            }
        })
        .collect::<Result<Vec<CpuSet>, String>>()?;
    Ok((0..tasks).map(|t| sets[t % sets.len()].clone()).collect())
}

fn entry(e: &str) -> Option<CpuSet> {
    let bits = |word: &str, base: u32, set: &mut CpuSet| -> Option<()> {
        let value = u128::from_str_radix(word, 16).ok()?;
        (0..128)
            .filter(|b| value >> b & 1 == 1)
            .for_each(|b| set.insert(base + b));
        Some(())
    };
    match e.strip_prefix("0x") {
        Some(words) if words.contains(',') => {
            let mut set = CpuSet::new();
            let words: Vec<&str> = words
                .split(',')
                .map(|w| w.trim_start_matches("0x"))
                .collect();
            for (i, word) in words.iter().rev().enumerate() {
                bits(word, 32 * i as u32, &mut set)?;
            }
            Some(set)
        }
        Some(mask) => {
            let mut set = CpuSet::new();
            bits(mask, 0, &mut set)?;
            Some(set)
        }
        None => e.parse().ok(),
    }
}

/// Flux's own test cases (t/t2600-job-shell-rcalc.t and the shell's affinity tests): the map
/// reader above reads as Flux reads.
#[test]
fn the_map_reader_reads_as_flux_reads() {
    let set = |s: &str| s.parse::<CpuSet>().unwrap();
    assert_eq!(flux_map("1;0", 2).unwrap(), [set("1"), set("0")]);
    assert_eq!(flux_map("0x1;0x2", 2).unwrap(), [set("0"), set("1")]);
    assert_eq!(
        flux_map("0xf,0xf;0-3", 2).unwrap(),
        [set("0-3,32-35"), set("0-3")]
    );
    assert_eq!(flux_map("1", 2).unwrap(), [set("1"), set("1")], "reused");
    assert!(flux_map("0x0;1", 2).is_err());
    assert!(flux_map("", 2).is_err());
    assert!(flux_map("a-b", 1).is_err());
}

/// The `-o cpu-affinity=map:...` word of a generated script.
fn map_of(script: &str) -> String {
    let word = script
        .split("'cpu-affinity=map:")
        .nth(1)
        .expect("the script binds by a map");
    word[..word.find('\'').unwrap()].to_string()
}

/// The plan as JSON.
fn plan_json(args: &[&str]) -> serde_json::Value {
    let args = [&["compile"][..], args, &["--format", "json"]].concat();
    serde_json::from_str(&numaplan(&args).ok()).unwrap()
}

/// On the Tioga export (mpibind, Flux's own binding there) and the LUMI-G and DGX A100
/// fixtures, the map read as Flux reads it gives every local task its plan rank's CPUs.
#[test]
fn the_map_gives_every_local_task_its_ranks_cpus() {
    for spec in [
        "examples/tioga-mpibind.yaml",
        "examples/lumi-g.yaml",
        "examples/dgx-a100-llama.yaml",
    ] {
        let script = numaplan(&["compile", spec, "--emit", "flux"]).ok();
        let plan = plan_json(&[spec]);
        let ranks = plan["ranks"].as_array().unwrap();
        let tasks = flux_map(&map_of(&script), ranks.len()).unwrap();
        for (task, rank) in tasks.iter().zip(ranks) {
            assert_eq!(task.to_string(), rank["cpus"], "{spec}");
        }
        assert!(script.contains("-o gpu-affinity=off -o mpibind=off"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.sh"), &script).unwrap();
        common::check_script(&dir.path().join("run.sh"));
    }
}

/// The CPUs in a `Cpus_allowed_list:` line a task wrote.
fn allowed(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    text.trim()
        .trim_start_matches("Cpus_allowed_list:")
        .trim()
        .to_string()
}

/// A stand-in `flux` on PATH and the real numaplan, for a script in `dir`.
fn flux_env(cmd: &mut Command, dir: &Path) {
    let path = format!(
        "{}:{}",
        repo().join("tests/flux").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path)
        .env("NUMAPLAN", env!("CARGO_BIN_EXE_numaplan"))
        .env("FLUX_STANDIN_DIR", dir.join("flux-state"))
        .current_dir(dir);
}

/// Compiles `spec` (in `dir`) with `--emit flux` and runs the script under the stand-in:
/// the script's text, its exit status and what it said. Its output goes to files, not pipes,
/// so that a task left running cannot hold the test up.
fn run_flux_script(dir: &Path, spec: &str) -> (String, std::process::ExitStatus, String) {
    let text = numaplan_in(dir, &["compile", spec, "--emit", "flux"]).ok();
    let script = dir.join("run.sh");
    std::fs::write(&script, &text).unwrap();
    let stderr = dir.join("run.stderr");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap());
    flux_env(&mut cmd, dir);
    let status = cmd.status().unwrap();
    (text, status, std::fs::read_to_string(&stderr).unwrap())
}

/// Under the stand-in, `numaplan bind --dry-run` of each task finds its rank from Flux's
/// variables and gives it its rank's GPUs: on the DGX A100, whose GPUs 0-7 hang off NUMA nodes
/// 3, 3, 1, 1, 7, 7, 5, 5, each task sees its own GPU (`visible: own`) whatever Flux would
/// have numbered (its GPU binding is off). The node is not a DGX: `--force`, and a dry run,
/// which says what it would bind before it refuses the CPUs this machine lacks.
#[test]
fn bind_under_flux_gives_every_task_its_ranks_gpus() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        format!(
            "topology: {}/examples/topologies/nvidia-dgx-a100.yaml\ngpu: {{visible: own}}\n",
            repo().display()
        ),
    )
    .unwrap();
    let script = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "flux"]).ok();
    let plan: serde_json::Value = serde_json::from_str(
        &numaplan_in(dir.path(), &["compile", "job.yaml", "--format", "json"]).ok(),
    )
    .unwrap();
    // The script's job options, and each task's dry run as JSON into a file of its own; no
    // map here (this machine has not the DGX's CPUs).
    let job = script
        .lines()
        .skip_while(|l| !l.starts_with("job=("))
        .take_while(|l| !l.starts_with("command="))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(&format!("-o 'cpu-affinity=map:{}'", map_of(&script)), "");
    let run = format!(
        "{job}\nflux run \"${{job[@]}}\" sh -c '\"$NUMAPLAN\" bind --dry-run --force --format json env:NUMAPLAN_PLAN > task-$FLUX_TASK_RANK.json 2>/dev/null || true'"
    );
    let plan_text = numaplan_in(dir.path(), &["compile", "job.yaml"]).ok();
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &run]).env("NUMAPLAN_PLAN", &plan_text);
    flux_env(&mut cmd, dir.path());
    assert!(cmd.status().unwrap().success());
    for (i, rank) in plan["ranks"].as_array().unwrap().iter().enumerate() {
        let text = std::fs::read_to_string(dir.path().join(format!("task-{i}.json"))).unwrap();
        let report: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(report["local_rank"], i, "{report}");
        let gpu = rank["gpus"][0].to_string();
        assert_eq!(report["env"]["CUDA_VISIBLE_DEVICES"], gpu, "{report}");
        assert_eq!(report["env"]["RANK"], i.to_string(), "{report}");
    }
}

/// A job of two ranks on this machine, run by the script under the stand-in: every task bound
/// to its rank's CPUs, numbered from Flux's variables; a plan no node here can run starts no
/// task at all.
#[test]
fn the_script_binds_every_task_as_planned_or_starts_none() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = "gpus: none\nranks_per_node: 2\ncpu: {policy: exclusive}\ncommand: [sh, -c, 'grep Cpus_allowed_list /proc/self/status > out-$RANK-$LOCAL_RANK-$WORLD_SIZE']\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let plan = plan_json(&[dir.path().join("job.yaml").to_str().unwrap()]);
    let (_, status, stderr) = run_flux_script(dir.path(), "job.yaml");
    assert!(status.success(), "{stderr}");
    for r in 0..2 {
        let got = dir.path().join(format!("out-{r}-{r}-2"));
        assert_eq!(
            allowed(&got),
            plan["ranks"][r]["cpus"].as_str().unwrap(),
            "rank {r}"
        );
    }
    // A plan of another machine (a DGX A100's): the first job fails (its tasks' CPUs are not
    // this node's; `bind --dry-run` would refuse the node), so the program's job never starts.
    std::fs::write(
        dir.path().join("dgx.yaml"),
        format!(
            "topology: {}/examples/topologies/nvidia-dgx-a100.yaml\ncommand: [touch, started]\n",
            repo().display()
        ),
    )
    .unwrap();
    let (_, status, stderr) = run_flux_script(dir.path(), "dgx.yaml");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no rank's program was started"), "{stderr}");
    assert!(!dir.path().join("started").exists());
}

/// A job of two groups on this machine: one Flux job per group under the stand-in, every task
/// numbered in the whole job (RANK 0 and 1, WORLD_SIZE 2) and bound to its rank's CPUs.
#[test]
fn a_job_of_groups_is_a_flux_job_per_group_numbered_as_one() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = "gpus: none\ncpu: {policy: exclusive, allowed: '0'}\ncommand: [sh, -c, 'grep Cpus_allowed_list /proc/self/status > out-$RANK-$WORLD_SIZE-$NUMAPLAN_GROUP']\ngroups:\n- {name: a, ranks_per_node: 1}\n- {name: b, ranks_per_node: 1, cpu: {allowed: '1'}}\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let (text, status, stderr) = run_flux_script(dir.path(), "job.yaml");
    assert_eq!(text.matches("flux\" submit --flags=waitable").count(), 2);
    assert!(status.success(), "{stderr}");
    for (rank, group, cpus) in [(0, "a", "0"), (1, "b", "1")] {
        let file = dir.path().join(format!("out-{rank}-2-{group}"));
        assert_eq!(allowed(&file), cpus, "group {group}");
    }
}

/// When one group's job fails, the script says so, cancels the other group's job (its task,
/// still running, is stopped) and exits 1, not 0.
#[test]
fn a_failing_group_cancels_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let job = "gpus: none\ngroups:\n- {name: fails, command: [sh, -c, 'sleep 1; exit 3']}\n- {name: runs, command: [sh, -c, 'echo $$ > runs.pid; exec sleep 60']}\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let (_, status, stderr) = run_flux_script(dir.path(), "job.yaml");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a group's job failed: cancelling the others"),
        "{stderr}"
    );
    let pid = std::fs::read_to_string(dir.path().join("runs.pid")).unwrap();
    let proc = format!("/proc/{}", pid.trim());
    // The cancelled task is signalled, not waited for: give it a moment to go.
    for _ in 0..100 {
        let gone = std::fs::read_to_string(format!("{proc}/stat"))
            .map_or(true, |stat| stat.split_whitespace().nth(2) == Some("Z"));
        if gone {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the other group's task ({proc}) still runs after the script exited");
}

/// Every example's Flux script, reviewed as a snapshot: the Tioga export's (mpibind, one node)
/// and the job of three groups (one Flux job per group).
#[test]
fn the_flux_scripts_of_the_examples() {
    for example in ["tioga-mpibind", "rl-groups"] {
        let spec = format!("examples/{example}.yaml");
        let script = numaplan(&["compile", &spec, "--emit", "flux", "-o", "-"]).ok();
        // The plan embedded in it is the plan's own snapshot's.
        let start = script.find("NUMAPLAN_PLAN=$(cat").unwrap();
        let end = script.find("export NUMAPLAN_PLAN").unwrap();
        let shown = format!("{}(the plan)\n{}", &script[..start], &script[end..]);
        insta::assert_snapshot!(format!("flux_{example}"), shown);
    }
}

/// A job of several groups whose groups name no nodes of their own is W0222, one per group;
/// `flux:` naming them silences it. `flux.extra` may add words to the job's line, but none
/// that sets its resources, tasks or binding (E0103, at the word).
#[test]
fn what_flux_is_told_is_checked() {
    let run = numaplan(&["compile", "examples/rl-groups.yaml", "--emit", "flux"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stderr.matches("warning[W0222]").count(),
        3,
        "{}",
        run.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(repo().join("examples/rl-groups.yaml")).unwrap();
    let placed = spec
        .replace(
            "topologies/",
            &format!("{}/examples/topologies/", repo().display()),
        )
        .replace("\n  - name: ", "\n  - flux: {queue: q}\n    name: ");
    std::fs::write(dir.path().join("job.yaml"), &placed).unwrap();
    let run = numaplan_in(dir.path(), &["compile", "job.yaml", "--emit", "flux"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("W0222"), "{}", run.stderr);
    // Each group's job, and the batch job of them all.
    assert_eq!(run.stdout.matches("--queue=q").count(), 3 + 1);
    let bad = "gpus: none\ncommand: [x]\nflux: {extra: [-t, 2h, -o, pty, -o, 'cpu-affinity=off', -N, '2']}\n";
    std::fs::write(dir.path().join("bad.yaml"), bad).unwrap();
    let run = numaplan_in(dir.path(), &["compile", "bad.yaml", "--emit", "flux"]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr, @"
    error[E0103]: `cpu-affinity=off` would set the job's resources, tasks or binding, which the `--emit flux` script sets from the plan
     --> bad.yaml:3:37
      |
    3 | flux: {extra: [-t, 2h, -o, pty, -o, 'cpu-affinity=off', -N, '2']}
      |                                     ^^^^^^^^^^^^^^^^^^ the script's own
      |
      = help: remove it: the script asks for the plan's nodes, tasks and cores, and binds each task with `-o cpu-affinity=map:` and `numaplan bind`
    error[E0103]: `-N` would set the job's resources, tasks or binding, which the `--emit flux` script sets from the plan
     --> bad.yaml:3:57
      |
    3 | flux: {extra: [-t, 2h, -o, pty, -o, 'cpu-affinity=off', -N, '2']}
      |                                                         ^^ the script's own
      |
      = help: remove it: the script asks for the plan's nodes, tasks and cores, and binds each task with `-o cpu-affinity=map:` and `numaplan bind`
    ");
    // Every form of what the script sets is refused; what it does not set passes through.
    let extra_is = |words: &str| {
        let spec = format!("gpus: none\ncommand: [x]\nflux: {{extra: [{words}]}}\n");
        std::fs::write(dir.path().join("extra.yaml"), spec).unwrap();
        numaplan_in(dir.path(), &["compile", "extra.yaml", "--emit", "flux"]).code
    };
    for refused in [
        "-N2",
        "'--nodes=2'",
        "-c4",
        "-g1",
        "--cores, '16'",
        "'--gpus-per-node=4'",
        "--tasks-per-core, '2'",
        "'--taskmap=cyclic'",
        "'-ompibind=on'",
        "--setopt, 'gpu-affinity=per-task'",
        "'--setopt=per-resource.type=core'",
    ] {
        assert_eq!(extra_is(refused), 1, "{refused}");
    }
    for passed in ["-t, 2h", "'--setopt=pty'", "'--job-name=n'", "-q, pdebug"] {
        assert_eq!(extra_is(passed), 0, "{passed}");
    }
}
