"""Fixtures of the serving-engine tests (scripts/engines-test.sh runs them with the real vLLM
from PyPI and the numaplan wheel installed): a job compiled for a fixture machine, its
`--emit vllm` script run with a stand-in for the engine's executable that records the command
line and environment it was started with, which the tests then hand to the engine's own code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import numaplan

REPO = Path(__file__).resolve().parents[2]
TOPOLOGIES = REPO / "examples" / "topologies"

# What the scripts check in the environment they start from: none of it is inherited from the
# test's own, each test sets what it tries.
INHERITED = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
             "ZE_AFFINITY_MASK", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES",
             "SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS", "SGLANG_SET_CPU_AFFINITY"}

# The engine's executable, replaced: it writes its argv and environment to $STAND_IN_OUT.
STAND_IN = """#!{python}
import json, os, sys
with open(os.environ["STAND_IN_OUT"], "w") as f:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ)}}, f)
"""


class Compiled:
    """A job spec compiled for a fixture topology: its JSON plan, and its launch scripts."""

    def __init__(self, directory: Path, topology: str, spec: str) -> None:
        self.dir = directory
        self.job = directory / "job.yaml"
        self.job.write_text(f"topology: {TOPOLOGIES / topology}\n{spec}")
        out = self.numaplan("compile", str(self.job), "--format", "json")
        self.plan: Dict[str, Any] = json.loads(out.stdout)

    def numaplan(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([numaplan.executable(), *args], check=check,
                              capture_output=True, text=True)

    def emit(self, kind: str) -> Path:
        script = self.dir / f"{kind}.sh"
        self.numaplan("compile", str(self.job), "--emit", kind, "-o", str(script))
        return script

    def attempt(self, kind: str, args: List[str], env: Dict[str, str]) -> subprocess.CompletedProcess:
        """Runs the `--emit KIND` script with ARGS and ENV over this environment (which sets
        no visibility or NIC variable), numaplan and the engine `true`: for what the script
        refuses before anything starts."""
        base = {k: v for k, v in os.environ.items() if k not in INHERITED}
        env = dict(base, NUMAPLAN="true", VLLM="true", SGLANG="true", **env)
        return subprocess.run(["bash", str(self.emit(kind)), *args], capture_output=True,
                              text=True, env=env)

    def run(self, kind: str, args: List[str], variable: str,
            env: Dict[str, str] | None = None) -> Dict[str, Any]:
        """Runs the `--emit KIND` script with ARGS, the program it execs (`$VARIABLE`: the
        engine's, or `NUMAPLAN` where numaplan starts the engine) replaced by the stand-in;
        returns the argv and environment that program got, and the script's standard error.
        The vLLM script's node check is `numaplan bind --dry-run` of every rank, which a
        fixture's plan fails on this machine (tests/engines.rs runs it for real):
        `NUMAPLAN=true`."""
        stand_in = self.dir / "engine"
        stand_in.write_text(STAND_IN.format(python=sys.executable))
        stand_in.chmod(0o755)
        out = self.dir / "engine.json"
        env = dict({k: v for k, v in os.environ.items() if k not in INHERITED},
                   NUMAPLAN="true", STAND_IN_OUT=str(out), **(env or {}))
        env[variable] = str(stand_in)
        run = subprocess.run(["bash", str(self.emit(kind)), *args], env=env,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        started: Dict[str, Any] = json.loads(out.read_text())
        started["stderr"] = run.stderr
        return started


@pytest.fixture
def compiled(tmp_path: Path):
    return lambda topology, spec: Compiled(tmp_path, topology, spec)
