#!/bin/sh
# Runs in a QEMU guest of tests/vm.rs with two display devices of a GPU vendor (QEMU's ati-vga,
# AMD's vendor id) behind expander bridges on NUMA nodes 3 and 1: prints what `numaplan topo`
# discovers, then binds each rank of a plan with `numaplan bind` and prints what its process
# reads back from /proc and its GPU visibility; once more with /proc/bus/pci/devices masked (as
# in a container), where the node check reads every PCI function instead; and a plan of the GPU
# ROCR_VISIBLE_DEVICES names (`gpus: visible`).
set -e
cd /tmp
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
