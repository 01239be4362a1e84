"""The repository's pre-commit hook, installed by pre-commit itself (from PyPI) from this
checkout's HEAD: it fails with the diff on a stale plan and passes once it is regenerated."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import numaplan
from conftest import REPO

JOB = """\
name: train
topology: dgx.yaml
cpu: {policy: exclusive}
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.skipif(os.environ.get("NUMAPLAN_PRE_COMMIT") != "1",
                    reason="set NUMAPLAN_PRE_COMMIT=1 (scripts/python-test.sh does): needs PyPI")
def test_the_hook_fails_on_a_stale_plan_and_passes_once_regenerated(tmp_path: Path):
    head = git(REPO, "rev-parse", "HEAD").strip()
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    git(work, "config", "user.email", "ci@example.com")
    git(work, "config", "user.name", "ci")
    shutil.copy(REPO / "examples/topologies/nvidia-dgx-a100.yaml", work / "dgx.yaml")
    (work / "job.yaml").write_text(JOB)
    compile_plan = [numaplan.executable(), "--quiet", "compile", "job.yaml", "-o", "plan.yaml"]
    subprocess.run(compile_plan, cwd=work, check=True)
    # The job changes after its plan was written: the committed plan is stale.
    (work / "job.yaml").write_text(JOB.replace("exclusive", "socket"))
    (work / ".pre-commit-config.yaml").write_text(f"""\
repos:
  - repo: {REPO}
    rev: {head}
    hooks:
      - id: numaplan-check
        args: [job.yaml, -o, plan.yaml]
""")
    git(work, "add", ".")
    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "cache")
    # The hook's own build of numaplan reuses this checkout's compiled crates.
    env["CARGO_TARGET_DIR"] = str(REPO / "target")
    run = [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"]
    stale = subprocess.run(run, cwd=work, env=env, capture_output=True, text=True)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "numaplan plan is up to date" in stale.stdout and "Failed" in stale.stdout
    assert "-policy: exclusive" in stale.stdout and "+policy: socket" in stale.stdout
    subprocess.run(compile_plan, cwd=work, check=True)
    fresh = subprocess.run(run, cwd=work, env=env, capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "Passed" in fresh.stdout
