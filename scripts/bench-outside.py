#!/usr/bin/env python3
"""Times whole commands from outside, as a user's script would: fork and exec from Python
(subprocess), wall time from before the fork to after the wait, A and B alternating after
warm-up pairs, medians of the pairwise ratios. A second harness beside benches/whole.rs
(scripts/bench.sh), to tell what either one's set-up adds: run with --explain to time the same
pairs under each difference between the two (the quiet flag, where the child's output goes,
the size of its environment, the binary) one at a time. Prints Markdown for BENCHMARKS.md.

Usage: scripts/bench-outside.py [--numaplan BIN] [--runs N] [--explain]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict[str, str], out: str) -> float:
    """Milliseconds from before the fork to after the wait; `out`: where the child's stdout and
    stderr go (`null`, `pipe`: read by this process, as `capture_output=True` does)."""
    sink = subprocess.DEVNULL if out == "null" else subprocess.PIPE
    start = time.perf_counter_ns()
    run = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink)
    ms = (time.perf_counter_ns() - start) / 1e6
    if run.returncode != 0:
        sys.exit(f"{argv} failed ({run.returncode}): {run.stderr!r}")
    return ms


def pair(a: list[str], b: list[str], runs: int, env: dict[str, str], out: str) -> tuple:
    for _ in range(3):
        timed(a, env, out), timed(b, env, out)
    ta, tb = [], []
    for _ in range(runs):
        ta.append(timed(a, env, out))
        tb.append(timed(b, env, out))
    ratios = sorted(x / y for x, y in zip(ta, tb))
    q = statistics.quantiles(ratios, n=4)
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios), q[0], q[2]


def compile_plans(numaplan: str, dir: Path) -> tuple[Path, Path]:
    exec_job = dir / "exec.job.yaml"
    exec_job.write_text('command: ["true"]\ngpus: none\nranks_per_node: 8\n'
                        "cpu: {policy: node}\nmemory: {policy: bind}\n")
    bind_job = dir / "bind.job.yaml"
    bind_job.write_text("gpus: none\nranks_per_node: 2\nmemory: {policy: bind}\n")
    plans = dir / "exec.yaml", dir / "bind.yaml"
    for job, plan in ((exec_job, plans[0]), (bind_job, plans[1])):
        subprocess.run([numaplan, "-q", "compile", str(job), "-o", str(plan)], check=True)
    big_job = dir / "bind64.job.yaml"
    big_job.write_text("gpus: none\nranks_per_node: 64\ncpu: {policy: node}\n"
                       "env: {NCCL_DEBUG: INFO, NCCL_IB_HCA: mlx5_0, UCX_NET_DEVICES: mlx5_0:1}\n")
    subprocess.run([numaplan, "-q", "compile", str(big_job), "-o", str(dir / "bind64.yaml")],
                   check=True)
    trampoline = dir / "trampoline.sh"
    trampoline.write_text('#!/bin/sh\nexec numactl --physcpubind=$LOCAL_RANK --membind=0 "$@"\n')
    trampoline.chmod(0o755)
    return plans


def rows(numaplan: str, quiet: bool, dir: Path, loop: str = "seq",
         bind_plan: str = "bind.yaml") -> list[tuple[str, list[str], list[str], dict]]:
    q = ["-q"] if quiet else []
    exec_plan, bind_plan = dir / "exec.yaml", dir / bind_plan
    ranks = "$(seq 0 7)" if loop == "seq" else "0 1 2 3 4 5 6 7"
    loop = f"for r in {ranks}; do LOCAL_RANK=$r /bin/true & done; wait"
    return [
        ("exec of 8 ranks, prefixed, vs a bare bash loop",
         [numaplan, *q, "exec", str(exec_plan)], ["bash", "-c", loop], {}),
        ("exec of 8 ranks, --no-prefix, vs a bare bash loop",
         [numaplan, *q, "exec", str(exec_plan), "--no-prefix"], ["bash", "-c", loop], {}),
        ("`LOCAL_RANK=1 bind plan.yaml -- true` vs the sh+numactl trampoline",
         [numaplan, *q, "bind", str(bind_plan), "--", "true"],
         [str(dir / "trampoline.sh"), "true"], {"LOCAL_RANK": "1"}),
    ]


def table(title: str, numaplan: str, quiet: bool, out: str, env: dict, runs: int, dir: Path,
          **variant):
    print(f"\n{title}\n")
    print("| what | numaplan | alternative | ratio (median) | ratio p25-p75 |")
    print("|---|---|---|---|---|")
    for what, a, b, extra in rows(numaplan, quiet, dir, **variant):
        ma, mb, r, lo, hi = pair(a, b, runs, {**env, **extra}, out)
        print(f"| {what} | {ma:.2f} ms | {mb:.2f} ms | **{r:.2f}x** | {lo:.2f}-{hi:.2f} |")
        sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--numaplan", default=str(REPO / "target/release/numaplan"))
    p.add_argument("--debug-numaplan", default=str(REPO / "target/debug/numaplan"))
    p.add_argument("--runs", type=int, default=41)
    p.add_argument("--explain", action="store_true")
    args = p.parse_args()
    small = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    big = {**os.environ, **{f"PADDING_{i}": "x" * 200 for i in range(300)}}
    with tempfile.TemporaryDirectory() as d:
        dir = Path(d)
        compile_plans(args.numaplan, dir)
        table("As scripts/bench.sh runs them: `-q`, output to /dev/null, this environment",
              args.numaplan, True, "null", dict(os.environ), args.runs, dir)
        if not args.explain:
            return
        table("Without `-q` (the plan's warnings printed)", args.numaplan, False, "null",
              dict(os.environ), args.runs, dir)
        table("Output to pipes this process reads (`capture_output=True`)", args.numaplan,
              True, "pipe", dict(os.environ), args.runs, dir)
        table("A three-variable environment", args.numaplan, True, "null", small, args.runs, dir)
        table("An environment of 300 more variables (60 KiB)", args.numaplan, True, "null", big,
              args.runs, dir)
        table("The bash loop without `$(seq 0 7)` (its ranks written out: no `seq` process)",
              args.numaplan, True, "null", dict(os.environ), args.runs, dir, loop="words")
        table("`bind` of a plan of 64 ranks with three `env:` variables each",
              args.numaplan, True, "null", dict(os.environ), args.runs, dir,
              bind_plan="bind64.yaml")
        if Path(args.debug_numaplan).exists():
            table("The debug build (`target/debug/numaplan`)", args.debug_numaplan, True, "null",
                  dict(os.environ), args.runs, dir)


if __name__ == "__main__":
    main()
