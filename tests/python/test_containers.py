"""`numaplan.bind()` inside a real container (podman with Docker's default seccomp profile, a
cpuset of two CPUs, no CAP_SYS_NICE unless asked), with this virtual environment's Python and
wheel mounted in. Runs where NUMAPLAN_CONTAINERS=1 (root with podman; scripts/test.sh sets it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(
    os.environ.get("NUMAPLAN_CONTAINERS") != "1",
    reason="set NUMAPLAN_CONTAINERS=1 (as root, with podman) to run containers",
)

# Runs in the container: binds as local rank 1 of `job.yaml` (CPU 1 of the cpuset 0-1) and
# prints, as JSON, what happened and the process's state afterwards.
PROBE = r"""
import json, os, sys, warnings
import numaplan
result = {"before": sorted(os.sched_getaffinity(0))}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        numaplan.bind("job.yaml", 1, migrate=sys.argv[1] == "migrate")
        result["bound"] = True
    except numaplan.Error as e:
        result["bound"] = False
        result["error"] = str(e)
result["warnings"] = [str(w.message) for w in caught]
result["after"] = sorted(os.sched_getaffinity(0))
result["LOCAL_RANK"] = os.environ.get("LOCAL_RANK")
with open("/proc/self/numa_maps") as maps:
    result["policy"] = next(l.split()[1] for l in maps if "heap" in l)
print(json.dumps(result))
"""


def in_container(directory: Path, spec: str, *, sys_nice: bool = False,
                 migrate: bool = False) -> Dict[str, Any]:
    (directory / "job.yaml").write_text(spec)
    (directory / "probe.py").write_text(PROBE)
    env = dict(os.environ, CT_CPUSET="0-1", CT_ADD_CAPS="SYS_NICE" if sys_nice else "",
               CT_MOUNTS=sys.prefix)
    out = subprocess.run(
        [str(REPO / "tests/container/container.sh"), sys.executable, "probe.py",
         "migrate" if migrate else "stay"],
        cwd=directory, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    result: Dict[str, Any] = json.loads(out.stdout)
    return result


DEFAULT = "command: [true]\ngpus: none\nranks_per_node: 2\n"


def test_the_default_spec_binds_without_its_policy_and_warns(tmp_path: Path) -> None:
    got = in_container(tmp_path, DEFAULT)
    assert got["bound"], got
    assert got["after"] == [1] and got["LOCAL_RANK"] == "1"
    assert got["policy"] == "default"
    refused = [w for w in got["warnings"] if "W0217" in w]
    assert len(refused) == 1, got["warnings"]
    assert "set_mempolicy" in refused[0] and "CAP_SYS_NICE" in refused[0]


def test_a_required_policy_raises_and_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    got = in_container(tmp_path, DEFAULT + "memory: {policy: bind}\n")
    assert not got["bound"], got
    assert "set_mempolicy" in got["error"] and "SYS_NICE" in got["error"], got["error"]
    assert "as it was" in got["error"] or "unchanged" in got["error"], got["error"]
    assert got["after"] == got["before"] == [0, 1]
    assert got["LOCAL_RANK"] is None
    assert got["policy"] == "default"


def test_migrate_raises_before_binding_where_the_policy_is_dropped(tmp_path: Path) -> None:
    # Without CAP_SYS_NICE the default policy is dropped (W0217): migrate=True, which asks for
    # the pages on the plan's nodes, cannot be had, and raises before anything changes.
    got = in_container(tmp_path, DEFAULT, migrate=True)
    assert not got["bound"], got
    assert "migrate=True" in got["error"] and "refused" in got["error"], got["error"]
    assert "unchanged" in got["error"] and "seccomp" in got["error"], got["error"]
    assert got["after"] == got["before"] == [0, 1]
    assert got["LOCAL_RANK"] is None
    assert got["policy"] == "default"


def test_migrate_is_refused_first_even_with_sys_nice(tmp_path: Path) -> None:
    # CAP_SYS_NICE lets the policy be set, but Docker's profile never allows migrate_pages:
    # found before anything is bound, and said.
    got = in_container(tmp_path, DEFAULT, sys_nice=True, migrate=True)
    assert not got["bound"], got
    assert "migrate_pages" in got["error"], got["error"]
    assert "never allow migrate_pages" in got["error"], got["error"]
    assert "unchanged" in got["error"], got["error"]
    assert got["after"] == got["before"] == [0, 1]
    assert got["LOCAL_RANK"] is None
    assert got["policy"] == "default"
    # Without migrate, the same container binds it all: CPUs and the (preferred) policy.
    got = in_container(tmp_path, DEFAULT, sys_nice=True)
    assert got["bound"] and got["after"] == [1] and got["policy"] == "prefer:0", got
