#!/usr/bin/env bash
# Stages under STAGE (tests/vm.rs hands it to qemu-numa.sh as QEMU_NUMA_TREE) the Python that
# tests/vm/python-guest.sh runs in the QEMU guest: this machine's python3 interpreter and only
# the standard-library modules that numaplan's package, multiprocessing's spawn children and
# tests/vm/py-rank.py import (with their compiled .pyc), each at its own path, so the guest's
# interpreter finds its prefix as on the host; and the package itself in STAGE/opt/py.
# Prints the interpreter's path. The guest runs it with -S (no site-packages).
set -euo pipefail
stage=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
python3 -S - "$stage" "$repo" <<'EOF'
import importlib.util
import os
import shutil
import sys

stage, repo = sys.argv[1], sys.argv[2]
package = os.path.join(repo, "python")
sys.path.insert(0, package)
# What the guest imports, children of multiprocessing's spawn and forkserver included (they
# run the main script again with runpy).
import ctypes, json, mmap, pkgutil, runpy, threading  # noqa: E401,F401
import multiprocessing.popen_spawn_posix, multiprocessing.popen_forkserver  # noqa: E401,F401
import multiprocessing.resource_tracker, multiprocessing.spawn  # noqa: E401,F401
import numaplan  # noqa: F401

files = {os.path.realpath(sys.executable)}
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None)
    if not path or not os.path.isabs(path) or path.startswith(package):
        continue
    files.add(path)
    if path.endswith(".py"):
        compiled = importlib.util.cache_from_source(path)
        if os.path.exists(compiled):
            files.add(compiled)
for path in files:
    target = stage + path
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(path, target)
shutil.copytree(os.path.join(package, "numaplan"), os.path.join(stage, "opt/py/numaplan"),
                ignore=shutil.ignore_patterns("__pycache__"))
print(os.path.realpath(sys.executable))
EOF
