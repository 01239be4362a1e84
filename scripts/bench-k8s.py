#!/usr/bin/env python3
"""What a Kubernetes pod adds to its launch (`exec --pod given` against `exec`) and what its
manifests cost to write (`--emit k8s`, `--emit kubelet` against `--emit torchrun`), each pair
alternated: 3 rounds of 11 runs each, the median of the rounds' medians, as BENCHMARKS.md
("Kubernetes") records them. The binary: NUMAPLAN_BENCH_BIN, else target/release/numaplan."""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = os.environ.get("NUMAPLAN_BENCH_BIN", str(REPO / "target/release/numaplan"))
JOB = 'command: ["true"]\ngpus: none\nranks_per_node: 1\ncpu: {policy: exclusive, allowed: "1"}\n'


def median_ms(cmd, runs=11):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main():
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "job.yaml").write_text(JOB)
        plan = str(Path(d) / "plan.yaml")
        subprocess.run([BIN, "compile", "-q", str(Path(d) / "job.yaml"), "-o", plan], check=True)
        example = str(REPO / "examples/dgx-h100-k8s.yaml")
        rows = [
            ("exec vs exec --pod given", [BIN, "exec", "-q", plan],
             [BIN, "exec", "-q", "--pod", "given", plan]),
            ("the same, --dry-run", [BIN, "exec", "-q", "--dry-run", plan],
             [BIN, "exec", "-q", "--pod", "given", "--dry-run", plan]),
            ("--emit torchrun vs --emit k8s", [BIN, "compile", "-q", example, "--emit", "torchrun"],
             [BIN, "compile", "-q", example, "--emit", "k8s"]),
            ("--emit torchrun vs --emit kubelet", [BIN, "compile", "-q", example, "--emit", "torchrun"],
             [BIN, "compile", "-q", example, "--emit", "kubelet"]),
        ]
        for name, without, with_ in rows:
            a, b = [], []
            for _ in range(3):
                a.append(median_ms(without))
                b.append(median_ms(with_))
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"| {name} | {ma:.2f} ms | {mb:.2f} ms | {mb / ma:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
