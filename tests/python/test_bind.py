"""`numaplan.bind` in real processes: the binding read back from /proc equals the plan."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import numaplan
import ranks
from conftest import REPO, Plan, TWO_RANKS

SPAWN = multiprocessing.get_context("spawn")


def run_children(target, arguments):
    queue = SPAWN.Queue()
    children = [SPAWN.Process(target=target, args=(queue, *a)) for a in arguments]
    for child in children:
        child.start()
    results = [queue.get(timeout=60) for _ in children]
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    return sorted(results, key=lambda r: r.get("rank", -1))


def test_the_wheel_installs_the_binary_beside_python():
    binary = numaplan.executable()
    assert os.path.dirname(binary) == os.path.dirname(os.path.abspath(sys.executable))
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"numaplan {numaplan.__version__}"
    via_module = subprocess.run([sys.executable, "-m", "numaplan", "--version"],
                                capture_output=True, text=True, check=True)
    assert via_module.stdout == out.stdout


def test_two_spawned_processes_are_bound_as_planned(two_ranks: Plan):
    results = run_children(ranks.bind_and_report, [(str(two_ranks.path), i) for i in (0, 1)])
    assert [r["rank"] for r in results] == [0, 1]
    assert results[0]["cpus"] != results[1]["cpus"]
    for result in results:
        planned = two_ranks.rank(result["rank"])
        assert result["cpus"] == planned["cpus"]
        assert result["mems"] == planned["memory"]["nodes"]
        touched = result["touched"]
        assert touched["policy"] == f"bind:{planned['memory']['nodes']}"
        assert set(touched["nodes"]) == {f"N{planned['memory']['nodes']}"}
        assert result["env"]["RANK"] == str(planned["rank"])


def test_the_local_rank_comes_from_the_launchers_variable(two_ranks: Plan):
    env = [{"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, {"SLURM_LOCALID": "0"}]
    results = run_children(ranks.bind_and_report, [(str(two_ranks.path), None, e) for e in env])
    assert [(r["rank"], r["cpus"]) for r in results] == [
        (0, two_ranks.rank(0)["cpus"]),
        (1, two_ranks.rank(1)["cpus"]),
    ]


def test_threads_started_before_bind_are_bound(two_ranks: Plan):
    [result] = run_children(ranks.thread_before_bind, [(str(two_ranks.path), 1)])
    assert result["before"] != result["planned"], "the thread started unbound"
    assert result["cpus"] == result["planned"]
    assert result["status"] == two_ranks.rank(1)["cpus"]


def test_the_launchers_numbering_is_kept_and_the_plans_variables_win(two_ranks: Plan):
    # As `numaplan bind` does: a launcher's MASTER_PORT stays; an inherited OMP_NUM_THREADS
    # gives way to the plan's.
    env = {"MASTER_PORT": "31337", "OMP_NUM_THREADS": "64"}
    [result] = run_children(ranks.bind_and_report, [(str(two_ranks.path), 1, env)])
    omp = two_ranks.rank(1)["env"]["OMP_NUM_THREADS"]
    assert omp != "64"
    assert result["env"] == {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2",
                             "MASTER_PORT": "31337", "OMP_NUM_THREADS": omp}
    binary = subprocess.run(
        [numaplan.executable(), "bind", str(two_ranks.path), "--local-rank", "1", "--", "env"],
        env={**os.environ, **env}, capture_output=True, text=True, check=True)
    seen = dict(line.split("=", 1) for line in binary.stdout.splitlines() if "=" in line)
    assert {k: seen.get(k) for k in result["env"]} == result["env"]


def test_a_job_spec_is_compiled_for_this_machine(two_ranks: Plan):
    [result] = run_children(ranks.bind_and_report, [(str(two_ranks.job), 0)])
    assert result["cpus"] == two_ranks.rank(0)["cpus"]


def test_the_plan_comes_from_numaplan_plan(two_ranks: Plan, monkeypatch: pytest.MonkeyPatch):
    # A path, and the plan itself as the --emit torchrun and mpirun scripts export it.
    monkeypatch.setenv("NUMAPLAN_PLAN", str(two_ranks.path))
    assert numaplan.resolve(local_rank=1).cpu_list == two_ranks.rank(1)["cpus"]
    monkeypatch.setenv("NUMAPLAN_PLAN", two_ranks.path.read_text())
    assert numaplan.resolve(local_rank=1).cpu_list == two_ranks.rank(1)["cpus"]
    monkeypatch.delenv("NUMAPLAN_PLAN")
    monkeypatch.chdir(two_ranks.path.parent)
    with pytest.raises(numaplan.Error) as no_default:
        numaplan.resolve(local_rank=1)
    assert no_default.value.code == "E0407"
    assert "numaplan.yaml" in str(no_default.value)


def test_resolve_reports_without_binding(two_ranks: Plan):
    before = os.sched_getaffinity(0)
    rank = numaplan.resolve(two_ranks.path, 1)
    assert os.sched_getaffinity(0) == before
    assert rank.cpu_list == two_ranks.rank(1)["cpus"]
    assert rank.ranks_per_node == 2
    assert rank.memory == numaplan.Memory("bind", frozenset({0}), "bind:0")
    assert rank.via == "--local-rank"


def test_the_plans_warnings_are_python_warnings(tmp_path: Path):
    plan = Plan(tmp_path, TWO_RANKS.replace("policy: exclusive", "policy: exclusive\n  max_cores: 1"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numaplan.resolve(plan.path, 0)
    [warning] = [w for w in caught if issubclass(w.category, numaplan.NumaplanWarning)]
    assert str(warning.message).startswith("[W0204] cpu.max_cores is ignored by policy exclusive")
    assert warning.message.code == "W0204"
    # It points at the caller's line, not at numaplan's own files.
    assert warning.filename == __file__, warning.filename
    # Python's own filter accepts the kind by its code.
    with warnings.catch_warnings(record=True) as filtered:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=r"\[W0204\]")
        numaplan.resolve(plan.path, 0)
    assert [w for w in filtered if issubclass(w.category, numaplan.NumaplanWarning)] == []
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        numaplan.resolve(plan.path, 1)  # only local rank 0 speaks for the node
    assert quiet == []



ENGINE_CHILD = """
import sys, warnings, numaplan
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    numaplan.bind(sys.argv[1], 0)
print(",".join(w.message.code for w in caught if w.message.code == "W0220"))
"""


@pytest.mark.parametrize("engine, warned", [("", "W0220"), ("engine: vllm\n", "")])
def test_a_python_rank_that_is_an_engine_is_warned_about(tmp_path: Path, engine: str,
                                                         warned: str):
    """`numaplan.bind()` in a process started as `vllm serve` (here a `python -c` whose command
    line says so) warns W0220 unless the spec names the engine; named, the server of a plan of
    two ranks a node is refused (E0448: one server per rank), of one rank bound."""
    ranks = "ranks_per_node: 1" if engine else "ranks_per_node: 2"
    plan = Plan(tmp_path, engine + TWO_RANKS.replace("ranks_per_node: 2", ranks))
    done = subprocess.run([sys.executable, "-c", ENGINE_CHILD, str(plan.path), "vllm", "serve",
                           "m"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == warned, done.stderr
    if engine:
        two = Plan(tmp_path, engine + TWO_RANKS, name="two")
        refused = subprocess.run([sys.executable, "-c", ENGINE_CHILD, str(two.path), "vllm",
                                  "serve", "m"], capture_output=True, text=True)
        assert refused.returncode != 0 and "E0448" in refused.stderr, refused.stderr


# Errors: each a numaplan.Error with the binary's code and, where there is one, the place.


def test_no_local_rank_is_an_error(two_ranks: Plan):
    with pytest.raises(numaplan.Error) as error:
        numaplan.bind(two_ranks.path)
    assert error.value.code == "E0419"
    assert "LOCAL_RANK" in str(error.value)
    # In Python's words: the keyword argument, not the binary's flag.
    assert "`local_rank=N`" in error.value.help and "--local-rank" not in error.value.help


def test_bind_without_a_plan_names_both_ways_to_give_one(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NUMAPLAN_PLAN", raising=False)
    with pytest.raises(numaplan.Error) as error:
        numaplan.bind(local_rank=0)
    assert error.value.code == "E0407"
    assert "NUMAPLAN_PLAN" in error.value.help and "numaplan.bind(" in error.value.help


def test_a_rank_past_the_plan_is_an_error(two_ranks: Plan):
    with pytest.raises(numaplan.Error) as error:
        numaplan.bind(two_ranks.path, 2)
    assert error.value.code == "E0433"


def test_a_plan_of_another_machine_is_an_error(tmp_path: Path):
    plan = tmp_path / "dgx.yaml"
    subprocess.run([numaplan.executable(), "compile", str(REPO / "examples/dgx-a100-llama.yaml"),
                    "-o", str(plan)], check=True, capture_output=True)
    before = os.sched_getaffinity(0)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(numaplan.Error) as error:
        warnings.simplefilter("always")
        numaplan.bind(plan, 0)
    assert error.value.code == "E0411"
    assert os.sched_getaffinity(0) == before
    # The plan's warning (W0216, nothing numbers this 2-node plan's rank) points at the line
    # that called bind(), however deep inside numaplan it was issued.
    [warning] = [w for w in caught if issubclass(w.category, numaplan.NumaplanWarning)]
    assert warning.message.code == "W0216"
    assert (warning.filename, warning.lineno) == (__file__, error.tb.tb_lineno), warning


def test_a_malformed_plan_is_an_error_with_its_place(tmp_path: Path):
    plan = tmp_path / "broken.yaml"
    plan.write_text("numaplan_plan: 1\ntopology:\n  name: [unclosed\n")
    with pytest.raises(numaplan.Error) as error:
        numaplan.bind(plan, 0)
    assert error.value.code == "E0405"
    assert error.value.file == str(plan)
    assert error.value.line is not None and error.value.line >= 3
    assert error.value.location.startswith(f"{plan}:")


def test_a_missing_binary_is_an_error(two_ranks: Plan, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NUMAPLAN_BIN", "/nonexistent/numaplan")
    with pytest.raises(numaplan.Error) as error:
        numaplan.bind(two_ranks.path, 0)
    assert error.value.code == "E0421"
    assert "NUMAPLAN_BIN" in error.value.help


def test_an_error_crosses_processes_whole():
    error = numaplan.Error("m", "E0405", file="p.yaml", line=3, column=7, help="h", notes=["n"])
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.location, copy.help, copy.notes) == ("E0405", "p.yaml:3:7", "h", ("n",))
    assert str(copy) == str(error) == "error[E0405]: m\n --> p.yaml:3:7\n = note: n\n = help: h"


def test_a_group_is_named_or_found(tmp_path: Path):
    """Of a plan of several groups, `group=` names this node's group (its ranks numbered in
    the whole job: WORLD_SIZE is every group's); a name the plan lacks is an error in Python's
    words."""
    job = tmp_path / "job.yaml"
    job.write_text("command: [true]\ngpus: none\nmemory: {policy: none}\ngroups:\n"
                   "  - {name: pairs, ranks_per_node: 2, cpu: {policy: exclusive}}\n"
                   "  - {name: whole, ranks_per_node: 1, cpu: {policy: node}}\n")
    plan = tmp_path / "plan.yaml"
    subprocess.run([numaplan.executable(), "compile", str(job), "-q", "-o", str(plan)],
                   check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numaplan.NumaplanWarning)
        pairs = numaplan.resolve(str(plan), 1, group="pairs")
        whole = numaplan.resolve(str(plan), 0, group="whole")
    assert pairs.env["NUMAPLAN_GROUP"] == "pairs"
    assert whole.env["NUMAPLAN_GROUP"] == "whole"
    assert pairs.env["WORLD_SIZE"] == whole.env["WORLD_SIZE"] == "3"
    assert len(whole.cpus) == len(pairs.cpus) * 2
    with pytest.raises(numaplan.Error) as raised:
        numaplan.resolve(str(plan), 0, group="critic")
    assert raised.value.code == "E0442"
    assert "group=" in (raised.value.help or ""), raised.value
