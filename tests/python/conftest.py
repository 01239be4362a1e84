"""Fixtures of the Python package's tests (scripts/python-test.sh runs them with the wheel
installed in a fresh virtual environment): plans compiled for this machine by the installed
binary, and their JSON form to compare read-backs with."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest

import numaplan

REPO = Path(__file__).resolve().parents[2]

# Every launcher variable `numaplan bind` reads: a test sets the ones it means.
LAUNCHER_VARIABLES = [
    "LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "SLURM_LOCALID", "SLURM_PROCID",
    "SLURM_NTASKS", "SLURM_STEP_TASKS_PER_NODE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
    "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_RANK", "PMI_SIZE", "PALS_LOCAL_RANKID",
    "FLUX_TASK_LOCAL_ID", "NUMAPLAN_PLAN", "NUMAPLAN_BIN",
]

TWO_RANKS = """\
name: python-bind
gpus: none
ranks_per_node: 2
cpu:
  policy: exclusive
memory:
  policy: bind
"""


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in LAUNCHER_VARIABLES:
        monkeypatch.delenv(var, raising=False)


class Plan:
    """A plan compiled for this machine: its file, and its content as JSON."""

    def __init__(self, directory: Path, spec: str, name: str = "plan") -> None:
        self.job = directory / f"{name}.job.yaml"
        self.job.write_text(spec)
        self.path = directory / f"{name}.yaml"
        binary = numaplan.executable()
        subprocess.run([binary, "compile", str(self.job), "-o", str(self.path)], check=True,
                       capture_output=True)
        out = subprocess.run([binary, "--quiet", "compile", str(self.job), "--format", "json"],
                             check=True, capture_output=True, text=True)
        self.json: Dict[str, Any] = json.loads(out.stdout)

    def rank(self, local_rank: int) -> Dict[str, Any]:
        return self.json["ranks"][local_rank]


@pytest.fixture
def two_ranks(tmp_path: Path) -> Plan:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    return Plan(tmp_path, TWO_RANKS)
