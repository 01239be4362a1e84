"""`--emit vllm` read by vLLM's own code (vllm 0.33 from PyPI): its argument parser takes the
script's command line, `ParallelConfig` is made from what it parsed, and
`vllm.utils.numa_utils` derives each worker's numactl arguments as vLLM does before it starts
the worker. Every worker must get exactly its plan rank's CPUs and node, and see that rank's
GPU at its index: on the DGX A100 (GPUs on NUMA nodes 3, 3, 1, 1, 7, 7, 5, 5) and H100,
all GPUs and `gpus: [2, 3, 6, 7]`, tensor and data parallel, one node and two."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, List

import pytest

from conftest import INHERITED, TOPOLOGIES

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # no GPU here; binding needs none

from vllm.config.parallel import ParallelConfig  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.entrypoints.common.cli_args import make_arg_parser  # noqa: E402
from vllm.utils import numa_utils  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

MACHINES = ["nvidia-dgx-a100.yaml", "nvidia-dgx-h100.yaml"]
SELECTIONS = {"all": "", "subset": "gpus: [2, 3, 6, 7]\n"}
SPEC = "engine: vllm\nmemory: {policy: bind}\nnic: {policy: none}\n"


def parallel_config(argv: List[str]) -> ParallelConfig:
    """vLLM's ParallelConfig of a `vllm serve` command line, through vLLM's own parser; the
    fields it takes are those of EngineArgs of the same name (`create_engine_config` needs a
    model on disk)."""
    assert argv[0] == "serve"
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv[1:])
    engine = EngineArgs.from_cli_args(args)
    fields = {f.name: getattr(engine, f.name) for f in dataclasses.fields(ParallelConfig)
              if f.init and getattr(engine, f.name, None) is not None}
    if engine.data_parallel_size_local is None:
        # `create_engine_config`'s default where neither Ray nor an external balancer is asked
        # for: every data parallel rank on this node.
        fields["data_parallel_size_local"] = engine.data_parallel_size
    return ParallelConfig(**fields)


def workers(config: ParallelConfig) -> List[tuple]:
    """(local_rank, dp_local_rank) of every worker vLLM starts on one node."""
    per_node = config.world_size // config.nnodes_within_dp
    return [(lr, dp) for dp in range(config.data_parallel_size_local) for lr in range(per_node)]


def check_workers(plan: Dict[str, Any], started: Dict[str, Any], expected_workers: int) -> None:
    config = parallel_config(started["argv"])
    assert started["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    visible = started["env"]["CUDA_VISIBLE_DEVICES"].split(",")
    ranks = plan["ranks"]
    assert len(visible) == len(ranks)
    seen = workers(config)
    assert len(seen) == expected_workers
    for local_rank, dp in seen:
        gpu = config.get_local_gpu_index(local_rank, dp)
        rank = ranks[gpu]
        numactl = numa_utils._get_numactl_worker_args(config, local_rank, dp)
        assert numactl == f"--physcpubind={rank['cpus']} --membind={rank['numa_node']}", \
            (local_rank, dp)
        assert visible[gpu] == str(rank["gpus"][0]), (local_rank, dp)
        # The EngineCore of the worker's shard binds to the union of its workers' nodes.
        shard = {ranks[config.get_local_gpu_index(lr, dp)]["numa_node"]
                 for lr, d in seen if d == dp}
        nodes = ",".join(str(n) for n in sorted(shard))
        if config.nnodes_within_dp == 1:
            assert numa_utils._get_numactl_enginecore_args(config, 0, dp) == \
                f"--cpunodebind={nodes} --membind={nodes}"


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("layout", ["tensor", "data"])
def test_one_node(compiled, machine: str, selection: str, layout: str) -> None:
    job = compiled(machine, SPEC + SELECTIONS[selection])
    n = len(job.plan["ranks"])
    args = {"tensor": ["--tensor-parallel-size", str(n)],
            "data": ["--tensor-parallel-size", str(n // 2), "--data-parallel-size", "2",
                     "--data-parallel-size-local", "2"]}[layout]
    started = job.run("vllm", ["--force", "org/model", *args], "VLLM")
    assert started["argv"][:2] == ["serve", "org/model"]
    check_workers(job.plan, started, n)


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("layout", ["tensor", "data"])
@pytest.mark.parametrize("node_rank", [0, 1])
def test_two_nodes(compiled, machine: str, layout: str, node_rank: int) -> None:
    job = compiled(machine, SPEC + "nodes: 2\n" + SELECTIONS["subset"])
    n = len(job.plan["ranks"])
    args = {"tensor": ["--tensor-parallel-size", str(2 * n)],
            "data": ["--tensor-parallel-size", str(n), "--data-parallel-size", "2",
                     "--data-parallel-size-local", "1"]}[layout]
    started = job.run("vllm", ["--node-rank", str(node_rank), "--master-addr", "10.0.0.1",
                               "org/model", *args], "VLLM")
    config = parallel_config(started["argv"])
    assert (config.nnodes, config.node_rank, config.master_addr) == (2, node_rank, "10.0.0.1")
    assert ("--headless" in started["argv"]) == (node_rank > 0)
    check_workers(job.plan, started, n)


def test_the_order_trap(compiled) -> None:
    """DGX A100's GPUs 0-7 sit on NUMA nodes 3, 3, 1, 1, 7, 7, 5, 5: vLLM's worker of GPU 0
    must get node 3, not node 0."""
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    started = job.run("vllm", ["m", "--tensor-parallel-size", "8"], "VLLM")
    config = parallel_config(started["argv"])
    assert config.numa_bind_nodes == [3, 3, 1, 1, 7, 7, 5, 5]
    assert numa_utils._get_numactl_worker_args(config, 0, 0).endswith("--membind=3")


def test_the_script_refuses_vllms_own_binding_flags(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    script = job.emit("vllm")
    run = __import__("subprocess").run(
        ["bash", str(script), "m", "--numa-bind-nodes", "0"], capture_output=True, text=True,
        env=dict(os.environ, NUMAPLAN="true", VLLM="true"))
    assert run.returncode == 2
    assert "--numa-bind-nodes: the plan says vLLM's NUMA binding" in run.stderr


def test_each_workers_nic_is_its_ranks(compiled) -> None:
    """Where the plan gives every rank an RDMA NIC whose PCI address the topology knows (the
    DGX H100), the script hands vLLM each GPU's NIC by address: vLLM's own parsers of
    VLLM_GPU_NIC_PCIE_MAPPING and VLLM_NIC_SELECTION_VARS map every rank's GPU to its NIC, and
    the variables they make name it as the plan's do."""
    from vllm.v1.executor import vllm_net_devices as net

    job = compiled("nvidia-dgx-h100.yaml", "engine: vllm\nmemory: {policy: bind}\n")
    started = job.run("vllm", ["m", "--tensor-parallel-size", "8"], "VLLM")
    topology = json.loads(job.numaplan("topo", "--topology", str(TOPOLOGIES / "nvidia-dgx-h100.yaml"),
                                       "--format", "json").stdout)
    nic_pci = {n["name"]: n["pci"] for n in topology["nics"]}
    mapping = net.parse_gpu_nic_mapping(started["env"]["VLLM_GPU_NIC_PCIE_MAPPING"])
    chosen = net.parse_nic_selection_vars(started["env"]["VLLM_NIC_SELECTION_VARS"])
    assert len(mapping) == len(job.plan["ranks"]) == 8
    for rank in job.plan["ranks"]:
        [nic] = rank["nics"]
        assert mapping[net.normalize_pci(rank["gpu_pci"][0])] == net.normalize_pci(nic_pci[nic])
        # What vLLM sets in the worker: the device name and each entry's suffix.
        made = {name: nic + suffix for name, suffix in chosen}
        assert made["UCX_NET_DEVICES"] == rank["env"]["UCX_NET_DEVICES"]
        assert "=" + made["NCCL_IB_HCA"] == rank["env"]["NCCL_IB_HCA"]


# Tensor parallel 1 to 8 and data parallel on one node: (plan's GPUs, vLLM's arguments).
LAYOUTS = {
    "tp1": ("gpus: [2]\n", ["--tensor-parallel-size", "1"]),
    "tp1-default": ("gpus: [6]\n", []),
    "tp2": ("gpus: [2, 3]\n", ["-tp", "2"]),
    "tp1xdp8": ("", ["--data-parallel-size", "8"]),
    "tp2xdp4": ("", ["-tp", "2", "-dp", "4"]),
    "tp8": ("", ["--tensor-parallel-size", "8"]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_parallel_size(compiled, layout: str) -> None:
    """Every worker its rank's CPUs and node at every parallel size on one node, tensor
    parallel 1 included: there vLLM would choose its in-process executor (`uni`), whose one
    worker runs inside the EngineCore, bound to the whole node; the script asks for the
    multiprocessing executor, which starts the worker through numactl."""
    gpus, args = LAYOUTS[layout]
    job = compiled("nvidia-dgx-a100.yaml", SPEC + gpus)
    started = job.run("vllm", ["m", *args], "VLLM")
    config = parallel_config(started["argv"])
    assert config.distributed_executor_backend == "mp"
    check_workers(job.plan, started, len(job.plan["ranks"]))


def test_tensor_parallel_1_without_the_scripts_executor_is_vllms_uni() -> None:
    """What the script's `--distributed-executor-backend mp` is for: vLLM's own choice at
    tensor parallel 1 is the in-process executor, which starts no worker through numactl."""
    config = parallel_config(["serve", "m", "--numa-bind", "--numa-bind-nodes", "1"])
    assert config.world_size == 1
    assert config.distributed_executor_backend == "uni"


def test_an_executor_given_as_mp_is_not_given_twice(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC + "gpus: [2]\n")
    started = job.run("vllm", ["m", "--distributed-executor-backend=mp"], "VLLM")
    assert [a for a in started["argv"] if "executor" in a] == ["--distributed-executor-backend=mp"]
    assert parallel_config(started["argv"]).distributed_executor_backend == "mp"


# Arguments that would undo the plan, as users write them: every spelling vLLM's parser takes
# for the option (`=value`, `_` for `-`, argparse's unique prefixes) is refused.
REFUSED = [
    ["--distributed-executor-backend", "ray"],
    ["--distributed-executor-backend=uni"],
    ["--distributed_executor_backend", "external_launcher"],
    ["--distributed-e", "ray"],
    ["--distributed-executor-backend", "my.module.Executor"],
    ["--data-parallel-backend", "ray"],
    ["-dpb=ray"],
    ["--device-ids", "2,3"],
    ["--device-i=GPU-1"],
    ["--numa-bind-n", "0"],
    ["--numa-bind"],
    ["--no-numa-bind"],
]


@pytest.mark.parametrize("args", REFUSED, ids=lambda a: " ".join(a))
def test_what_undoes_the_plan_is_refused(compiled, args: List[str]) -> None:
    # vLLM's parser takes the spelling as the option it is refused for.
    parsed = make_arg_parser(FlexibleArgumentParser()).parse_args(["m", *args])
    assert parsed is not None
    job = compiled("nvidia-dgx-a100.yaml", SPEC + "gpus: [2, 3]\n")
    run = job.attempt("vllm", ["m", "-tp", "2", *args], {})
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("numaplan: error[E0447]: "), run.stderr


def test_the_data_parallel_backend_mp_is_not_refused(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    started = job.run("vllm", ["m", "-dp", "8", "--data-parallel-backend", "mp"], "VLLM")
    check_workers(job.plan, started, 8)


@pytest.mark.parametrize("variable,value", [
    ("CUDA_VISIBLE_DEVICES", "0,1"),          # a scheduler's choice of two GPUs
    ("CUDA_VISIBLE_DEVICES", "3,2"),          # the plan's, in another order
    ("HIP_VISIBLE_DEVICES", "0"),
    ("ROCR_VISIBLE_DEVICES", "1"),
    ("ZE_AFFINITY_MASK", "0"),
])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_inherited_gpus_that_differ_are_refused(compiled, engine: str, variable: str,
                                                value: str) -> None:
    spec = SPEC.replace("vllm", engine) + "gpus: [2, 3]\n"
    job = compiled("nvidia-dgx-a100.yaml", spec)
    run = job.attempt(engine, ["m"], {variable: value})
    assert run.returncode == 2, run.stderr
    assert f"error[E0447]: {variable}={value} in the environment" in run.stderr


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_inherited_gpus_that_are_the_plans_pass(compiled, engine: str) -> None:
    spec = SPEC.replace("vllm", engine) + "gpus: [2, 3]\n"
    job = compiled("nvidia-dgx-a100.yaml", spec)
    variable = {"vllm": "VLLM", "sglang": "NUMAPLAN"}[engine]
    started = job.run(engine, ["m"], variable, {"CUDA_VISIBLE_DEVICES": "2,3",
                                                "ROCR_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"})
    assert started["env"]["CUDA_VISIBLE_DEVICES"] == "2,3"


def test_an_inherited_nic_variable_is_cleared_and_said(compiled) -> None:
    """vLLM puts each worker's NIC before an inherited NCCL_IB_HCA (`mlx5_0,mlx5`, which takes
    every HCA): the script clears it, says so, and vLLM's worker then sets its NIC alone."""
    job = compiled("nvidia-dgx-h100.yaml", "engine: vllm\nmemory: {policy: bind}\n")
    started = job.run("vllm", ["m", "-tp", "8"], "VLLM",
                      {"NCCL_IB_HCA": "mlx5", "UCX_NET_DEVICES": "mlx5_0:1"})
    assert "NCCL_IB_HCA" not in started["env"] and "UCX_NET_DEVICES" not in started["env"]
    assert "warning[W0223]: NCCL_IB_HCA=mlx5 in the environment is cleared" in started["stderr"]
    assert "warning[W0223]: UCX_NET_DEVICES=mlx5_0:1" in started["stderr"]


def test_an_inherited_nic_variable_vllm_is_not_told_of_is_said(compiled) -> None:
    job = compiled("nvidia-dgx-a100.yaml", SPEC)
    started = job.run("vllm", ["m", "-tp", "8"], "VLLM", {"NCCL_IB_HCA": "mlx5"})
    assert started["env"]["NCCL_IB_HCA"] == "mlx5"
    assert "NCCL_IB_HCA=mlx5 in the environment reaches every vLLM worker as it is" \
        in started["stderr"]


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("node", [0, 1])
def test_data_parallel_across_nodes_as_kserve_and_leaderworkerset_run_it(
        compiled, machine: str, node: int) -> None:
    """KServe and LeaderWorkerSet run one plan of a node on each node, with vLLM's own data
    parallel flags: `--data-parallel-size-local L --data-parallel-start-rank NODE*L`, and
    `--headless` past the first node. vLLM gives each node's workers their ranks' CPUs."""
    job = compiled(machine, SPEC)
    local = 4
    args = ["m", "-tp", "2", "--data-parallel-size", str(2 * local),
            "--data-parallel-size-local", str(local),
            "--data-parallel-start-rank", str(node * local),
            "--data-parallel-address", "10.0.0.1"] + (["--headless"] if node else [])
    started = job.run("vllm", args, "VLLM")
    config = parallel_config(started["argv"])
    assert (config.nnodes, config.data_parallel_size_local) == (1, local)
    check_workers(job.plan, started, 8)


def test_vllm_may_be_a_whole_command(compiled) -> None:
    """`VLLM` replaces the whole `vllm` command, as `SGLANG` replaces SGLang's (`uv run vllm`;
    here `env MARK=1 STAND-IN`): the stand-in is started with `serve` and the mark."""
    import subprocess
    job = compiled("nvidia-dgx-a100.yaml", SPEC + "gpus: [2]\n")
    job.run("vllm", ["m"], "VLLM")  # writes the stand-in
    out = job.dir / "wrapped.json"
    env = {k: v for k, v in os.environ.items() if k not in INHERITED}
    env.update(NUMAPLAN="true", STAND_IN_OUT=str(out), VLLM=f"env MARK=1 {job.dir / 'engine'}")
    subprocess.run(["bash", str(job.emit("vllm")), "m"], check=True, env=env)
    started = json.loads(out.read_text())
    assert started["argv"][:2] == ["serve", "m"]
    assert started["env"]["MARK"] == "1"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_inherited_gpus_by_uuid_are_the_plans_or_refused(compiled, engine: str) -> None:
    """A container or scheduler may name the GPUs by UUID: the plan's, in its ranks' order,
    pass; another GPU's UUID is refused."""
    four = "../../tests/cases/topologies/two-cpus-four-gpus.yaml"
    spec = SPEC.replace("vllm", engine) + "gpus: [2, 3]\ncpu: {policy: node}\n"
    job = compiled(four, spec)
    uuids = ",".join(r["gpu_uuid"][0] for r in job.plan["ranks"])
    variable = {"vllm": "VLLM", "sglang": "NUMAPLAN"}[engine]
    started = job.run(engine, ["m"], variable, {"CUDA_VISIBLE_DEVICES": uuids})
    assert started["env"]["CUDA_VISIBLE_DEVICES"] == "2,3"
    other = "GPU-8f3c0c3a-0000-4000-8000-000000000000," + uuids.split(",")[1]
    run = job.attempt(engine, ["m"], {"CUDA_VISIBLE_DEVICES": other})
    assert run.returncode == 2 and "error[E0447]: CUDA_VISIBLE_DEVICES=" in run.stderr, run.stderr
