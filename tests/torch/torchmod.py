"""A training module as users write it: `import torch` at its top, then entry points that the
launchers call (mp.spawn, start_processes, elastic_launch, numaplan.spawn)."""

from __future__ import annotations

import os

import torch  # noqa: F401 - imported first, as training modules do
import torch.distributed as dist

import numaplan
import probe

#: The CPUs this module was imported on: under numaplan.spawn, the rank's already.
IMPORTED_ON = open("/proc/self/status").read().split("Cpus_allowed_list:")[1].split()[0]


def spawned(index: int, plan: str, out: str) -> None:
    """mp.spawn's callable: binds itself as local rank `index`, then reports."""
    os.environ["OUT"] = out
    os.environ["RANK"] = str(index)
    numaplan.bind(plan, local_rank=index)
    probe.write(probe.read_back())


def launched(plan: str, out: str) -> None:
    """elastic_launch's callable: torchrun's variables are set; bind by them."""
    os.environ["OUT"] = out
    rank = numaplan.bind(plan)
    probe.write(probe.read_back({"rank_env_rank": rank.env["RANK"]}))


def bound(index: int, out: str) -> None:
    """numaplan.spawn's callable: already bound when this module was imported."""
    os.environ["OUT"] = out
    os.environ["RANK"] = str(index)
    probe.write(probe.read_back({"imported_on": IMPORTED_ON}))


def all_reduce(index: int, plan: str, out: str, port: str) -> None:
    """Two bound ranks sum their ranks with gloo."""
    os.environ.update(OUT=out, RANK=str(index), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    numaplan.bind(plan, local_rank=index)
    dist.init_process_group("gloo", rank=index, world_size=2)
    total = torch.tensor([index + 1])
    dist.all_reduce(total)
    # Where docs/engines.md says to call it: after the communicator is made.
    after_init = numaplan.check_binding(plan)
    own = os.sched_getaffinity(0)
    elsewhere = min(set(range(os.cpu_count() or 1)) - own)
    os.sched_setaffinity(0, {elsewhere})
    moved = numaplan.check_binding(plan)
    os.sched_setaffinity(0, own)
    dist.destroy_process_group()
    probe.write(probe.read_back({
        "sum": int(total.item()), "after_init": bool(after_init),
        "moved": bool(moved), "moved_to": elsewhere,
        "moved_problems": [p.message for p in moved.problems if p.about == "cpus"]}))
