#!/usr/bin/env bash
# The one command that runs every check: formatting, clippy, rustdoc, the whole test suite through
# cargo-insta (which refuses unreviewed or unreferenced snapshots), with hwloc's own test-suite
# machines fetched from Debian's source package, a one-node Slurm running for the sbatch tests
# when this machine can host one (root), then the Python package's pytest suite on the wheel in
# a fresh virtual environment. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh --test

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy" >&2
cargo clippy --all-targets --locked -- -D warnings
echo "== cargo doc (broken intra-doc links fail)" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet

# A real Slurm (slurmctld, slurmd, munge) on localhost for tests/emit_sbatch.rs, and a 3-node
# one in network namespaces for tests/multinode.rs.
if [ "$(id -u)" -eq 0 ]; then
  export SLURM_LOCAL_DIR=${SLURM_LOCAL_DIR:-/tmp/numaplan-slurm}
  export MSLURM_DIR=${MSLURM_DIR:-/tmp/numaplan-mslurm}
  trap 'tests/slurm/slurm-local.sh stop; tests/slurm/slurm-multi.sh stop' EXIT
  tests/slurm/slurm-local.sh start
  tests/slurm/slurm-multi.sh start
  eval "$(tests/slurm/slurm-local.sh env)"
  export NUMAPLAN_SLURM=1 NUMAPLAN_MSLURM_CONF=$MSLURM_DIR/etc/slurm.conf
  # tests/vm.rs boots a 4-node guest kernel under QEMU (about 10 s).
  export NUMAPLAN_QEMU=1 QEMU_NUMA_DIR=${QEMU_NUMA_DIR:-/tmp/numaplan-qemu}
  # tests/containers.rs and tests/python/test_containers.py start podman containers with
  # Docker's seccomp profile (tests/container/container.sh, about 0.3 s each).
  export NUMAPLAN_CONTAINERS=1
else
  echo "== not root: the real-Slurm, QEMU and container tests are skipped" >&2
fi

# hwloc's own test-suite machines, from Debian's hwloc source package, for tests/hwloc_corpus.rs.
echo "== hwloc corpus" >&2
NUMAPLAN_HWLOC_CORPUS=$(tests/hwloc-corpus/build.sh)
export NUMAPLAN_HWLOC_CORPUS

echo "== cargo insta test" >&2
# CI=true makes insta refuse to write snapshots; --unreferenced=reject fails on stale ones.
CI=true cargo insta test --unreferenced=reject

echo "== python: the wheel in a fresh venv, pytest" >&2
scripts/python-test.sh

# PyTorch from PyPI is about 5 GB: its tests run where asked (CI sets NUMAPLAN_TEST_TORCH=1) or
# where scripts/torch-test.sh already made its virtual environment.
if [ "${NUMAPLAN_TEST_TORCH:-0}" = 1 ] || [ -x target/torch-venv/bin/python ]; then
  echo "== torch: PyTorch's own paths (tests/torch)" >&2
  scripts/torch-test.sh
  echo "== engines: vLLM's and SGLang's own code reading --emit vllm and sglang (tests/engines)" >&2
  scripts/engines-test.sh
else
  echo "== torch: skipped (NUMAPLAN_TEST_TORCH=1 runs it, installing PyTorch)" >&2
fi
