"""`numaplan.bind`: one local rank's part of a plan applied to the calling process, as
`numaplan bind` applies it before it execs a command (CPU affinity and memory policy), for
programs that are already running Python: `mp.spawn` callables, `torchrun --run-path`, a
`main()` that used `gpu_affinity.set_affinity`."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import platform
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, Union

from ._binary import run_json
from ._errors import Error, NumaplanWarning, warn

PlanArg = Union[str, "os.PathLike[str]", None]
#: A local rank: a number, or `"gpu"`: the rank whose GPUs this process sees.
LocalRankArg = Union[int, str, None]

#: The variables that narrow or renumber the GPUs a process sees, as `numaplan bind` reads them.
VISIBILITY = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
              "ZE_AFFINITY_MASK")

# set_mempolicy(2) and migrate_pages(2) by architecture (glibc wraps neither).
_SYSCALLS = {
    "x86_64": (238, 256),
    "aarch64": (237, 238),
    "riscv64": (237, 238),
    "ppc64le": (261, 258),
    "ppc64": (261, 258),
}
_MPOL = {"preferred": 1, "bind": 2, "interleave": 3}
_WORD_BITS = 8 * ctypes.sizeof(ctypes.c_ulong)


@dataclass(frozen=True)
class Memory:
    """A rank's memory policy: `policy` is `bind`, `preferred`, `interleave` or `none` (the
    inherited policy is kept); `numa_maps` is how `/proc/PID/numa_maps` shows it (`bind:3`)."""

    policy: str
    nodes: FrozenSet[int]
    numa_maps: str


@dataclass(frozen=True)
class Rank:
    """One rank's entry of a plan, as `numaplan.bind` applied it."""

    #: The global rank, when the launcher or the plan numbers it.
    rank: Optional[int]
    local_rank: int
    #: The plan's ranks on one node.
    ranks_per_node: int
    #: Where the local rank came from: the `local_rank` argument or a launcher's variable.
    via: str
    cpus: FrozenSet[int]
    #: `cpus` in the Linux cpulist format (`0-23,48-71`).
    cpu_list: str
    cores: int
    numa_node: Optional[int]
    memory: Memory
    gpus: Tuple[int, ...]
    gpu_pci: Tuple[str, ...]
    nics: Tuple[str, ...]
    #: The plan's identity, which the rank's mark carries (`NUMAPLAN_BOUND`, the mark file).
    plan_id: str = ""
    #: The variables the rank runs with: the launcher's numbering (`RANK`, `LOCAL_RANK`, ...)
    #: where it set one, else the plan's; the plan's OpenMP, NIC, visibility and `env:`.
    env: Mapping[str, str] = field(default_factory=dict, hash=False)


def bind(
    plan: PlanArg = None,
    local_rank: LocalRankArg = None,
    *,
    topology: Optional[str] = None,
    group: Optional[str] = None,
    force: bool = False,
    migrate: bool = False,
    set_env: bool = True,
    quiet: bool = False,
) -> Rank:
    """Binds the calling process as one local rank of a plan and returns the rank's entry.

    Call it first thing in the rank, before anything allocates much memory or starts threads:

    - CPUs: every thread of the process (each task of `/proc/self/task`) gets the rank's CPUs,
      so threads started before the call are bound too, and later ones inherit them.
    - Memory: the memory policy (`set_mempolicy`) is the calling thread's, inherited by the
      threads it starts afterwards; threads started before the call keep theirs. Memory
      allocated before the call is not moved, unless `migrate=True`, which moves this process's
      pages onto the rank's nodes with `migrate_pages`; where the kernel refuses that, or the
      memory policy itself (a container without CAP_SYS_NICE), it raises before binding.
    - Environment: the rank's variables are set in `os.environ` as `numaplan bind` sets them:
      the plan's `OMP_*`, NIC, GPU-visibility and `env:` variables replace inherited ones;
      torchrun's numbering (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR`, ...) is kept
      where the launcher set it and filled in where it did not.
    - Mark: `numaplan verify --match` finds the process by its mark (`PLAN_ID:LOCAL_RANK`),
      written to `/tmp/numaplan-UID/rank-PID` (removed at exit) and set as `NUMAPLAN_BOUND`
      for the programs it starts.

    `plan` is a plan file, a job spec (compiled for this machine by the binary), `env:VAR` or
    `git:REV:PATH`; `None` reads `$NUMAPLAN_PLAN` (a path, or the plan itself as the
    `--emit torchrun` and `mpirun` scripts hand it to every rank), else `numaplan.yaml`.
    `local_rank` defaults to `$NUMAPLAN_LOCAL_RANK`, else the launcher's variable that
    `numaplan bind` reads (`LOCAL_RANK`, `SLURM_LOCALID`, `OMPI_COMM_WORLD_LOCAL_RANK`, ...);
    `"gpu"` makes the process the rank whose GPUs are exactly the ones it sees
    (`CUDA_VISIBLE_DEVICES`, ...), for workers that Ray or an inference server started with
    their GPU already visible (see `bind_worker`). The same checks as `numaplan bind`
    run first: a plan of another machine, or a launcher whose counts differ, raises
    `numaplan.Error` (with `force=True`, a node of another shape is bound anyway). The plan's
    warnings are issued as `numaplan.NumaplanWarning`s by local rank 0 (`quiet=True`: none).
    Of a plan of several groups (`groups:`), `group` names this node's group; `None` finds it
    as `numaplan bind` does (`$NUMAPLAN_GROUP`, the heterogeneous Slurm component holding this
    host, else the one group of this node's shape).
    """
    # All or nothing: what can be refused is found first (the binary checks the CPUs and the
    # memory policy, dropping a default one this process may not have, W0217; `migrate_pages`
    # is probed here), and CPUs already set are put back if the memory policy fails after all.
    entry = resolve(plan, local_rank, topology=topology, group=group, force=force, quiet=quiet,
                    program=_this_program())
    if migrate and entry.memory.policy != "none":
        _migrate_allowed(entry.memory)
    elif migrate and _policy_refused(entry):
        raise _cannot_migrate(entry)
    started_before = _threads()
    before = _bind_cpus(entry)
    try:
        _bind_memory(entry.memory, migrate)
    except Error:
        _restore_cpus(before)
        raise
    if set_env:
        os.environ.update(entry.env)
    _mark(entry)
    _runtimes_already_loaded(entry, started_before, quiet)
    return entry


def _this_program() -> List[str]:
    """This interpreter's command line as it was started (`python3 -m sglang.launch_server
    ...`), where Python keeps it (3.10 on), else its script and arguments."""
    return list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])


def _mark(entry: Rank) -> None:
    """Marks this process as the plan's rank for `numaplan verify --match`: the environment
    `/proc` shows is the one the process started with, so the mark (`PLAN_ID:LOCAL_RANK`,
    with the process's start time, which no later process of the same pid has) goes to
    `/tmp/numaplan-UID/rank-PID`, in a directory of the user's alone, removed at exit. A mark
    that cannot be written leaves the binding as it is, with a warning."""
    try:
        path = _mark_path()
        with open("/proc/self/stat") as stat_file:
            start = stat_file.read().rsplit(")", 1)[1].split()[19]
        partial = f"{path}.{os.getpid()}.tmp"
        # The binary's mark, which says whether the rank runs without its memory policy.
        mark = entry.env.get("NUMAPLAN_BOUND") or f"{entry.plan_id}:{entry.local_rank}"
        with open(partial, "w") as out:
            out.write(f"{mark} {start}\n")
        os.replace(partial, path)
    except OSError as e:
        warn(NumaplanWarning(
            f"numaplan.bind: rank {entry.local_rank} is bound, but its mark could not be "
            f"written ({e}): `numaplan verify --match` will not find it (`--pids` will)"))
        return
    atexit.register(_unmark, path, os.getpid())


def _mark_path() -> str:
    """This process's mark file, in `/tmp/numaplan-UID` (made 0700; refused when it is not a
    directory of this user's alone), and the files there of processes that ended removed."""
    uid = os.getuid()
    directory = f"/tmp/numaplan-{uid}"
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        raise OSError(f"{directory} is not a directory of user {uid}'s alone")
    for name in os.listdir(directory):
        pid = name[len("rank-"):]
        if name.startswith("rank-") and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
    return os.path.join(directory, f"rank-{os.getpid()}")


def _unmark(path: str, pid: int) -> None:
    # A forked child inherits the exit handler; only the marked process removes its mark.
    if os.getpid() == pid:
        with contextlib.suppress(OSError):
            os.unlink(path)


#: The variables the launcher numbers a rank with, which `numaplan bind` keeps where it set them.
_NUMBERING = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
              "MASTER_ADDR", "MASTER_PORT")
#: What OpenMP runtimes read once, when they load.
_OPENMP_ONCE = ("OMP_PLACES", "OMP_PROC_BIND", "KMP_AFFINITY")


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _runtimes_already_loaded(entry: Rank, threads_before: int, quiet: bool) -> None:
    """What `bind` can still apply to runtimes loaded before it (`import torch` at the top of a
    module, before `bind()` ran), and a warning for what it cannot any more."""
    torch = sys.modules.get("torch")
    threads = entry.env.get("OMP_NUM_THREADS", "")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        # torch read OMP_NUM_THREADS when it loaded: its pool takes the plan's size now.
        torch.set_num_threads(int(threads))
    late: List[str] = []
    placed = [v for v in _OPENMP_ONCE if v in entry.env]
    runtime = _openmp_runtime_loaded()
    if placed and runtime:
        late.append(f"{', '.join(placed)} arrive after the OpenMP runtime ({runtime}) read its "
                    "settings: its threads are not placed as planned")
    if entry.memory.policy != "none" and threads_before > 1:
        late.append(f"{threads_before - 1} thread(s) started before bind() keep their memory "
                    "policy (a thread's policy is its own): their new memory is not "
                    f"{entry.memory.numa_maps}")
    if late and not quiet and entry.local_rank == 0:
        warn(NumaplanWarning(
            "numaplan.bind() ran after runtimes had started: " + "; ".join(late) + ". Bind "
            "first thing, before `import torch` (or use numaplan.spawn, which binds before it "
            "loads the callable's module, or `numaplan bind` around the program)."))


def _openmp_runtime_loaded() -> Optional[str]:
    """The OpenMP runtime this process has loaded (libgomp, libiomp5, libomp), if any."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                name = line.rsplit("/", 1)[-1].strip()
                if name.startswith(("libgomp", "libiomp5", "libomp.", "libomp-")):
                    return name
    except OSError:
        pass
    return None


def bind_worker(
    plan: PlanArg = None,
    *,
    topology: Optional[str] = None,
    force: bool = False,
    migrate: bool = False,
    set_env: bool = True,
    quiet: bool = False,
) -> Optional[Rank]:
    """Binds a GPU worker as the plan's rank of the GPUs it sees; for the server pattern of one
    process per GPU started by multiprocessing or Ray with its GPU already made visible
    (`CUDA_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`, `ZE_AFFINITY_MASK`).

    Call it first thing in the worker (a Ray actor's `__init__`, a vLLM/SGLang-style worker's
    entry point). Returns the rank it bound, as `bind(plan, local_rank="gpu")` does; a worker
    that sees no GPU (none of the variables set, set to nothing, or hiding every GPU as
    `CUDA_VISIBLE_DEVICES=-1` does) is left as it is, with a `NumaplanWarning`, and `None` is
    returned. The worker's own visibility variable is left as its launcher set it.
    """
    try:
        return bind(plan, "gpu", topology=topology, force=force, migrate=migrate,
                    set_env=set_env, quiet=quiet)
    except Error as e:
        if e.code != "E0422":
            raise
        warn(NumaplanWarning(f"numaplan.bind_worker: {e.message}; the worker is left unbound"))
        return None


def resolve(
    plan: PlanArg = None,
    local_rank: LocalRankArg = None,
    *,
    topology: Optional[str] = None,
    group: Optional[str] = None,
    force: bool = False,
    quiet: bool = False,
    program: Optional[Sequence[str]] = None,
) -> Rank:
    """The entry `bind` would apply, without applying it (`numaplan bind --dry-run`).

    `program`: the command line the rank runs, which the binary looks at as `bind` looks at
    its command (a serving engine the plan does not name is warning W0220)."""
    args: List[str] = ["--quiet"] if quiet else []
    args += ["bind", _plan_input(plan), "--dry-run", "--format", "json"]
    args += _rank_args(local_rank, topology, group)
    if force:
        args.append("--force")
    if program:
        args += ["--", *program]
    try:
        return _entry(run_json(args))
    except Error as error:
        raise _in_python_words(error, plan) from None


# The binary's wording names its flags; a Python caller passes keyword arguments.
_FLAG_WORDS = (("`--local-rank N`", "`local_rank=N`"),
               ("`--local-rank gpu`", "`local_rank=\"gpu\"`"), ("--local-rank", "local_rank="),
               ("`--force`", "`force=True`"), ("--topology", "topology="),
               ("`--group NAME`", "`group=NAME`"), ("--group", "group="))


def _rank_args(local_rank: LocalRankArg, topology: Optional[str],
               group: Optional[str]) -> List[str]:
    """The flags that say which rank of which plan: `--local-rank`, `--topology`, `--group`."""
    args: List[str] = []
    if local_rank is not None:
        args += ["--local-rank", _local_rank_arg(local_rank)]
    if topology is not None:
        args += ["--topology", topology]
    if group is not None:
        args += ["--group", group]
    return args


def _local_rank_arg(local_rank: LocalRankArg) -> str:
    """`local_rank` as `--local-rank` takes it: a rank number (an int, or its digits as read from
    `os.environ`), or "gpu"."""
    if isinstance(local_rank, bool):
        pass
    elif isinstance(local_rank, int) and local_rank >= 0:
        return str(local_rank)
    elif isinstance(local_rank, str) and (local_rank.strip().isdigit() or local_rank == "gpu"):
        return local_rank.strip()
    raise Error(
        f"local_rank must be a rank number (0, 1, ... or its digits) or \"gpu\", not {local_rank!r}",
        "E0432",
    )


def _in_python_words(error: Error, plan: PlanArg, call: str = "bind") -> Error:
    """The binary's error as a Python caller reads it: keyword arguments for flags, and where
    no plan was given and none was found, the two ways to give one."""
    def words(text: Optional[str]) -> Optional[str]:
        if text is None:
            return None
        for flag, keyword in _FLAG_WORDS:
            text = text.replace(flag, keyword)
        return text
    help = words(error.help)
    no_plan = plan is None and _plan_input(None) == "numaplan.yaml" and error.code == "E0407"
    if no_plan:
        help = (f"pass the plan, `numaplan.{call}(\"plan.yaml\")`, or set NUMAPLAN_PLAN (a plan "
                "file's path or the plan itself, as numaplan's launch scripts do); without "
                "either, numaplan.yaml in the current directory is read")
    return Error(words(error.message) or "", error.code, file=error.file, line=error.line,
                       column=error.column, help=help,
                       notes=[n for n in (words(n) for n in error.notes) if n is not None])


def _plan_input(plan: PlanArg) -> str:
    if plan is not None:
        return os.fspath(plan)
    inline = os.environ.get("NUMAPLAN_PLAN")
    if inline is None and "NUMAPLAN_PLAN_1" in os.environ:
        return "env:NUMAPLAN_PLAN"
    if inline is not None and inline.strip():
        # The launch scripts put the plan itself there; a user may put a path.
        return "env:NUMAPLAN_PLAN" if "\n" in inline.strip() else inline
    return "numaplan.yaml"


def _entry(report: Dict[str, Any]) -> Rank:
    if report.get("numaplan_bind") != 1:
        raise Error("the numaplan binary answered in an unknown shape (numaplan_bind != 1)", "E0421")
    memory = report["memory"]
    return Rank(
        rank=report.get("rank"),
        local_rank=report["local_rank"],
        plan_id=report["plan_id"],
        ranks_per_node=report["ranks_per_node"],
        via=report["via"],
        cpus=parse_list(report["cpus"]),
        cpu_list=report["cpus"],
        cores=report["cores"],
        numa_node=report.get("numa_node"),
        memory=Memory(memory["policy"], parse_list(memory["nodes"]), memory["numa_maps"]),
        gpus=tuple(report["gpus"]),
        gpu_pci=tuple(report["gpu_pci"]),
        nics=tuple(report["nics"]),
        env=_rank_env(report["env"]),
    )


def _rank_env(planned: Mapping[str, str]) -> Dict[str, str]:
    """The variables the rank runs with: the launcher's numbering where it set one (the binary
    leaves it out of its answer, to keep it), the plan's variables otherwise."""
    env = {var: os.environ[var] for var in _NUMBERING if os.environ.get(var)}
    env.update(planned)
    return env


def parse_list(text: str) -> FrozenSet[int]:
    """A Linux cpulist or nodelist (`0-3,8,10-11`) as a set."""
    items: Set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        items.update(range(int(low), int(high or low) + 1))
    return frozenset(items)


def _bind_cpus(entry: Rank) -> Dict[int, FrozenSet[int]]:
    """Every task of this process on the rank's CPUs; repeated until no new thread appears (a
    thread started meanwhile by a thread not yet bound). Returns each task's CPUs before, for
    `_restore_cpus`; a failure puts back those it changed."""
    done: Set[int] = set()
    before: Dict[int, FrozenSet[int]] = {}
    while True:
        tasks = {int(t) for t in os.listdir("/proc/self/task")} - done
        if not tasks:
            break
        for tid in tasks:
            try:
                before[tid] = frozenset(os.sched_getaffinity(tid))
                os.sched_setaffinity(tid, entry.cpus)
            except ProcessLookupError:
                before.pop(tid, None)  # the thread ended
            except OSError as e:
                _restore_cpus(before)
                raise _bind_error(entry, f"sched_setaffinity of thread {tid}", e) from e
        done |= tasks
    actual = os.sched_getaffinity(0)
    if actual != entry.cpus:
        # The kernel narrows an affinity to the cpuset silently.
        raise Error(
            f"rank {entry.local_rank}: CPUs {entry.cpu_list} were asked for, the kernel "
            f"gave {_list(actual)}: this process may not run on the others",
            "E0411",
            help="a cgroup, taskset or Slurm step allows fewer CPUs than the plan uses",
        )
    return before


def _restore_cpus(before: Mapping[int, FrozenSet[int]]) -> None:
    """Puts each task back on the CPUs it had (a task that ended since is gone)."""
    for tid, cpus in before.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)


def _policy_refused(entry: Rank) -> bool:
    """Whether the binary dropped the plan's memory policy, which this node refuses and the
    plan does not require (W0217): its mark says so."""
    return entry.env.get("NUMAPLAN_BOUND", "").endswith(":no-memory-policy")


def _cannot_migrate(entry: Rank) -> Error:
    """`migrate=True` where the plan's memory policy is refused: no page can be moved onto the
    plan's nodes, which is what was asked, so nothing is bound."""
    status = _status()
    notes = ["this process's binding is unchanged"]
    if status.get("Seccomp") == "2":
        notes.append("this process runs under a seccomp filter: Docker's default profile and "
                     "containerd's RuntimeDefault allow set_mempolicy only with CAP_SYS_NICE, "
                     "and never allow migrate_pages")
    return Error(
        f"numaplan.bind(migrate=True): rank {entry.local_rank}'s memory policy is refused on "
        "this node (W0217), so its pages cannot be moved onto the plan's nodes",
        "E0412",
        help="bind first thing, before the process allocates (migrate=False: the rank then runs "
             "with its CPUs bound and no memory policy), or start it bound: `numaplan bind` or "
             "`exec` around the program",
        notes=notes)


def _migrate_allowed(memory: Memory) -> None:
    """Raises, before anything is bound, where this process may not move its pages: Docker's
    default seccomp profile never allows `migrate_pages`, even with CAP_SYS_NICE. Tried as a
    move from the allowed nodes to themselves, which moves nothing."""
    _, migrate_pages = _syscall_numbers()
    mask, maxnode = _node_mask(_mems_allowed())
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(migrate_pages), 0, maxnode, mask, mask) < 0:
        raise _memory_error(memory, "migrate_pages", unchanged=True)


def _bind_memory(memory: Memory, migrate: bool) -> None:
    mode = _MPOL.get(memory.policy)
    if mode is None:
        return
    set_mempolicy, migrate_pages = _syscall_numbers()
    mask, maxnode = _node_mask(memory.nodes)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(set_mempolicy), ctypes.c_int(mode), mask, maxnode) != 0:
        raise _memory_error(memory, "set_mempolicy", unchanged=True)
    if migrate:
        old, _ = _node_mask(_mems_allowed())
        moved = libc.syscall(ctypes.c_long(migrate_pages), 0, maxnode, old, mask)
        if moved < 0:
            # The policy stays: new memory goes where planned; what was there stays.
            raise _memory_error(memory, "migrate_pages", unchanged=False)


def _syscall_numbers() -> Tuple[int, int]:
    machine = platform.machine()
    if machine not in _SYSCALLS:
        raise Error(f"numaplan.bind does not know the syscall numbers of {machine}", "E0412")
    return _SYSCALLS[machine]


def _node_mask(nodes: FrozenSet[int]) -> Tuple[Any, ctypes.c_ulong]:
    words = max(nodes, default=0) // _WORD_BITS + 1
    mask = (ctypes.c_ulong * words)()
    for n in nodes:
        mask[n // _WORD_BITS] |= 1 << (n % _WORD_BITS)
    # The kernel reads maxnode - 1 bits, as numactl and `numaplan bind` pass it.
    return mask, ctypes.c_ulong(words * _WORD_BITS + 1)


def _mems_allowed() -> FrozenSet[int]:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Mems_allowed_list:"):
                return parse_list(line.split(":", 1)[1].strip())
    return frozenset()


def _bind_error(entry: Rank, what: str, e: OSError) -> Error:
    return Error(
        f"rank {entry.local_rank}: {what} to CPUs {entry.cpu_list} failed: {e.strerror}",
        "E0412",
    )


def _memory_error(memory: Memory, what: str, unchanged: bool) -> Error:
    """A memory call refused, said for what it is: EPERM under a seccomp filter is a
    container's profile (without CAP_SYS_NICE, or `migrate_pages`, which Docker never allows);
    anything else is about the nodes."""
    errno = ctypes.get_errno()
    state = ("this process's binding is unchanged" if unchanged else
             f"its CPUs and memory policy ({memory.numa_maps}) are set; its pages were not moved")
    notes = [state]
    if errno == 1:
        status = _status()
        filtered = status.get("Seccomp") == "2"
        nice = int(status.get("CapEff", "0"), 16) & (1 << 23) != 0
        if filtered and what == "migrate_pages":
            notes.append("this process runs under a seccomp filter: Docker's default profile and "
                         "containerd's RuntimeDefault never allow migrate_pages")
            help = ("bind first thing, before the process allocates (migrate=False), or start it "
                    "bound: `numaplan bind` or `exec` around the program")
        elif filtered and not nice:
            notes.append("this process runs under a seccomp filter without CAP_SYS_NICE: Docker's "
                         "default profile and containerd's RuntimeDefault allow set_mempolicy "
                         "only with CAP_SYS_NICE")
            help = ("add CAP_SYS_NICE (`docker run --cap-add SYS_NICE`; Kubernetes: "
                    "`securityContext.capabilities.add: [SYS_NICE]`), or compile with "
                    "`memory: {policy: none}` or `{required: false}`")
        else:
            help = "a security module or sandbox may forbid it"
    else:
        help = "the node may not be allowed to this process (a cpuset's mems), or not exist"
    return Error(f"{what} ({memory.numa_maps}) was refused: {os.strerror(errno)}", "E0412",
                 help=help, notes=notes)


def _status() -> Dict[str, str]:
    with open("/proc/self/status") as status:
        return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)


def _list(cpus: Any) -> str:
    return ",".join(str(c) for c in sorted(cpus))
