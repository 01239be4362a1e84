#!/bin/sh
# Runs in a QEMU guest of tests/vm.rs with two display devices of a GPU vendor (QEMU's ati-vga,
# AMD's vendor id) behind expander bridges on NUMA nodes 3 and 1: prints what `numaplan topo`
# discovers without a driver (no GPUs: nothing says the devices compute), then with a KFD
# topology naming both (what ROCm's amdgpu driver writes), then binds each rank of a plan with `numaplan bind` and prints what its process
# reads back from /proc and its GPU visibility; once more with /proc/bus/pci/devices masked (as
# in a container), where the node check reads every PCI function instead; and a plan of the GPU
# ROCR_VISIBLE_DEVICES names (`gpus: visible`); and a worker bound by the GPU it sees.
set -e
cd /tmp
# Without a driver nothing says the display devices compute: no GPUs, and notes that say why.
echo "NOKFD_JSON_BEGIN"
numaplan topo --format json
echo "NOKFD_JSON_END"
# ROCm's KFD topology as amdgpu writes it (node 0 the CPU, then one node per GPU with its SIMDs
# and PCI location), under a /sys/class that keeps every real class: sysfs cannot hold it.
mkdir -p /tmp/sysreal /tmp/class
mount -t sysfs sys /tmp/sysreal
for d in /tmp/sysreal/class/*; do ln -s "$d" "/tmp/class/${d##*/}"; done
nodes=/tmp/class/kfd/kfd/topology/nodes
mkdir -p "$nodes/0"
printf 'cpu_cores_count 8\nsimd_count 0\n' > "$nodes/0/properties"
n=0
for dev in /sys/bus/pci/devices/*; do
  [ "$(cat "$dev/vendor")" = 0x1002 ] || continue
  addr=${dev##*/}
  bus=$((0x$(echo "$addr" | cut -d: -f2)))
  slot=$(echo "$addr" | cut -d: -f3)
  n=$((n + 1))
  mkdir -p "$nodes/$n"
  printf 'simd_count 104\ndomain 0\nlocation_id %d\n' \
    $(((bus << 8) | (0x${slot%.*} << 3) | ${slot#*.})) > "$nodes/$n/properties"
done
mount --bind /tmp/class /sys/class
echo "TOPO_JSON_BEGIN"
numaplan topo --format json
echo "TOPO_JSON_END"
printf 'command: [true]\nranks_per_node: 2\nmemory: {policy: bind}\ngpu: {visible: own}\n' > job.yaml
numaplan --quiet compile job.yaml -o plan.yaml
# shellcheck disable=SC2016 # expanded by the rank's shell, not here
probe='echo "BOUND $LOCAL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(grep -m1 -o "bind:[0-9-]*" /proc/self/numa_maps) ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES"'
for rank in 0 1; do
  numaplan --quiet bind --local-rank "$rank" plan.yaml -- sh -c "$probe"
done
: > empty
mount --bind empty /proc/bus/pci/devices
[ ! -s /proc/bus/pci/devices ]
for rank in 0 1; do
  numaplan --quiet bind --local-rank "$rank" plan.yaml -- sh -c "$probe" | sed 's/^BOUND/MASKED/'
done
umount /proc/bus/pci/devices
printf 'command: [true]\ngpus: visible\nmemory: {policy: bind}\n' > visible.yaml
ROCR_VISIBLE_DEVICES=1 numaplan --quiet compile visible.yaml -o visible-plan.yaml
numaplan --quiet bind --local-rank 0 visible-plan.yaml -- sh -c "$probe" | sed 's/^BOUND/VISIBLE/'
# A worker that ROCm's variable gives GPU 1 finds its rank by it (`--local-rank gpu`); one that
# sees no GPU is refused.
ROCR_VISIBLE_DEVICES=1 numaplan --quiet bind --local-rank gpu plan.yaml -- sh -c "$probe" | sed 's/^BOUND/BYGPU/'
if numaplan --quiet bind --local-rank gpu plan.yaml -- true 2> nogpu.err; then
  echo "NOGPU bound"
else
  echo "NOGPU $(head -1 nogpu.err)"
fi
