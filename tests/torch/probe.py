"""A rank's read-back, written to $OUT/seen-RANK.json: its CPUs and memory policy from
/proc/self, every thread's CPUs, torch's thread count when torch is loaded, the launcher's
variables. `--fail-first` exits 1 on torchrun's first attempt (after writing), `--sleep S`
waits before exiting."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict


def read_back(extra: Dict[str, Any] | None = None) -> Dict[str, Any]:
    status = Path("/proc/self/status").read_text()
    cpus = status.split("Cpus_allowed_list:")[1].split()[0]
    policy = Path("/proc/self/numa_maps").read_text().split("\n", 1)[0].split()[1]
    threads = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:
            continue
        threads[task.name] = text.split("Cpus_allowed_list:")[1].split()[0]
    record: Dict[str, Any] = {
        "rank": int(os.environ.get("RANK", "-1")),
        "local_rank": os.environ.get("LOCAL_RANK"),
        "cpus": cpus,
        "policy": policy,
        "threads": threads,
        "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
                                                "TORCHELASTIC_RESTART_COUNT")},
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        record["torch_threads"] = torch.get_num_threads()
    record.update(extra or {})
    return record


def write(record: Dict[str, Any], suffix: str = "") -> None:
    out = Path(os.environ["OUT"]) / f"seen-{record['rank']}{suffix}.json"
    out.write_text(json.dumps(record))


if __name__ == "__main__":
    record = read_back()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    write(record, f".{attempt}" if "--fail-first" in sys.argv else "")
    if "--fail-first" in sys.argv and attempt == 0:
        sys.exit(1)
    if "--sleep" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
