"""`numaplan.spawn`: `mp.spawn` for callables, every rank bound before the callable runs, and
failures propagated as `mp.spawn` propagates them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import numaplan
import ranks
from conftest import Plan


@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_every_rank_runs_bound(two_ranks: Plan, tmp_path: Path, start_method: str):
    out = tmp_path / "out"
    out.mkdir()
    before = os.sched_getaffinity(0)
    assert numaplan.spawn(ranks.report_to, two_ranks.path, args=(str(out),),
                          start_method=start_method) is None
    assert os.sched_getaffinity(0) == before, "the parent's affinity changed"
    reports = {int(p.name): json.loads(p.read_text()) for p in out.iterdir()}
    assert sorted(reports) == [0, 1], "nprocs defaults to the plan's ranks per node"
    for index, report in reports.items():
        planned = two_ranks.rank(index)
        assert report["cpus"] == planned["cpus"]
        assert report["touched"]["policy"] == f"bind:{planned['memory']['nodes']}"
        assert report["env"]["LOCAL_RANK"] == str(index)


def test_a_rank_that_binds_itself_again_is_bound_the_same(two_ranks: Plan, tmp_path: Path):
    # Code written for mp.spawn calls numaplan.bind in the callable: already bound as that rank,
    # it binds again (the other ranks' CPUs being outside its affinity is no error).
    numaplan.spawn(ranks.bind_again, two_ranks.path, args=(str(two_ranks.path), str(tmp_path)))
    for index in (0, 1):
        report = json.loads((tmp_path / str(index)).read_text())
        assert report["cpus"] == report["planned"] == two_ranks.rank(index)["cpus"]


def stopped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_raising_rank_stops_the_others(two_ranks: Plan, tmp_path: Path):
    tmp_path = tmp_path / "pids"
    tmp_path.mkdir()
    with pytest.raises(numaplan.ProcessRaisedException) as raised:
        numaplan.spawn(ranks.fail_in, two_ranks.path, args=(1, "raise", str(tmp_path)))
    error = raised.value
    assert error.index == 1 and error.code == "E0414"
    assert "ValueError: rank 1 gives up" in error.traceback
    assert "terminated with the following error" in str(error)
    assert stopped(int((tmp_path / "0").read_text()))


@pytest.mark.parametrize("how,exit_code,signal_name", [("exit", 3, None), ("signal", -9, "SIGKILL")])
def test_an_exit_status_is_propagated(two_ranks: Plan, tmp_path: Path, how, exit_code, signal_name):
    tmp_path = tmp_path / "pids"
    tmp_path.mkdir()
    with pytest.raises(numaplan.ProcessExitedException) as exited:
        numaplan.spawn(ranks.fail_in, two_ranks.path, args=(0, how, str(tmp_path)))
    error = exited.value
    assert (error.index, error.exit_code, error.signal_name) == (0, exit_code, signal_name)
    assert isinstance(error, numaplan.Error) and error.code == "E0414"
    assert stopped(int((tmp_path / "1").read_text()))


def test_a_rank_that_cannot_bind_fails_with_the_binding_error(two_ranks: Plan):
    with pytest.raises(numaplan.ProcessRaisedException) as raised:
        numaplan.spawn(ranks.succeed, two_ranks.path, nprocs=3)
    assert raised.value.index == 2
    assert raised.value.code == "E0433", "the child's numaplan.Error code is kept"


def test_a_bad_plan_raises_before_anything_starts(tmp_path: Path):
    plan = tmp_path / "broken.yaml"
    plan.write_text("numaplan_plan: 1\n")
    with pytest.raises(numaplan.Error) as error:
        numaplan.spawn(ranks.succeed, plan)
    assert error.value.code == "E0406"
    assert not isinstance(error.value, numaplan.ProcessRaisedException)


def test_join_false_returns_a_context(two_ranks: Plan):
    context = numaplan.spawn(ranks.succeed, two_ranks.path, join=False)
    assert len(context.pids()) == 2
    while not context.join(timeout=30):
        pass
    assert [p.exitcode for p in context.processes] == [0, 0]
