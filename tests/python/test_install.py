"""`pip install .` from the checkout, in a fresh virtual environment: the PEP 517 path builds
the same wheel through maturin, and its binary runs; the wheel's release binary refuses what the
debug build the Rust tests run refuses."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

import numaplan

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


def test_the_wheels_release_binary_refuses_what_hwloc_finds_inconsistent():
    # hwlocality checks an imported tree only in debug builds, which is what `cargo test` runs;
    # the wheel's binary is a release build, and must refuse the same malformed export (an
    # object whose cpuset is outside its complete cpuset) instead of planning on it.
    seed = REPO / "tests" / "fuzz" / "seeds" / "xml-hwloc-assertion.xml"
    run = subprocess.run([numaplan.executable(), "topo", "--topology", str(seed)],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stdout
    assert "error[E0305]" in run.stderr
    assert "hwloc crashed reading it" in run.stderr and "Assertion" in run.stderr, run.stderr


def test_the_package_exports_its_api_and_nothing_else():
    # Before, `PackageNotFoundError` and `annotations` (of `from __future__ import`) were public
    # names of the package too.
    public = {name for name in dir(numaplan) if not name.startswith("_")}
    assert public == set(numaplan.__all__) - {"__version__"}
