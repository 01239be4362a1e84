"""numaplan on PyTorch's own paths, with the real PyTorch (CPU use only): torchrun with and
without virtual local ranks and with restarts, callables that import torch at their top under
mp.spawn, start_processes, elastic_launch and numaplan.spawn, a gloo all_reduce across bound
ranks, two `--emit torchrun` scripts at once, and `verify --match` beside torchrun's agent."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import torch.multiprocessing as mp

import numaplan
import torchmod
from conftest import Plan, environment, run, seen, torchrun

PROBE = str(Path(__file__).resolve().parent / "probe.py")


def assert_bound_as_planned(plan: Plan, out: Path, torch_loaded: bool = False) -> None:
    """Every rank on its planned CPUs (every thread of it) with its memory policy; torch's pool
    as large as the plan's OMP_NUM_THREADS."""
    records = seen(out)
    assert sorted(records) == [0, 1], records
    for rank, record in records.items():
        planned = plan.rank(rank)
        assert record["cpus"] == planned["cpus"], (rank, record)
        assert record["policy"] == f"bind:{planned['memory']['nodes']}", (rank, record)
        assert set(record["threads"].values()) == {planned["cpus"]}, (rank, record)
        if torch_loaded:
            assert record["torch_threads"] == plan.threads(rank), (rank, record)


@pytest.mark.parametrize("virtual", [False, True])
def test_torchrun_binds_every_rank_as_itself(plan: Plan, tmp_path: Path, virtual: bool) -> None:
    flags = ["--virtual-local-rank"] if virtual else []
    done = run(torchrun() + ["--standalone", "--nproc-per-node", "2", *flags, "--no-python",
                             "numaplan", "bind", str(plan.path), "--", "python", PROBE],
               tmp_path, OUT=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert_bound_as_planned(plan, tmp_path)
    if virtual:
        # torchrun's own numbering is kept: every worker still sees LOCAL_RANK=0.
        assert {r["local_rank"] for r in seen(tmp_path).values()} == {"0"}


def test_a_restarted_rank_is_bound_again(plan: Plan, tmp_path: Path) -> None:
    done = run(torchrun() + ["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                             "--monitor-interval", "0.2", "--no-python", "numaplan", "bind",
                             str(plan.path), "--", "python", PROBE, "--fail-first"],
               tmp_path, OUT=str(tmp_path))
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        for attempt in (0, 1):
            record = json.loads((tmp_path / f"seen-{rank}.{attempt}.json").read_text())
            assert record["cpus"] == plan.rank(rank)["cpus"], (rank, attempt, record)
            assert record["policy"] == f"bind:{plan.rank(rank)['memory']['nodes']}", record


def test_mp_spawn_callable_that_imported_torch(plan: Plan, tmp_path: Path) -> None:
    mp.spawn(torchmod.spawned, args=(str(plan.path), str(tmp_path)), nprocs=2)
    assert_bound_as_planned(plan, tmp_path, torch_loaded=True)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_start_processes_callable_that_imported_torch(plan: Plan, tmp_path: Path,
                                                      method: str) -> None:
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, start_processes
    context = start_processes(
        name="numaplan", entrypoint=torchmod.spawned,
        args={i: (i, str(plan.path), str(tmp_path)) for i in range(2)},
        envs={i: {} for i in range(2)},
        logs_specs=DefaultLogsSpecs(log_dir=str(tmp_path / "logs")), start_method=method)
    result = context.wait()
    assert result is not None and not result.is_failed(), result
    assert_bound_as_planned(plan, tmp_path, torch_loaded=True)


def test_elastic_launch_callable_under_torchruns_variables(plan: Plan, tmp_path: Path) -> None:
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2, rdzv_backend="c10d",
                          rdzv_endpoint="localhost:0", run_id=str(uuid.uuid4()), max_restarts=0,
                          start_method="spawn", monitor_interval=0.2)
    elastic_launch(config, torchmod.launched)(str(plan.path), str(tmp_path))
    assert_bound_as_planned(plan, tmp_path, torch_loaded=True)
    # The README's `rank.env["RANK"]`: the launcher's variables are in the rank's environment.
    assert {r["rank_env_rank"] for r in seen(tmp_path).values()} == {"0", "1"}


def test_numaplan_spawn_binds_before_the_module_imports_torch(plan: Plan, tmp_path: Path) -> None:
    numaplan.spawn(torchmod.bound, str(plan.path), args=(str(tmp_path),))
    assert_bound_as_planned(plan, tmp_path, torch_loaded=True)
    for rank, record in seen(tmp_path).items():
        assert record["imported_on"] == plan.rank(rank)["cpus"], record


def test_gloo_all_reduce_across_bound_ranks(plan: Plan, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    mp.spawn(torchmod.all_reduce, args=(str(plan.path), str(tmp_path), port), nprocs=2)
    assert {r["sum"] for r in seen(tmp_path).values()} == {3}
    assert_bound_as_planned(plan, tmp_path, torch_loaded=True)
    # numaplan.check_binding() after the gloo init: true as bound, false once moved, naming
    # the CPU the rank was moved to.
    for record in seen(tmp_path).values():
        assert record["after_init"] is True, record
        assert record["moved"] is False, record
        assert any(f"CPUs {record['moved_to']} outside" in p for p in record["moved_problems"]), \
            record


def test_two_torchrun_scripts_on_one_node_both_finish(plan: Plan, tmp_path: Path) -> None:
    binary = numaplan.executable()
    job = tmp_path / "job.yaml"
    subprocess.run([binary, "compile", str(job), "--emit", "torchrun", "-o", "run.sh"],
                   cwd=tmp_path, check=True)
    outs = [tmp_path / "a", tmp_path / "b"]
    jobs = []
    for out in outs:
        out.mkdir()
        jobs.append(subprocess.Popen(["./run.sh", "--", "python", PROBE, "--sleep", "1"],
                                     cwd=tmp_path, env=environment(OUT=str(out)),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for j in jobs:
        _, err = j.communicate(timeout=240)
        assert j.returncode == 0, err
    for out in outs:
        assert_bound_as_planned(plan, out)


def test_verify_match_skips_torchruns_agent(plan: Plan, tmp_path: Path) -> None:
    marker = f"probe-{uuid.uuid4().hex[:8]}"
    script = tmp_path / f"{marker}.py"
    script.write_text(Path(PROBE).read_text())
    job = subprocess.Popen(
        torchrun() + ["--standalone", "--nproc-per-node", "2", "--no-python", "numaplan", "bind",
                      str(plan.path), "--", "python", str(script), "--sleep", "20"],
        cwd=tmp_path, env=environment(OUT=str(tmp_path)), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(seen(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        verify = run([numaplan.executable(), "verify", str(plan.path), "--match", marker],
                     tmp_path, timeout=60)
        said = verify.stdout + verify.stderr
        assert verify.returncode == 0, said
        # torchrun's agent has the script's name in its argv and no local rank: skipped, said.
        assert said.count("skipped process") == 1 and "says no local rank" in said, said
        assert said.count(" ok\n") == 2, said
    finally:
        job.terminate()
        job.communicate(timeout=60)


def test_bind_after_import_torch_says_what_it_cannot_apply(tmp_path: Path) -> None:
    """OpenMP places arrive after torch's OpenMP runtime read its settings, and threads started
    before `bind()` keep their memory policy: `bind()` says so (and still sets torch's pool)."""
    job = tmp_path / "job.yaml"
    job.write_text("gpus: none\nranks_per_node: 2\ncpu: {policy: exclusive}\n"
                   "memory: {policy: bind}\nopenmp: {bind: close}\n")
    plan = tmp_path / "plan.yaml"
    subprocess.run([numaplan.executable(), "compile", str(job), "-o", str(plan)], check=True)
    code = ("import threading, time, warnings, torch, numaplan\n"
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
            "warnings.simplefilter('always')\n"
            f"rank = numaplan.bind({str(plan)!r}, local_rank=0)\n"
            "print(torch.get_num_threads(), rank.env['OMP_NUM_THREADS'])\n")
    done = run(["python", "-c", code], tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    threads, planned = done.stdout.split()
    assert threads == planned
    assert "OMP_PLACES, OMP_PROC_BIND" in done.stderr and "libgomp" in done.stderr, done.stderr
    assert "thread(s) started before bind() keep their memory policy" in done.stderr, done.stderr
    # Bound before torch is imported, nothing is said.
    early = ("import warnings, numaplan\nwarnings.simplefilter('always')\n"
             f"numaplan.bind({str(plan)!r}, local_rank=0)\nimport torch\n")
    done = run(["python", "-c", early], tmp_path, timeout=120)
    assert done.returncode == 0 and "NumaplanWarning" not in done.stderr, done.stderr


def test_two_agents_of_different_sizes_run_one_grouped_plan(tmp_path: Path) -> None:
    """A plan of two groups (`groups:`), one node each, on this machine: `pairs` runs 2 one-CPU
    ranks, `whole` 1 rank on both CPUs. Two torchrun agents, each from the plan's own script with
    its group, --nproc-per-node 2 and 1 and --node-rank in group order (static rendezvous):
    torchrun numbers the ranks over the unequal local world sizes as the plan does, and every
    worker is bound as its group plans it."""
    binary = numaplan.executable()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "job.yaml").write_text(
        f"gpus: none\nmemory: {{policy: none}}\nrendezvous: {{port: {port}}}\ngroups:\n"
        "  - {name: pairs, ranks_per_node: 2, cpu: {policy: exclusive}}\n"
        "  - {name: whole, ranks_per_node: 1, cpu: {policy: node}}\n")
    subprocess.run([binary, "compile", "job.yaml", "--emit", "torchrun", "-o", "run.sh"],
                   cwd=tmp_path, check=True)
    plan = json.loads(subprocess.run([binary, "compile", "job.yaml", "--format", "json"],
                                     cwd=tmp_path, check=True, capture_output=True,
                                     text=True).stdout)
    agents = []
    for group in ("pairs", "whole"):
        out = tmp_path / group
        out.mkdir()
        agents.append(subprocess.Popen(
            ["./run.sh", "--group", group, "--node-rank", "0", "--master-addr", "127.0.0.1",
             "--", "python", PROBE],
            cwd=tmp_path, env=environment(OUT=str(out)), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    for agent in agents:
        _, err = agent.communicate(timeout=240)
        assert agent.returncode == 0, err
    for entry in plan["groups"]:
        records = seen(tmp_path / entry["group"])
        expected = {entry["first_rank"] + r["local_rank"]: r for r in entry["ranks"]}
        assert sorted(records) == sorted(expected), (entry["group"], records)
        for rank, record in records.items():
            planned = expected[rank]
            assert record["cpus"] == planned["cpus"], (rank, record)
            assert record["env"]["RANK"] == str(rank), (rank, record)
            assert record["env"]["WORLD_SIZE"] == "3", (rank, record)
            assert record["local_rank"] == str(planned["local_rank"]), (rank, record)
