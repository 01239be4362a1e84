#!/usr/bin/env python3
"""What `numaplan.check_binding()` costs a rank (docs/engines.md says to call it after
`init_process_group`), against what a rank would otherwise run: `numactl --show` in a
subprocess (vLLM logs its workers' binding with it), and `os.sched_getaffinity` (the calling
thread's CPUs only, no memory policy, no other thread, no plan).

Run in a rank bound by numaplan, with the package and binary to measure on the path:
    numaplan bind PLAN --local-rank 0 -- python3 scripts/bench-check.py [ROUNDS] [CALLS]
Prints the median per call of each, over ROUNDS rounds of CALLS calls (default 7 x 50)."""

import os
import statistics
import subprocess
import sys
import time

import numaplan


def per_call(function, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls * 1000


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    assert numaplan.check_binding(), "run it in a rank numaplan bound"
    ways = {
        "numaplan.check_binding()": numaplan.check_binding,
        "subprocess numactl --show": lambda: subprocess.run(["numactl", "--show"],
                                                            capture_output=True, check=True),
        "os.sched_getaffinity(0)": lambda: os.sched_getaffinity(0),
    }
    for name, function in ways.items():
        times = [per_call(function, calls) for _ in range(rounds)]
        print(f"{name:28} median {statistics.median(times):8.3f} ms per call "
              f"(rounds {min(times):.3f}-{max(times):.3f})")


if __name__ == "__main__":
    main()
