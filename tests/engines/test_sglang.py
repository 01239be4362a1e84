"""`--emit sglang` read by SGLang's own code (sglang 0.5.23 from PyPI): its argument parser
and `ServerArgs` take the script's command line, and `sglang.srt.utils.numa_utils` gives each
GPU worker its NUMA node and numactl arguments as SGLang does before it starts the worker.
Every worker must get its plan rank's node; its CPUs are its node's within the server's
affinity, which `numaplan bind --all-ranks` makes the union of the plan's CPUs (this machine
has neither the fixture's nodes nor its CPUs, so SGLang's two readings of the machine, the
node's CPUs and the server's affinity, are given the fixture's)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from typing import Any, Dict, List, Set

import pytest

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

from sglang.srt.server_args import ServerArgs  # noqa: E402
from sglang.srt.utils import numa_utils  # noqa: E402

import numaplan  # noqa: E402
from conftest import TOPOLOGIES  # noqa: E402

MACHINES = ["nvidia-dgx-a100.yaml", "nvidia-dgx-h100.yaml"]
SELECTIONS = {"all": "", "subset": "gpus: [2, 3, 6, 7]\n"}
SPEC = "engine: sglang\nmemory: {policy: bind, required: false}\nnic: {policy: none}\n"


def cpulist(text: str) -> Set[int]:
    cpus: Set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def node_cpus(machine: str) -> Dict[int, Set[int]]:
    out = subprocess.run([numaplan.executable(), "topo", "--topology", str(TOPOLOGIES / machine),
                          "--format", "json"], check=True, capture_output=True, text=True)
    return {n["id"]: cpulist(n["cpus"]) for n in json.loads(out.stdout)["nodes"]}


def server_args(argv: List[str]) -> ServerArgs:
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return ServerArgs.from_cli_args(parser.parse_args(argv))


def check_workers(machine: str, plan: Dict[str, Any], started: Dict[str, Any],
                  monkeypatch: pytest.MonkeyPatch) -> None:
    ranks = plan["ranks"]
    args = server_args(started["argv"])
    assert started["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    visible = started["env"]["CUDA_VISIBLE_DEVICES"].split(",")
    assert visible == [str(r["gpus"][0]) for r in ranks]
    # SGLang's readings of the machine: each node's CPUs, and the server's affinity, which
    # `bind --all-ranks` sets to every rank's CPUs together.
    nodes = node_cpus(machine)
    union = set().union(*(cpulist(r["cpus"]) for r in ranks))
    monkeypatch.setattr(numa_utils, "_node_cpus", lambda node: nodes[node])
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: union)
    for gpu_id, rank in enumerate(ranks):
        node = numa_utils.get_numa_node_if_available(args, gpu_id)
        assert node == rank["numa_node"], gpu_id
        on_node = set().union(*(cpulist(r["cpus"]) for r in ranks if r["numa_node"] == node))
        numactl = numa_utils._numactl_cpu_mem_args(node, gpu_id)
        if on_node == nodes[node]:
            assert numactl == f"--cpunodebind={node} --membind={node}", gpu_id
        else:
            listed = ",".join(str(c) for c in sorted(on_node))
            assert numactl == f"--physcpubind={listed} --membind={node}", gpu_id
        if sum(r["numa_node"] == node for r in ranks) == 1:
            # A rank alone on its node: exactly its CPUs.
            assert on_node == cpulist(rank["cpus"])


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("policy", ["auto", "node"])
def test_one_node(compiled, monkeypatch, machine: str, selection: str, policy: str) -> None:
    job = compiled(machine, SPEC + f"cpu: {{policy: {policy}}}\n" + SELECTIONS[selection])
    n = len(job.plan["ranks"])
    started = job.run("sglang", ["--force", "--model-path", "org/model", "--tp-size", str(n)],
                      "NUMAPLAN")
    # The server starts under `numaplan bind --all-ranks`, SGLang's command after `--`.
    argv = started["argv"]
    assert argv[:4] == ["bind", "--force", "--all-ranks", "env:NUMAPLAN_PLAN"], argv
    check_workers(machine, job.plan, {"argv": sglang_args(argv), "env": started["env"]},
                  monkeypatch)


def sglang_args(bind: List[str]) -> List[str]:
    """SGLang's arguments in the `numaplan bind ... -- python3 -m sglang.launch_server ARGS`
    the script runs."""
    command = bind[bind.index("--") + 1:]
    assert command[:3] == ["python3", "-m", "sglang.launch_server"], command
    return command[3:]


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("node_rank", [0, 1])
def test_two_nodes(compiled, monkeypatch, machine: str, node_rank: int) -> None:
    job = compiled(machine, SPEC + "nodes: 2\n" + SELECTIONS["subset"])
    started = job.run("sglang", ["--node-rank", str(node_rank), "--master-addr", "10.0.0.1",
                                 "--model-path", "org/model", "--tp-size", "8"], "NUMAPLAN")
    sglang = sglang_args(started["argv"])
    args = server_args(sglang)
    assert (args.nnodes, args.node_rank, args.dist_init_addr) == (2, node_rank, "10.0.0.1:29500")
    check_workers(machine, job.plan, {"argv": sglang, "env": started["env"]}, monkeypatch)


def test_the_order_trap(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC + "cpu: {policy: node}\n")
    started = job.run("sglang", ["--model-path", "m"], "NUMAPLAN")
    args = server_args(sglang_args(started["argv"]))
    assert args.numa_node == [3, 3, 1, 1, 7, 7, 5, 5]


@pytest.mark.parametrize("args", [["--numa-node", "0"], ["--numa=0"], ["--numa-node=1"]],
                         ids=lambda a: " ".join(a))
def test_sglangs_own_binding_flag_is_refused_in_every_spelling(compiled, args: List[str]) -> None:
    # SGLang's parser takes the spelling as --numa-node.
    assert server_args(["--model-path", "m", *args]).numa_node is not None
    job = compiled("nvidia-dgx-a100.yaml", SPEC + "gpus: [2, 3]\n")
    run = job.attempt("sglang", ["--model-path", "m", *args], {})
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("numaplan: error[E0447]: --numa"), run.stderr


@pytest.mark.parametrize("value", ["1", "true", "Yes"])
def test_one_visible_device_per_process_is_refused(compiled, value: str) -> None:
    """SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS makes each worker see one GPU, its device 0, and
    SGLang then binds every worker to --numa-node's entry 0."""
    from sglang.srt.environ import envs
    os.environ["SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS"] = value
    try:
        assert envs.SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS.get() is True
    finally:
        del os.environ["SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS"]
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    run = job.attempt("sglang", ["--model-path", "m"],
                      {"SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS": value})
    assert run.returncode == 2, run.stderr
    assert "error[E0447]: SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS" in run.stderr
    # Off, it starts.
    job.run("sglang", ["--model-path", "m"], "NUMAPLAN",
            {"SGLANG_ONE_VISIBLE_DEVICE_PER_PROCESS": "0"})


def test_sglangs_own_cpu_rule_is_said(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    started = job.run("sglang", ["--model-path", "m"], "NUMAPLAN",
                      {"SGLANG_SET_CPU_AFFINITY": "1"})
    assert "warning[W0223]: SGLANG_SET_CPU_AFFINITY=1 in the environment" in started["stderr"]
    quiet = job.run("sglang", ["--model-path", "m"], "NUMAPLAN")
    assert "W0223" not in quiet["stderr"]
