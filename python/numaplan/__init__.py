"""numaplan from Python: bind a process as one rank of a plan (`bind`), or start a callable's
ranks bound (`spawn`). The plan is compiled, checked and explained by the `numaplan` binary
this package ships; this module applies it to the running interpreter.

    import numaplan
    rank = numaplan.bind("plan.yaml")   # first thing in main(): CPUs, memory policy, env
    rank = numaplan.bind_worker("plan.yaml")   # a Ray actor or server worker, by its GPU
    assert numaplan.check_binding()     # later: still where the plan put it?
"""

from ._binary import executable
from ._bind import Memory, Rank, bind, bind_worker, resolve
from ._check import Binding, Check, Problem, check_binding
from ._errors import Error, NumaplanWarning, ProcessExitedException, ProcessRaisedException
from ._spawn import SpawnContext, spawn

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

try:
    __version__ = _version("numaplan")
except _NotInstalled:  # a checkout on sys.path, not installed
    __version__ = "0+unknown"

__all__ = [
    "Binding",
    "Check",
    "Error",
    "Memory",
    "NumaplanWarning",
    "Problem",
    "ProcessExitedException",
    "ProcessRaisedException",
    "Rank",
    "SpawnContext",
    "bind",
    "bind_worker",
    "check_binding",
    "executable",
    "resolve",
    "spawn",
    "__version__",
]
