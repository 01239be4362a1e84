"""`numaplan.check_binding()` in real processes: true in a rank that `numaplan bind`,
`numaplan exec` or `numaplan.bind()` started or bound, finding its plan and rank by itself;
false, naming the CPUs, once the process is moved elsewhere; the NIC environment compared with
the plan's NIC variables. (After a gloo init: tests/torch.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import numaplan
from conftest import REPO, Plan

# The child: check as started, then moved onto the CPUs of no rank of its own; JSON out, in
# one write (ranks share the pipe, and print() makes two where PYTHONUNBUFFERED is set).
CHILD = """
import json, os, sys, numaplan
first = numaplan.check_binding()
own = os.sched_getaffinity(0)
elsewhere = min(set(range(os.cpu_count())) - own)
os.sched_setaffinity(0, {elsewhere})
moved = numaplan.check_binding()
line = json.dumps({"first": bool(first), "rank": first.local_rank, "cpus": first.cpus.planned,
                   "moved": bool(moved), "elsewhere": elsewhere,
                   "problems": [p.code + ": " + p.message for p in moved.problems],
                   "cpus_ok": moved.cpus.ok, "memory_ok": moved.memory.ok})
os.write(1, (line + "\\n").encode())
"""


def run(*argv: str) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items() if k != "NUMAPLAN_PLAN"})
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("local_rank", [0, 1])
def test_a_rank_bind_started_checks_itself(two_ranks: Plan, local_rank: int):
    seen = run(numaplan.executable(), "--quiet", "bind", str(two_ranks.path), "--local-rank",
               str(local_rank), "--", sys.executable, "-c", CHILD)
    assert seen["first"] is True, seen
    assert (seen["rank"], seen["cpus"]) == (local_rank, two_ranks.rank(local_rank)["cpus"])
    assert seen["moved"] is False
    assert seen["cpus_ok"] is False and seen["memory_ok"] is True, seen
    assert any(f"CPUs {seen['elsewhere']} outside the plan" in p for p in seen["problems"]), seen


def test_every_rank_exec_started_checks_itself(two_ranks: Plan):
    done = subprocess.run([numaplan.executable(), "--quiet", "exec", str(two_ranks.path),
                           "--no-prefix", "--", sys.executable, "-c", CHILD],
                          capture_output=True, text=True, check=True)
    seen = sorted((json.loads(line) for line in done.stdout.splitlines()),
                  key=lambda s: s["rank"])
    assert [s["rank"] for s in seen] == [0, 1]
    assert all(s["first"] and not s["moved"] for s in seen), seen


def test_a_process_bound_in_python_checks_itself(two_ranks: Plan):
    code = f"import numaplan; numaplan.bind({str(two_ranks.path)!r}, 1)\n" + CHILD
    seen = run(sys.executable, "-c", code)
    assert (seen["first"], seen["rank"], seen["moved"]) == (True, 1, False), seen


def test_the_nic_environment_is_compared_with_the_plans(tmp_path: Path):
    """A DGX A100 plan's rank 0 has NCCL_IB_HCA==mlx5_0 and UCX_NET_DEVICES=mlx5_0:1: the NIC
    check holds with them, and names the variable without. (This process is no DGX rank: its
    CPUs differ, which the CPU check says; it does not raise.)"""
    job = tmp_path / "job.yaml"
    job.write_text(f"topology: {REPO}/examples/topologies/nvidia-dgx-a100.yaml\n")
    right = {"NCCL_IB_HCA": "=mlx5_0", "UCX_NET_DEVICES": "mlx5_0:1"}
    found = numaplan.check_binding(job, 0, environ=right)
    assert found.nic.ok and not found.cpus.ok and not found
    assert found.cpus.planned == "48-55,176-183"
    wrong = numaplan.check_binding(job, 0, environ=dict(right, NCCL_IB_HCA="=mlx5_1"))
    [nic] = wrong.nic.problems
    assert nic.code == "nic-variable" and "NCCL_IB_HCA is '=mlx5_1', planned '=mlx5_0'" in \
        nic.message


def test_no_plan_is_an_error_not_a_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(numaplan.Error) as raised:
        numaplan.check_binding()
    assert raised.value.code is not None


def test_every_rank_the_bash_launcher_started_checks_itself(tmp_path: Path):
    """`--emit bash` binds with numactl, not numaplan: the plan it embeds is every rank's
    `NUMAPLAN_PLAN`, and the rank's mark says which rank it is."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    from conftest import TWO_RANKS
    spec = TWO_RANKS + f"command: [{sys.executable}, -c, {json.dumps(CHILD)}]\n"
    plan = Plan(tmp_path, spec)
    script = tmp_path / "launch.sh"
    subprocess.run([numaplan.executable(), "compile", str(plan.job), "--emit", "bash", "-o",
                    str(script)], check=True, capture_output=True)
    done = subprocess.run(["bash", str(script), "--no-prefix"], capture_output=True, text=True,
                          check=True)
    seen = sorted((json.loads(line) for line in done.stdout.splitlines()),
                  key=lambda s: s["rank"])
    assert [s["rank"] for s in seen] == [0, 1], done.stderr
    assert all(s["first"] and not s["moved"] for s in seen), seen


def test_every_problem_kind_is_one_verify_reports():
    """`check_binding()` reports verify's problems in verify's kinds and words, the NIC
    variables included (compared with the process's own environment): it invents none."""
    from numaplan import _check
    schema = json.loads(subprocess.run([numaplan.executable(), "schema", "verify"],
                                       capture_output=True, text=True, check=True).stdout)
    kinds = {one["properties"]["kind"]["const"]
             for one in schema["$defs"]["ProblemReport"]["oneOf"]}
    assert set(_check._ABOUT) <= kinds, set(_check._ABOUT) - kinds
    assert "nic-variable" in kinds
    report = {"rank": 0, "pid": 1, "planned_cpus": "0", "actual_cpus": "0",
              "planned_memory": "default", "actual_memory": "default",
              "nic_env": {"NCCL_IB_HCA": "=mlx5_0"}, "problems": []}
    found = _check._binding(report, {})
    assert [(p.code, p.message) for p in found.problems] == [
        ("nic-variable", "NCCL_IB_HCA is unset, planned '=mlx5_0'")]


def test_no_plan_says_how_to_give_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(numaplan.Error) as raised:
        numaplan.check_binding()
    assert "numaplan.check_binding(\"plan.yaml\")" in (raised.value.help or ""), raised.value
    assert "NUMAPLAN_PLAN" in (raised.value.help or "")


def test_a_process_that_says_no_rank_is_not_taken_for_rank_0(two_ranks: Plan):
    """This test process carries no mark, no engine title and no launcher variable: which of
    the two ranks it is cannot be told, and `check_binding()` says so (E0449) instead of
    comparing it with rank 0."""
    with pytest.raises(numaplan.Error) as raised:
        numaplan.check_binding(two_ranks.path)
    assert raised.value.code == "E0449", raised.value
    assert "`local_rank=N`, or `local_rank=\"gpu\"`" in (raised.value.help or ""), raised.value
    with pytest.raises(numaplan.Error) as past:
        numaplan.check_binding(two_ranks.path, 5)
    assert past.value.code == "E0433", past.value


def test_a_good_bindings_problems_are_an_empty_list(two_ranks: Plan):
    code = (f"import numaplan; numaplan.bind({str(two_ranks.path)!r}, 1)\n"
            "found = numaplan.check_binding()\n"
            "print(found.problems == [], found.cpus.problems == [], bool(found))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "True", "True"], done.stderr


GPU_WORKER = """
import json, os, sys, types, numaplan
if len(sys.argv) > 1:
    # A worker that sees every GPU of its server and drives one (PyTorch's current device).
    cuda = types.SimpleNamespace(is_initialized=lambda: True,
                                 current_device=lambda: int(sys.argv[1]))
    sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)
found = numaplan.check_binding(local_rank="gpu")
os.write(1, json.dumps({"rank": found.local_rank, "ok": bool(found),
                        "problems": [str(p) for p in found.problems]}).encode())
"""


@pytest.mark.parametrize("visible,driven,rank", [("1", None, 1), ("0", None, 0),
                                                ("0,1", "1", 1), ("1,0", "1", 0)])
def test_a_worker_checks_itself_by_the_gpu_it_drives(tmp_path: Path, visible: str,
                                                     driven: "str | None", rank: int):
    """`check_binding(local_rank="gpu")` in a worker that a server or Ray started, bound as
    its GPU's rank: the rank of the one GPU it sees, or of the GPU it drives among those it
    sees (PyTorch's current device), not an error (it was E0423)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    spec = (f"topology: {REPO}/tests/cases/topologies/two-cpus-two-gpus.yaml\n"
            "memory: {policy: bind}\n")
    plan = Plan(tmp_path, spec)
    cpus = plan.rank(rank)["cpus"]
    env = dict(os.environ, NUMAPLAN_PLAN=str(plan.path), CUDA_VISIBLE_DEVICES=visible)
    argv = ["numactl", f"--physcpubind={cpus}", "--membind=0", sys.executable, "-c", GPU_WORKER]
    done = subprocess.run(argv + ([driven] if driven else []), capture_output=True, text=True,
                          env=env, check=True)
    seen = json.loads(done.stdout)
    assert (seen["rank"], seen["ok"]) == (rank, True), (seen, done.stderr)
