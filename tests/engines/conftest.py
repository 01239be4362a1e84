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

    def run(self, kind: str, args: List[str], variable: str) -> Dict[str, Any]:
        """Runs the `--emit KIND` script with ARGS, the program it execs (`$VARIABLE`: the
        engine's, or `NUMAPLAN` where numaplan starts the engine) replaced by the stand-in;
        returns the argv and environment that program got. The vLLM script's node check is
        `numaplan bind --dry-run` of every rank, which a fixture's plan fails on this machine
        (tests/engines.rs runs it for real): `NUMAPLAN=true`."""
        stand_in = self.dir / "engine"
        stand_in.write_text(STAND_IN.format(python=sys.executable))
        stand_in.chmod(0o755)
        out = self.dir / "engine.json"
        env = dict(os.environ, NUMAPLAN="true", STAND_IN_OUT=str(out))
        env[variable] = str(stand_in)
        subprocess.run(["bash", str(self.emit(kind)), *args], check=True, env=env)
        return json.loads(out.read_text())


@pytest.fixture
def compiled(tmp_path: Path):
    return lambda topology, spec: Compiled(tmp_path, topology, spec)
