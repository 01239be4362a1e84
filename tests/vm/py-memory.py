"""In the QEMU guest (tests/vm/watch-guest.sh): a rank of 256 MiB for `numaplan verify`'s memory
report. The local rank comes from LOCAL_RANK, the plan from NUMAPLAN_PLAN.

    py-memory.py late    touches 256 MiB wherever it was started, then takes the rank's binding
                         with `numaplan.bind(migrate=False)` (its pages stay where they are);
                         once /tmp/migrate exists, `numaplan.bind(migrate=True)` moves them
    py-memory.py bound   touches 256 MiB in a process already bound (`numaplan bind`)

Writes /tmp/ready-RANK when touched (and /tmp/moved-RANK after migrating), exits once /tmp/stop
exists.
"""

import mmap
import os
import sys
import time

import numaplan

SIZE = 256 << 20


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.05)


def main():
    mode = sys.argv[1]
    rank = os.environ["LOCAL_RANK"]
    region = mmap.mmap(-1, SIZE)
    for offset in range(0, SIZE, mmap.PAGESIZE):
        region[offset] = 1
    if mode == "late":
        numaplan.bind(migrate=False, quiet=True)
    open(f"/tmp/ready-{rank}", "w").close()
    if mode == "late":
        wait_for("/tmp/migrate")
        numaplan.bind(migrate=True, quiet=True)
        open(f"/tmp/moved-{rank}", "w").close()
    wait_for("/tmp/stop")
    region.close()


main()
