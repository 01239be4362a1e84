#!/usr/bin/env bash
# The serving engines' own code reading numaplan's launches (tests/engines): the real vLLM
# 0.33.0 from PyPI, installed without its dependencies (a 336 MB wheel; its CUDA kernels are
# never loaded) into the PyTorch virtual environment (scripts/torch-test.sh makes it), plus
# the packages its argument parser, config and numa_utils import, at the versions vLLM's own
# metadata pins. The installs are kept with that environment; about 60 s the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NUMAPLAN_TORCH_VENV:-$PWD/target/torch-venv}
"$venv/bin/python" -c "import torch" 2>/dev/null \
  || { echo "engines-test: no PyTorch in $venv: run scripts/torch-test.sh first" >&2; exit 1; }
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir)
vllm_version=0.33.0
if ! "$venv/bin/python" -c "import vllm, sys; sys.exit(vllm.__version__ != '$vllm_version')" 2>/dev/null; then
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$wheels" "vllm==$vllm_version"
  # What `vllm serve`'s parser, vllm.config and vllm.utils.numa_utils import, as vLLM pins it.
  needed='regex|cachetools|psutil|requests|py-cpuinfo|transformers|fastapi|aiohttp|openai|pydantic|prometheus_client|pillow|llguidance|xgrammar|partial-json-parser|pyzmq|msgspec|cloudpickle|pybase64|cbor2'
  mapfile -t pins < <("$venv/bin/python" -c 'import sys, zipfile
print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())' "$wheels"/vllm-*.whl \
    "vllm-$vllm_version.dist-info/METADATA" | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' | grep -E "^($needed)([^a-z_-]|$)" | sed 's/;.*//')
  "${pip[@]}" "${pins[@]}" urllib3 uvloop openai-harmony
  "${pip[@]}" --no-deps "$wheels"/vllm-*.whl
fi
# shellcheck disable=SC2012 # wheel names have no spaces
wheel=$(ls -t target/wheels/numaplan-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { echo "engines-test: no wheel in target/wheels: run scripts/python-test.sh" >&2; exit 1; }
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
cd tests/engines
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
