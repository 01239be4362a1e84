"""Fixtures of the PyTorch tests (scripts/torch-test.sh runs them with the real PyTorch from
PyPI and the numaplan wheel installed): a two-rank plan for this machine and a way to run
torchrun and read what each rank saw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import numaplan

HERE = Path(__file__).resolve().parent

# What a launcher around this test run may have set: each test sets the ones it means.
LAUNCHER_VARIABLES = [
    "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
    "MASTER_PORT", "SLURM_LOCALID", "SLURM_PROCID", "OMPI_COMM_WORLD_LOCAL_RANK",
    "NUMAPLAN_PLAN", "NUMAPLAN_LOCAL_RANK", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
]


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in LAUNCHER_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")


class Plan:
    """A two-rank plan for this machine (one CPU each, memory bound), and its JSON form."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        job = directory / "job.yaml"
        job.write_text("gpus: none\nranks_per_node: 2\ncpu: {policy: exclusive}\n"
                       "memory: {policy: bind}\n")
        self.path = directory / "plan.yaml"
        binary = numaplan.executable()
        subprocess.run([binary, "compile", str(job), "-o", str(self.path)], check=True)
        out = subprocess.run([binary, "compile", str(job), "--format", "json"], check=True,
                             capture_output=True, text=True)
        self.json: Dict[str, Any] = json.loads(out.stdout)

    def rank(self, local_rank: int) -> Dict[str, Any]:
        return self.json["ranks"][local_rank]

    def threads(self, local_rank: int) -> int:
        return int(self.rank(local_rank)["env"]["OMP_NUM_THREADS"])


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    return Plan(tmp_path)


def torchrun() -> List[str]:
    """This environment's torchrun, with numaplan's binary directory first on PATH."""
    return [str(Path(sys.executable).parent / "torchrun")]


def environment(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(numaplan.executable()).parent}:{Path(sys.executable).parent}:" \
        + env.get("PATH", "")
    env["PYTHONPATH"] = str(HERE)
    env.update(extra)
    return env


def seen(directory: Path) -> Dict[int, Dict[str, Any]]:
    """What each rank wrote (`probe.py`, `torchmod.py`), by its global rank."""
    out = {}
    for f in directory.glob("seen-*.json"):
        record = json.loads(f.read_text())
        out[record["rank"]] = record
    return out


def run(args: List[str], cwd: Path, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=environment(**env), capture_output=True, text=True,
                          timeout=timeout)
    return done


def have_tool(name: str) -> bool:
    return shutil.which(name) is not None
