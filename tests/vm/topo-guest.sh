#!/bin/sh
# Runs in a QEMU guest of tests/vm.rs: prints what `numaplan topo` discovers, as JSON, for the
# whole machine and then restricted with taskset to QEMU_GUEST_ALLOWED (CPUs), and the plan
# of a CPU-only job compiled for each, so the test can compare them with what QEMU was told.
set -e
cd /tmp
echo "TOPO_JSON_BEGIN"
numaplan topo --format json
echo "TOPO_JSON_END"
echo "RESTRICTED_JSON_BEGIN"
taskset -c "$QEMU_GUEST_ALLOWED" numaplan topo --format json
echo "RESTRICTED_JSON_END"
printf 'command: [true]\ngpus: none\nranks_per_node: 2\n' > job.yaml
echo "RESTRICTED_PLAN_BEGIN"
taskset -c "$QEMU_GUEST_ALLOWED" numaplan --quiet compile job.yaml --format json
echo "RESTRICTED_PLAN_END"
# A fixture captured here compiles to the same plan as discovering directly (restricted too).
taskset -c "$QEMU_GUEST_ALLOWED" numaplan topo --format yaml -o node.yaml
taskset -c "$QEMU_GUEST_ALLOWED" numaplan --quiet compile job.yaml --format json > discovered.json
taskset -c "$QEMU_GUEST_ALLOWED" numaplan --quiet compile job.yaml --topology node.yaml --format json > fixture.json
# The fixture's plan names its topology file (`"file": "node.yaml"`); discovery's names none.
grep -v '^    "file": "node.yaml",$' fixture.json > fixture-content.json
if cmp discovered.json fixture-content.json; then echo FIXTURE_PLAN_SAME; else diff discovered.json fixture-content.json || true; fi
# A cgroup v2 cpuset (as a Slurm job gets): the whole machine is still discovered, with the
# cpuset's CPUs and memory nodes as the allowed ones.
if [ -n "${QEMU_GUEST_CGROUP_CPUS:-}" ]; then
  mount -t cgroup2 none /sys/fs/cgroup
  echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
  mkdir /sys/fs/cgroup/job
  echo "$QEMU_GUEST_CGROUP_CPUS" > /sys/fs/cgroup/job/cpuset.cpus
  echo "$QEMU_GUEST_CGROUP_MEMS" > /sys/fs/cgroup/job/cpuset.mems
  echo "CGROUP_JSON_BEGIN"
  sh -c 'echo $$ > /sys/fs/cgroup/job/cgroup.procs && exec numaplan topo --format json'
  echo "CGROUP_JSON_END"
fi
