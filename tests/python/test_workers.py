"""GPU workers that someone else started (Ray actors, vLLM/SGLang-style worker pools) bind as the
plan's rank of the GPU they see: `numaplan.bind_worker()` and `numaplan.bind(local_rank="gpu")`,
read back from /proc in the worker. The plan is for a 4-GPU fixture that fits any test host
(CPUs 0 and 1, GPUs 0-1 on node 0 and 2-3 on node 1), bound with `force=True` (the documented
way to bind on a node of another shape: this host has no GPU)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import warnings
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

import numaplan
import ranks
from conftest import REPO, Plan

SPAWN = multiprocessing.get_context("spawn")
FOUR_GPUS = REPO / "tests/cases/topologies/two-cpus-four-gpus.yaml"
# Each GPU's node's CPU in the fixture.
CPU_OF_GPU = {0: "0", 1: "0", 2: "1", 3: "1"}


@pytest.fixture
def four_gpus(tmp_path: Path) -> Plan:
    return Plan(tmp_path, f"topology: {FOUR_GPUS}\ncpu: {{policy: node}}\ngpu: {{visible: own}}\n")


@pytest.fixture(autouse=True)
def no_gpu_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in numaplan._bind.VISIBILITY + ("NUMAPLAN_LOCAL_RANK",):
        monkeypatch.delenv(var, raising=False)


def worker(queue: Any, plan: str, env: Dict[str, str]) -> None:
    """A pool's worker: its launcher made one GPU visible; it binds by it."""
    os.environ.update(env)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rank: Optional[numaplan.Rank] = numaplan.bind_worker(plan, force=True, quiet=True)
        except numaplan.Error as e:
            queue.put({"error": e.code, "message": str(e)})
            return
    queue.put({
        "visible": env.get("CUDA_VISIBLE_DEVICES"),
        "rank": None if rank is None else rank.local_rank,
        "gpus": None if rank is None else list(rank.gpus),
        "cpus": ranks.status()["Cpus_allowed_list"],
        "env_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "warnings": [str(w.message) for w in caught],
    })


def run_workers(plan: Plan, envs):
    queue = SPAWN.Queue()
    children = [SPAWN.Process(target=worker, args=(queue, str(plan.path), e)) for e in envs]
    for child in children:
        child.start()
    results = [queue.get(timeout=60) for _ in children]
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    return results


def test_each_worker_binds_as_the_rank_of_the_gpu_it_sees(four_gpus: Plan):
    envs = [{"CUDA_VISIBLE_DEVICES": str(g)} for g in (3, 0, 2, 1)]
    results = run_workers(four_gpus, envs)
    for r in results:
        gpu = int(r["visible"])
        assert r["rank"] == gpu, r
        assert r["gpus"] == [gpu]
        assert r["cpus"] == CPU_OF_GPU[gpu], f"GPU {gpu}'s node's CPU, read back from /proc"
        assert r["env_visible"] == str(gpu), "the worker's own variable stays"
    assert sorted(r["rank"] for r in results) == [0, 1, 2, 3]


def test_a_worker_by_uuid_binds_too(four_gpus: Plan):
    [r] = run_workers(four_gpus, [{"CUDA_VISIBLE_DEVICES": "GPU-2b7d3333"}])
    assert (r["rank"], r["cpus"]) == (3, "1")


@pytest.mark.parametrize("hidden", [{}, {"CUDA_VISIBLE_DEVICES": "-1"},
                                    {"CUDA_VISIBLE_DEVICES": "NoDevFiles"},
                                    {"ROCR_VISIBLE_DEVICES": ""}])
def test_a_worker_that_sees_no_gpu_is_left_alone_with_a_warning(
    four_gpus: Plan, hidden: Dict[str, str]
):
    # `CUDA_VISIBLE_DEVICES=-1` is the usual "no GPU"; before, it raised E0435.
    [r] = run_workers(four_gpus, [hidden])
    assert r["rank"] is None, r
    assert r["cpus"] == ranks.status()["Cpus_allowed_list"], "not bound"
    assert any("no GPU is visible to this process" in w and "left unbound" in w
               for w in r["warnings"]), r


def test_a_worker_that_sees_two_gpus_is_an_error_that_lists_the_ranks(four_gpus: Plan):
    [r] = run_workers(four_gpus, [{"CUDA_VISIBLE_DEVICES": "0,1"}])
    assert r["error"] == "E0436"
    assert "0: GPU 0; 1: GPU 1; 2: GPU 2; 3: GPU 3" in r["message"]


def test_bind_takes_gpu_as_its_local_rank_and_from_numaplan_local_rank(
    four_gpus: Plan, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    rank = numaplan.resolve(four_gpus.path, local_rank="gpu", force=True)
    assert (rank.local_rank, rank.via) == (2, "CUDA_VISIBLE_DEVICES=2")
    monkeypatch.setenv("NUMAPLAN_LOCAL_RANK", "gpu")
    assert numaplan.resolve(four_gpus.path, force=True).local_rank == 2
    # A local rank as read from os.environ, digits in a string, is a local rank.
    assert numaplan.resolve(four_gpus.path, local_rank="1", force=True).local_rank == 1
    with pytest.raises(numaplan.Error) as e:
        numaplan.resolve(four_gpus.path, local_rank="first")
    assert e.value.code == "E0432"
    assert 'or "gpu"' in e.value.message


class _Actor:
    """A Ray actor given one GPU (`num_gpus=1`): Ray sets its CUDA_VISIBLE_DEVICES."""

    def __init__(self, plan: str) -> None:
        self.rank = numaplan.bind(plan, local_rank="gpu", force=True, quiet=True)

    def report(self) -> Dict[str, Any]:
        return {
            "visible": os.environ["CUDA_VISIBLE_DEVICES"],
            "rank": self.rank.local_rank,
            "gpus": list(self.rank.gpus),
            "cpus": ranks.status()["Cpus_allowed_list"],
            "pid": os.getpid(),
        }


def test_ray_actors_each_bind_the_rank_of_their_gpu(four_gpus: Plan):
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed in this environment (scripts/python-test.sh "
                      "installs it from PyPI; it printed why it could not)")
    ray.init(num_cpus=4, num_gpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    try:
        actor = ray.remote(num_gpus=1, num_cpus=0)(_Actor)
        actors = [actor.remote(str(four_gpus.path)) for _ in range(4)]
        results = ray.get([a.report.remote() for a in actors], timeout=120)
        # The actors were bound in-process, after Ray started them: verify finds each by its
        # mark file (Ray titles an actor's process `ray::_Actor`).
        verified = subprocess.run(
            [numaplan.executable(), "verify", str(four_gpus.path), "--match", "ray::_Actor",
             "--format", "json"], capture_output=True, text=True)
    finally:
        ray.shutdown()
    report = json.loads(verified.stdout)
    assert {r["rank"]: r["pid"] for r in report["ranks"]} == {
        r["rank"]: r["pid"] for r in results}, report
    assert report["missing"] == [], report
    for r in results:
        gpu = int(r["visible"])
        assert (r["rank"], r["gpus"], r["cpus"]) == (gpu, [gpu], CPU_OF_GPU[gpu]), r
    assert sorted(r["rank"] for r in results) == [0, 1, 2, 3], "each actor its own GPU's rank"
