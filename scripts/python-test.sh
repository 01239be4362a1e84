#!/usr/bin/env bash
# The Python package's checks: build the wheel from this checkout with maturin, install it in a
# fresh virtual environment (nothing else from the checkout on its path), and run the pytest
# suite of tests/python with that environment's python, `pip install .` and the pre-commit hook
# (installed by pre-commit from this checkout's HEAD) included. Needs python3 with venv and PyPI
# (maturin, mypy, pytest, pre-commit, jsonschema, pyyaml, kubernetes-validate, kubernetes,
# cel-python; Ray where it installs). The wheel is
# left in target/wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=target/python
rm -rf "$dir"
python3 -m venv "$dir/build"
"$dir/build/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2" mypy
# The package ships py.typed: its annotations must hold.
"$dir/build/bin/mypy" --strict python/numaplan >&2
rm -f target/wheels/numaplan-*.whl
"$dir/build/bin/maturin" build --release --quiet --out target/wheels >&2

python3 -m venv "$dir/venv"
# kubernetes-validate (Kubernetes' OpenAPI schemas), the kubernetes client and cel-python (an
# independent CEL) for tests/python/test_kubernetes.py.
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check target/wheels/numaplan-*.whl \
  pytest pre-commit jsonschema pyyaml "kubernetes-validate>=1.37" "kubernetes>=34" "cel-python>=0.5"
# Ray (CPU-only) for tests/python/test_workers.py: actors given a GPU each bind by it. Its test
# is skipped, with the reason printed here, where Ray cannot be installed.
if ! "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "ray>=2.9" 2> "$dir/ray.log"; then
  echo "python-test: Ray could not be installed, its test is skipped: $(tail -1 "$dir/ray.log")" >&2
fi
# Run from tests/python with the checkout's python/ out of sys.path: the installed package is
# the one under test.
python=$PWD/$dir/venv/bin/python
cd tests/python
NUMAPLAN_PIP_INSTALL=1 NUMAPLAN_PRE_COMMIT=1 exec "$python" -m pytest -p no:cacheprovider -q "$@"
