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
