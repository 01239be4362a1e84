"""`pip install .` from the checkout, in a fresh virtual environment: the PEP 517 path builds
the same wheel through maturin, and its binary runs."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

from conftest import REPO


@pytest.mark.skipif(os.environ.get("NUMAPLAN_PIP_INSTALL") != "1",
                    reason="set NUMAPLAN_PIP_INSTALL=1 (scripts/python-test.sh does)")
def test_pip_install_from_the_checkout(tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(REPO)], check=True)
    binary = env_dir / "bin" / "numaplan"
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("numaplan ")
    found = subprocess.run(
        [python, "-c", "import numaplan, sys; print(numaplan.executable())"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )
    assert found.stdout.strip() == str(binary)
