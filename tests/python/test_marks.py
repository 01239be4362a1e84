"""`numaplan verify --match` finds every rank bound in-process: `numaplan.bind()` cannot change
the environment `/proc/PID/environ` shows (the one at `execve`), so it writes the rank's mark
to `/tmp/numaplan-UID/rank-PID`, and verify reads it. Before, such ranks were skipped as "a
launcher or a helper" and verify failed with E0417. Ray actors: tests/python/test_workers.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numaplan
import ranks
from conftest import Plan

BIND_AND_HOLD = """
import os, sys, time, numaplan
numaplan.bind(sys.argv[1], int(sys.argv[2]))
open(os.path.join(sys.argv[3], "ready-" + sys.argv[2]), "w").close()
while not os.path.exists(os.path.join(sys.argv[3], "stop")):
    time.sleep(0.02)
"""


def verify(plan: Path, name: str) -> Tuple[int, Dict[str, Any]]:
    out = subprocess.run([numaplan.executable(), "verify", str(plan), "--match", name,
                          "--format", "json"], capture_output=True, text=True)
    return out.returncode, json.loads(out.stdout) if out.stdout else {"error": out.stderr}


def wait_for(paths: List[Path]) -> None:
    deadline = time.monotonic() + 60
    while not all(p.exists() for p in paths):
        assert time.monotonic() < deadline, f"never appeared: {paths}"
        time.sleep(0.02)


def found(report: Dict[str, Any]) -> Dict[int, int]:
    """local rank -> pid, of the ranks verify found."""
    return {r["rank"]: r["pid"] for r in report["ranks"]}


def test_two_processes_that_call_bind_are_found(two_ranks: Plan, tmp_path: Path):
    marker = f"numaplan-bound-{os.getpid()}"
    procs = [subprocess.Popen([sys.executable, "-c", BIND_AND_HOLD, str(two_ranks.path),
                               str(rank), str(tmp_path), marker])
             for rank in (0, 1)]
    try:
        wait_for([tmp_path / f"ready-{rank}" for rank in (0, 1)])
        code, report = verify(two_ranks.path, marker)
    finally:
        (tmp_path / "stop").touch()
        for p in procs:
            p.wait(60)
    assert code == 0, report
    assert found(report) == {0: procs[0].pid, 1: procs[1].pid}, report
    assert report["missing"] == [] and report["skipped"] == [], report
    # A rank that ends removes its mark.
    marks = Path(f"/tmp/numaplan-{os.getuid()}")
    assert not any((marks / f"rank-{p.pid}").exists() for p in procs)


def test_spawn_children_are_found(two_ranks: Plan, tmp_path: Path):
    context = numaplan.spawn(ranks.hold, two_ranks.path, args=(str(tmp_path),), join=False)
    assert context is not None
    try:
        wait_for([tmp_path / f"ready-{rank}" for rank in (0, 1)])
        # spawn's children run `python -c 'from multiprocessing.spawn import spawn_main...'`.
        code, report = verify(two_ranks.path, "spawn_main")
    finally:
        (tmp_path / "stop").touch()
        while not context.join():
            pass
    assert code == 0, report
    assert found(report) == dict(enumerate(context.pids())), report
