"""The Python examples of the README and the user guide run as written, next to a plan compiled
for this machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, TWO_RANKS, Plan

# The worker-pool examples bind by GPU: their plan is for the 4-GPU fixture that fits any test
# host (CPUs 0 and 1), bound here with NUMAPLAN_FORCE=1 (this host has no GPU).
FOUR_GPUS = REPO / "tests/cases/topologies/two-cpus-four-gpus.yaml"

EXAMPLE = re.compile(r"<!-- python-example(?:: (?P<env>[^>]*))? -->\n```python\n(?P<code>.*?)```",
                     re.S)
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
EXAMPLES = [m for doc in DOCUMENTS for m in EXAMPLE.finditer(doc.read_text())]


def test_the_readme_has_one_example_per_function():
    code = "".join(m["code"] for m in EXAMPLES)
    for function in ("numaplan.bind(", "numaplan.spawn(", "numaplan.bind_worker(",
                     "except numaplan.Error"):
        assert function in code


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda m: f"line-{m.string.count(chr(10), 0, m.start()) + 1}")
def test_a_readme_example_runs(example: re.Match, tmp_path: Path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    Plan(tmp_path, TWO_RANKS)
    # The shipped examples/workers.yaml as it is, but for the four-GPU fixture.
    shipped = (REPO / "examples/workers.yaml").read_text()
    assert "\ntopology: " in shipped
    workers = re.sub(r"\ntopology: .*\n", f"\ntopology: {FOUR_GPUS}\n", shipped)
    Plan(tmp_path, workers, name="workers")
    script = tmp_path / "example.py"
    script.write_text(example["code"])
    env = dict(os.environ)
    env.update(v.split("=", 1) for v in (example["env"] or "").split())
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip(), "an example prints what it shows"
    if "except numaplan.Error" in example["code"]:
        assert run.stdout.startswith("E0433 ")
