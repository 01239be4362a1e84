"""`numaplan.spawn`: `torch.multiprocessing.spawn` for callables, every process bound as its
local rank before the callable runs. Each child binds itself first thing (`numaplan.bind`), so
the parent's affinity is never touched, and it works with any start method and no PyTorch."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback
from typing import Any, Callable, List, Optional, Sequence

from ._bind import PlanArg, bind, resolve
from ._errors import Error, ProcessExitedException, ProcessRaisedException


def spawn(
    fn: Callable[..., Any],
    plan: PlanArg = None,
    args: Sequence[Any] = (),
    nprocs: Optional[int] = None,
    *,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
    topology: Optional[str] = None,
    force: bool = False,
) -> Optional["SpawnContext"]:
    """Starts `nprocs` processes (default: the plan's ranks per node) that each bind themselves
    as local rank `i` of `plan` and then call `fn(i, *args)`, as `mp.spawn` calls it.

    The plan is checked in the parent first (its warnings shown once), so a bad plan raises
    before anything starts. With `join=True` (the default) it waits for every process: when one
    raises, or exits with a non-zero status or a signal, the others are terminated and
    `ProcessRaisedException` (with the child's traceback) or `ProcessExitedException` (with its
    exit code or signal) is raised, both `numaplan.Error`s; a child that failed to bind raises
    with that error's code. With `join=False` it returns a `SpawnContext` to `join()`.
    `start_method` is `spawn` (the default), `forkserver` or `fork`; `fn` must be picklable
    (defined at the top level of a module) for the first two.
    """
    first = resolve(plan, 0, topology=topology, force=force)
    if nprocs is None:
        nprocs = first.ranks_per_node
    context: Any = multiprocessing.get_context(start_method)
    # Pickled here and loaded in the child after it is bound: loading imports fn's module, and
    # a module that imports torch at its top would start torch's threads and read
    # OMP_NUM_THREADS before the binding. A forked child has it loaded already.
    payload: Any = fn if start_method == "fork" else pickle.dumps(fn)
    error_dir = tempfile.mkdtemp(prefix="numaplan-spawn-")
    processes = []
    for index in range(nprocs):
        error_file = os.path.join(error_dir, f"rank-{index}")
        process = context.Process(
            target=_rank,
            args=(payload, index, tuple(args), plan, topology, force, error_file),
            daemon=daemon,
        )
        process.start()
        processes.append(process)
    spawned = SpawnContext(processes, error_dir)
    if not join:
        return spawned
    while not spawned.join():
        pass
    return None


def _rank(
    payload: Any,
    index: int,
    args: Sequence[Any],
    plan: PlanArg,
    topology: Optional[str],
    force: bool,
    error_file: str,
) -> None:
    """A child: bind, then load the callable (its module's imports run bound) and call it; an
    exception is written for the parent and exits 1."""
    try:
        # The parent showed the plan's warnings already.
        bind(plan, index, topology=topology, force=force, quiet=True)
        fn = pickle.loads(payload) if isinstance(payload, bytes) else payload
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping every rank
    except BaseException as e:  # noqa: BLE001 - everything a rank raises is reported
        if isinstance(e, SystemExit) and e.code in (None, 0):
            return
        cause = e if isinstance(e, Error) else None
        with open(error_file, "wb") as out:
            pickle.dump((cause, traceback.format_exc()), out)
        sys.exit(1)


class SpawnContext:
    """The processes `spawn(..., join=False)` started; `join` waits for them."""

    def __init__(self, processes: List[Any], error_dir: str) -> None:
        self.processes = processes
        self.error_dir = error_dir
        self._running = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> List[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: Optional[float] = None, grace_period: float = 5.0) -> bool:
        """Waits up to `timeout` seconds for a process to end; True once all ended well.

        The first process that fails stops the others (SIGTERM, then SIGKILL after
        `grace_period` seconds) and raises its exception.
        """
        if not self._running:
            return True
        ready = multiprocessing.connection.wait(list(self._running), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self._running.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            if not self._running:
                self._remove_error_dir()
            return not self._running
        self._stop_the_rest(grace_period)
        raise self._failure(failed)

    def _stop_the_rest(self, grace_period: float) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(grace_period)
            if process.is_alive():
                process.kill()
                process.join()
        self._running.clear()

    def _failure(self, index: int) -> Error:
        process = self.processes[index]
        error_file = os.path.join(self.error_dir, f"rank-{index}")
        try:
            if os.path.exists(error_file):
                with open(error_file, "rb") as raw:
                    cause, trace = pickle.load(raw)
                message = (
                    f"\n\n-- local rank {index} (pid {process.pid}) terminated with the "
                    f"following error:\n{trace}"
                )
                return ProcessRaisedException(message, index, process.pid, trace, cause)
        finally:
            self._remove_error_dir()
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            return ProcessExitedException(
                f"local rank {index} (pid {process.pid}) was killed by signal {name}",
                index,
                process.pid,
                code,
                name,
            )
        return ProcessExitedException(
            f"local rank {index} (pid {process.pid}) exited with status {code}",
            index,
            process.pid,
            code,
        )

    def _remove_error_dir(self) -> None:
        for name in os.listdir(self.error_dir) if os.path.isdir(self.error_dir) else ():
            os.unlink(os.path.join(self.error_dir, name))
        if os.path.isdir(self.error_dir):
            os.rmdir(self.error_dir)
