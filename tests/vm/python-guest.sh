#!/bin/sh
# Runs in the QEMU multi-NUMA guest (tests/vm.rs): one rank per NUMA node bound by numaplan's
# Python package, started twice: as separate processes by the shell (`numaplan.bind()` with
# LOCAL_RANK, as torchrun starts them; pages touched before are moved with migrate=True), and
# by `numaplan.spawn`. The interpreter is $QEMU_GUEST_PYTHON (tests/vm/python-root.sh staged it),
# the package is in /opt/py, numaplan and py-rank.py in /opt.
set -e
cd /tmp
cat > job.yaml <<JOB
ranks_per_node: $QEMU_NUMA_NODES
gpus: none
cpu: {policy: auto}
memory: {policy: bind}
JOB
numaplan compile job.yaml -o plan.yaml
export NUMAPLAN_BIN=/opt/numaplan NUMAPLAN_PLAN=/tmp/plan.yaml PYTHONPATH=/opt/py
export LOCAL_WORLD_SIZE="$QEMU_NUMA_NODES"
echo "PY_BIND_BEGIN"
i=0
while [ "$i" -lt "$QEMU_NUMA_NODES" ]; do
  LOCAL_RANK=$i "$QEMU_GUEST_PYTHON" -S /opt/py-rank.py bind &
  i=$((i + 1))
done
wait
echo "PY_BIND_END"
unset LOCAL_WORLD_SIZE
echo "PY_SPAWN_BEGIN"
"$QEMU_GUEST_PYTHON" -S /opt/py-rank.py spawn
echo "PY_SPAWN_END"
