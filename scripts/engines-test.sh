#!/usr/bin/env bash
# The serving engines' own code reading numaplan's launches (tests/engines): the real vLLM
# 0.33.0 and SGLang 0.5.23 from PyPI, installed without their dependencies (vLLM's wheel is
# 336 MB; no CUDA kernel is ever loaded) into the PyTorch virtual environment
# (scripts/torch-test.sh makes it), plus the packages their argument parsers, configs and
# numa_utils import, at the versions the engines' own metadata pins. The installs are kept with
# that environment; about 3 minutes the first time (a fresh venv, measured), 30 s after.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NUMAPLAN_TORCH_VENV:-$PWD/target/torch-venv}
"$venv/bin/python" -c "import torch" 2>/dev/null \
  || { echo "engines-test: no PyTorch in $venv: run scripts/torch-test.sh first" >&2; exit 1; }
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir)
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT

# install PACKAGE VERSION NEEDED [EXTRA...]: the package's wheel without its dependencies,
# then those of them named in the regular expression NEEDED, at the package's own pins, and
# EXTRA as they come; nothing when that version is installed already.
install() {
  local package=$1 version=$2 needed=$3 pins
  shift 3
  if "$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('$package') != '$version')" 2>/dev/null; then
    return
  fi
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$wheels" "$package==$version"
  mapfile -t pins < <("$venv/bin/python" -c 'import sys, zipfile
print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())' "$wheels/$package-$version"-*.whl \
    "$package-$version.dist-info/METADATA" | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
    | grep -iE "^($needed)([^a-z_-]|$)" | sed 's/;.*//')
  "${pip[@]}" "${pins[@]}" "$@"
  "${pip[@]}" --no-deps "$wheels/$package-$version"-*.whl
}
# What `vllm serve`'s parser, vllm.config and vllm.utils.numa_utils import.
install vllm 0.33.0 'regex|cachetools|psutil|requests|py-cpuinfo|transformers|fastapi|aiohttp|openai|pydantic|prometheus_client|pillow|llguidance|xgrammar|partial-json-parser|pyzmq|msgspec|cloudpickle|pybase64|cbor2' \
  urllib3 uvloop openai-harmony
# What SGLang's ServerArgs and sglang.srt.utils.numa_utils import beyond those.
install sglang 0.5.23 'orjson|ipython'
# shellcheck disable=SC2012 # wheel names have no spaces
wheel=$(ls -t target/wheels/numaplan-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || { echo "engines-test: no wheel in target/wheels: run scripts/python-test.sh" >&2; exit 1; }
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
cd tests/engines
exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
