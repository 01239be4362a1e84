#!/bin/sh
# Runs in the QEMU 4-node guest (tests/vm.rs): where ranks' memory really is, and threads that
# drift. numaplan, drift (tests/watch/drift.c) and py-memory.py are in /opt; the interpreter is
# $QEMU_GUEST_PYTHON with numaplan's package in /opt/py (tests/vm/python-root.sh).
#   LATE_*      verify of a rank that touched 256 MiB on node 2 before taking rank 3's binding
#               without migration: its pages are on the wrong node (exit 1)
#   WATCH_*     verify --watch of that rank while numaplan.bind(migrate=True) moves them
#   BOUND_*     verify of the same program started by `numaplan bind` as rank 1 (its row ok;
#               the three ranks not named are missing, exit 1)
#   DRIFT_*     exec --repin of 4 drift ranks, verify of them while they run, and the CPUs of
#               their threads read back from /proc after the proxies were put back
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
wait_for() {
  n=0
  while [ ! -e "$1" ]; do
    sleep 0.1
    n=$((n + 1))
    [ "$n" -lt 300 ] || { echo "no $1"; exit 1; }
  done
}

# verify_section TAG PID: `numaplan verify` of one rank between TAG_BEGIN and TAG_END, then its
# exit status.
verify_section() {
  echo "$1_BEGIN"
  status=0
  numaplan verify plan.yaml --pids "$2" || status=$?
  echo "exit $status"
  echo "$1_END"
}
LOCAL_RANK=3 numactl --membind=2 "$QEMU_GUEST_PYTHON" -S /opt/py-memory.py late &
late=$!
wait_for /tmp/ready-3
verify_section LATE "$late"
numaplan verify plan.yaml --pids "$late" --watch --interval 0.5 --format json > watch.jsonl &
watch=$!
while [ ! -s watch.jsonl ]; do sleep 0.1; done
touch /tmp/migrate
wait_for /tmp/moved-3
# The watch reads memory again once reading it costs under 1% of a CPU: wait for its line.
n=0
while ! grep -q memory-back watch.jsonl && [ "$n" -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
touch /tmp/stop
wait "$late"
status=0
wait "$watch" || status=$?
echo "WATCH_BEGIN"
cat watch.jsonl
echo "exit $status"
echo "WATCH_END"
rm -f /tmp/stop

LOCAL_RANK=1 numaplan bind plan.yaml -- "$QEMU_GUEST_PYTHON" -S /opt/py-memory.py bound &
bound=$!
wait_for /tmp/ready-1
verify_section BOUND "$bound"
touch /tmp/stop
wait "$bound"

cat > drift.yaml <<JOB
command: [/opt/drift]
ranks_per_node: $QEMU_NUMA_NODES
gpus: none
cpu: {policy: auto}
memory: {policy: bind}
env: {DRIFT_SECONDS: '6', DRIFT_TOUCH_MB: '64', DRIFT_DIR: /tmp/drift}
JOB
mkdir -p /tmp/drift
numaplan exec drift.yaml --repin --interval 0.5 2> exec.err &
exec=$!
for k in 0 1 2 3; do wait_for "/tmp/drift/ready-$k"; done
echo "DRIFT_VERIFY_BEGIN"
numaplan verify drift.yaml --match /opt/drift || echo "exit $?"
echo "DRIFT_VERIFY_END"
for k in 0 1 2 3; do wait_for "/tmp/drift/left-$k"; done
sleep 1.2
echo "DRIFT_READBACK_BEGIN"
for k in 0 1 2 3; do
  read -r pid proxy omp < "/tmp/drift/ready-$k"
  echo "rank $k proxy $(grep Cpus_allowed_list "/proc/$pid/task/$proxy/status" | cut -f2) omp $(grep Cpus_allowed_list "/proc/$pid/task/$omp/status" | cut -f2)"
done
echo "DRIFT_READBACK_END"
status=0
wait "$exec" || status=$?
echo "DRIFT_EXEC_BEGIN"
cat exec.err
echo "exit $status"
echo "DRIFT_EXEC_END"
