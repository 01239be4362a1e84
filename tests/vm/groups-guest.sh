#!/bin/sh
# Runs in a QEMU guest (tests/vm.rs): `numaplan exec` of one plan of two groups, `wide` for a
# 4-node guest and `narrow` for a 2-node guest (/opt/groups-plan.yaml): this guest finds its
# group by its shape, and its ranks are numbered in the whole job. Then a plan whose groups
# have neither guest's shape (/opt/other-plan.yaml) is refused before anything starts.
cd /tmp || exit 1
echo "GROUP_BEGIN"
numaplan exec /opt/groups-plan.yaml --verify --node-rank 0 --master-addr 127.0.0.1
echo "GROUP_STATUS $?"
echo "GROUP_END"
echo "NEITHER_BEGIN"
numaplan exec /opt/other-plan.yaml --node-rank 0 --master-addr 127.0.0.1 2>&1
echo "NEITHER_STATUS $?"
echo "NEITHER_END"
