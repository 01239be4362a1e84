#!/usr/bin/env bash
# Installs what numaplan needs to build and test on Debian 12 (the system libhwloc and friends,
# cargo-insta). Idempotent: installs only what is missing. Needs root or sudo for apt.
set -euo pipefail

# librsvg2-bin: rsvg-convert renders `explain --format svg` in a test. bzip2: tests/discover.rs
# extracts a sysfs snapshot (.tar.bz2). openmpi-bin, mpich: tests/bind.rs runs `numaplan bind` under
# mpirun.openmpi and mpiexec.mpich. libomp-dev: tests/openmp.rs links its OpenMP probe with
# LLVM's runtime as well as GNU's (gcc's libgomp). groff-base: tests/cli.rs renders the man page.
# libmpich-dev (only recommended by mpich): mpicc.mpich builds the MPI program that
# tests/groups_launch.rs and tests/hetjob.rs run across a job's groups.
packages=(libhwloc-dev libudev-dev pkg-config hwloc numactl shellcheck librsvg2-bin bzip2 openmpi-bin mpich libmpich-dev libomp-dev groff-base)
# As root only: the real-Slurm tests (the daemons run as root; iproute2 and util-linux give the
# 3-node cluster its network namespaces), the QEMU multi-NUMA guest (tests/vm/qemu-numa.sh
# also downloads Debian's kernel package there) and the real OCI containers of
# tests/containers.rs (podman and crun, tests/container/container.sh).
[ "$(id -u)" -ne 0 ] || packages+=(slurm-wlm munge iproute2 util-linux qemu-system-x86 busybox-static cpio podman crun)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Python package's tests (scripts/python-test.sh) need python3 with venv and pip; Debian's
# python3 lacks venv until python3-venv is installed.
if [ "${1:-}" = "--test" ] && ! python3 -m venv --help >/dev/null 2>&1; then
  echo "deps: installing python3-venv" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-venv >/dev/null
fi

if [ "${1:-}" = "--test" ] && ! command -v cargo-insta >/dev/null; then
  echo "deps: installing cargo-insta" >&2
  cargo install cargo-insta --locked --quiet
fi
