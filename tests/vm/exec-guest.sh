#!/bin/sh
# Runs in the QEMU multi-NUMA guest (tests/vm.rs): prints the discovered topology, then starts
# one rank per NUMA node with `numaplan exec` (auto placement, memory bound) and exits with its
# status. numaplan and rank-touch are in /opt.
set -e
cd /tmp
echo "TOPO_JSON_BEGIN"
numaplan topo --format json
echo "TOPO_JSON_END"
cat > job.yaml <<JOB
command: [/opt/rank-touch]
ranks_per_node: $QEMU_NUMA_NODES
gpus: none
cpu: {policy: auto}
memory: {policy: bind}
JOB
numaplan exec job.yaml --verify
# The same ranks under MPICH's Hydra (mpiexec.hydra and hydra_pmi_proxy are in /opt), each
# bound by `numaplan bind` from the plan, MPI binding nothing.
numaplan compile job.yaml -o plan.yaml
echo "MPI_BEGIN"
mpiexec.hydra -launcher fork -bind-to none -n "$QEMU_NUMA_NODES" \
  numaplan bind plan.yaml --verbose -- /opt/rank-touch 2>&1
echo "MPI_END"
# OpenMP inside the ranks (/opt/omp-probe prints every thread's CPUs): 4 ranks of 2 threads,
# `close` over their node's cores; then one rank over the whole guest (four L3 groups, one per
# node) with 4 threads `close` and `spread`.
omp_job() {
  cat > omp.yaml <<JOB
command: [/opt/omp-probe]
ranks_per_node: $1
gpus: none
openmp: {places: cores, bind: $2, threads: $3}
JOB
}
omp_job "$QEMU_NUMA_NODES" close 2
echo "OMP_RANKS_BEGIN"
numaplan exec omp.yaml
echo "OMP_RANKS_END"
for bind in close spread; do
  omp_job 1 "$bind" 4
  echo "OMP_ONE_${bind}_BEGIN"
  numaplan exec omp.yaml
  echo "OMP_ONE_${bind}_END"
done
# A cgroup whose cpuset.mems leaves out two of the four nodes (a job given part of a node's
# memory). The kernel narrows a policy to the allowed nodes without an error, so a plan
# interleaving over all four (compiled outside the cgroup) is refused before anything starts
# (E0411); one that does not require its policy starts, and `exec --verify` reads the narrowed
# policy back in the rank's child before the program runs (E0438). Nothing is left running.
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null || true
echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/narrow
echo 0-7 > /sys/fs/cgroup/narrow/cpuset.cpus
echo 0-1 > /sys/fs/cgroup/narrow/cpuset.mems
wide() {
  cat > wide.yaml <<JOB
command: [/opt/rank-touch]
ranks_per_node: 1
gpus: none
memory: {policy: interleave, nodes: "0-3", required: $1}
JOB
  shift
  numaplan compile wide.yaml -o wide-plan.yaml
  status=0
  sh -c 'echo $$ > /sys/fs/cgroup/narrow/cgroup.procs && exec numaplan exec wide-plan.yaml "$@"' \
    sh "$@" 2>&1 || status=$?
  echo "status $status"
}
echo "MEMS_REQUIRED_BEGIN"
wide true
echo "MEMS_REQUIRED_END"
echo "READBACK_BEGIN"
wide false --verify
echo "READBACK_END"
