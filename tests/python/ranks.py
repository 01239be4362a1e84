"""What the tests' rank processes run (importable by `spawn` and `forkserver` children): bind,
then read the binding back from /proc as the kernel applies it."""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, Optional

import numaplan

PAGE = mmap.PAGESIZE


def status(path: str = "/proc/self/status") -> Dict[str, str]:
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def touched_pages(size: int = 4 << 20) -> Dict[str, Any]:
    """Maps and touches `size` bytes now, and returns that mapping's numa_maps entry: its
    policy and the pages on each node."""
    region = mmap.mmap(-1, size)
    for offset in range(0, size, PAGE):
        region[offset] = 1
    pointer = ctypes.c_char.from_buffer(region)
    start = format(ctypes.addressof(pointer), "x")
    del pointer
    with open("/proc/self/numa_maps") as maps:
        line = next(line for line in maps if line.split()[0] == start)
    region.close()
    fields = line.split()
    nodes = {f.split("=")[0]: int(f.split("=")[1]) for f in fields[2:] if f[:1] == "N" and "=" in f}
    return {"policy": fields[1], "nodes": nodes}


def readback() -> Dict[str, Any]:
    st = status()
    return {
        "pid": os.getpid(),
        "cpus": st["Cpus_allowed_list"],
        "mems": st["Mems_allowed_list"],
        "touched": touched_pages(),
        "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT",
                                               "OMP_NUM_THREADS")},
    }


def bind_and_report(
    queue: Any, plan: str, local_rank: Optional[int], env: Optional[Dict[str, str]] = None
) -> None:
    """A `multiprocessing` target: bind as `local_rank` (or from `env`'s launcher variables),
    then put the read-back on `queue`."""
    os.environ.update(env or {})
    try:
        rank = numaplan.bind(plan, local_rank)
        queue.put({"rank": rank.local_rank, "planned": rank.cpu_list, **readback()})
    except numaplan.Error as e:
        queue.put({"error": e.code, "message": str(e)})


def thread_before_bind(queue: Any, plan: str, local_rank: int) -> None:
    """A thread started before `bind` reports its own affinity after it."""
    bound = threading.Event()
    seen: Dict[str, Any] = {}

    def worker() -> None:
        seen["tid"] = threading.get_native_id()
        bound.wait()
        seen["cpus"] = sorted(os.sched_getaffinity(0))
        seen["status"] = status(f"/proc/self/task/{seen['tid']}/status")["Cpus_allowed_list"]

    thread = threading.Thread(target=worker)
    thread.start()
    while "tid" not in seen:
        time.sleep(0.001)
    before = sorted(os.sched_getaffinity(seen["tid"]))
    rank = numaplan.bind(plan, local_rank)
    bound.set()
    thread.join()
    queue.put({"before": before, "planned": sorted(rank.cpus), **seen})


def report_to(index: int, directory: str) -> None:
    """A `numaplan.spawn` callable: writes its read-back to DIRECTORY/INDEX."""
    import json

    Path(directory, str(index)).write_text(json.dumps(readback()))


def fail_in(index: int, failing: int, how: str, directory: str) -> None:
    """A `numaplan.spawn` callable: rank `failing` fails `how`; the others write their pid and
    wait to be stopped."""
    if index != failing:
        Path(directory, str(index)).write_text(str(os.getpid()))
        time.sleep(600)
        return
    while len(os.listdir(directory)) < 1:
        time.sleep(0.01)
    if how == "raise":
        raise ValueError(f"rank {index} gives up")
    if how == "exit":
        os._exit(3)
    if how == "signal":
        os.kill(os.getpid(), 9)


def succeed(index: int) -> None:
    pass


def bind_again(index: int, plan: str, directory: str) -> None:
    """A `numaplan.spawn` callable written for `mp.spawn`: it binds itself too."""
    import json

    rank = numaplan.bind(plan, index)
    Path(directory, str(index)).write_text(json.dumps({"planned": rank.cpu_list, **readback()}))


def hold(index: int, directory: str) -> None:
    """A `spawn` callable that stays up, bound, until `directory/stop` exists, after saying
    `directory/ready-INDEX`."""
    Path(directory, f"ready-{index}").write_text(str(os.getpid()))
    while not Path(directory, "stop").exists():
        time.sleep(0.02)
