#!/usr/bin/env bash
# numaplan on PyTorch's own paths with the real PyTorch from PyPI (CPU use only; about 5 GB
# installed, some 90 s here): torchrun with and without --virtual-local-rank and with restarts,
# callables that import torch at their top under mp.spawn, start_processes, elastic_launch and
# numaplan.spawn, a gloo all_reduce, two --emit torchrun scripts at once, verify --match beside
# torchrun's agent (tests/torch). The virtual environment is kept in target/torch-venv (made
# when missing; NUMAPLAN_TORCH_VENV names another); the numaplan wheel is the newest in
# target/wheels (scripts/python-test.sh builds it), installed anew every run.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NUMAPLAN_TORCH_VENV:-$PWD/target/torch-venv}
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  python3 -m venv "$venv"
  # --no-cache-dir: pip would otherwise keep a second copy of the ~3 GB of wheels.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir torch numpy pytest
fi
# shellcheck disable=SC2012 # wheel names have no spaces
wheel=$(ls -t target/wheels/numaplan-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { echo "torch-test: no wheel in target/wheels: run scripts/python-test.sh" >&2; exit 1; }
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
cd tests/torch
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
