"""In the QEMU guest (tests/vm/python-guest.sh): ranks bound by numaplan's Python package print,
one JSON line each, where the kernel put them: the CPUs and memory policy from /proc, and the
NUMA nodes of pages touched before `bind(migrate=True)` and after it.

    py-rank.py bind     one rank; the local rank from LOCAL_RANK, the plan from NUMAPLAN_PLAN
    py-rank.py spawn    numaplan.spawn of every rank of the plan's node
"""

import ctypes
import json
import mmap
import os
import sys

import numaplan


def touch(size=8 << 20):
    region = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        region[offset] = 1
    return region


def pages(region):
    """The numa_maps entry of `region`: its policy and its pages per node."""
    pointer = ctypes.c_char.from_buffer(region)
    start = format(ctypes.addressof(pointer), "x")
    del pointer
    with open("/proc/self/numa_maps") as maps:
        fields = next(line for line in maps if line.split()[0] == start).split()
    nodes = {f.split("=")[0][1:]: int(f.split("=")[1]) for f in fields[2:] if f[:1] == "N"}
    return {"policy": fields[1], "nodes": nodes}


def cpus_allowed():
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("Cpus_allowed_list"))


def report(how, rank, before=None):
    after = touch()
    line = {
        "how": how,
        "local_rank": rank.local_rank,
        "planned_cpus": rank.cpu_list,
        "planned_nodes": sorted(rank.memory.nodes),
        "cpus": cpus_allowed(),
        "after": pages(after),
        "before": pages(before) if before is not None else None,
    }
    print(json.dumps(line), flush=True)


def spawned(local_rank):
    # numaplan.spawn bound this process before calling it; resolve says what the plan wanted.
    report("spawn", numaplan.resolve(local_rank=local_rank, quiet=True))


if __name__ == "__main__":
    if sys.argv[1] == "bind":
        before = touch()
        report("bind", numaplan.bind(migrate=True), before)
    else:
        numaplan.spawn(spawned, os.environ["NUMAPLAN_PLAN"])
