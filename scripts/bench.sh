#!/usr/bin/env bash
# Whole-process benchmarks (benches/whole.rs): numaplan against hwloc-distrib, lstopo, bash and
# numactl loops, alternating in one run, on synthetic machines of 256 to 4096 CPUs and on this
# machine. Prints the machine, the command and Markdown tables for BENCHMARKS.md. Run by hand
# on an idle machine; arguments go to the harness (--runs N, --sizes 256,1024, --only
# compile|topo|mpibind|groups|exec|readback|bind|verify). Needs hwloc (hwloc-distrib, lstopo-no-graphics) and numactl (numastat).
# NUMAPLAN_BENCH_BIN=PATH measures another build of numaplan (before and after a change, in one run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >&2
echo "# numaplan $(git describe --always --dirty) benchmarks, $(date -u +%Y-%m-%d)"
echo
echo "machine: $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')), $(free -g | awk '/Mem:/ {print $2}') GiB," \
  "$(uname -sr), hwloc $(lstopo-no-graphics --version | awk '{print $NF}'), numactl $(dpkg-query -W -f='${Version}' numactl)"
echo "command: scripts/bench.sh $*"
echo
cargo bench --quiet --bench whole -- "$@"
