"""`numaplan.check_binding()`: the calling process compared with its rank of the plan, as
`numaplan verify --process PID` reads it from /proc (every thread's CPUs, the memory policy),
and its own environment against the variables the plan sets for the rank's NIC.

Call it where something may have moved the process after it was bound: after
`torch.distributed.init_process_group` (NCCL 2.29.2 to 2.29.7 leave NCCL's GPU-local mask on
the calling thread, NVIDIA/nccl#2033), after a serving engine started its workers, after a
library started its thread pools. It reports and never raises for a mismatch."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._binary import E0421, executable
from ._bind import LocalRankArg, PlanArg, _plan_input, _rank_args
from ._errors import Error

# verify's problem kinds, by what they are about (`numaplan schema verify` lists every kind;
# the others are about the process itself).
_ABOUT = {"thread-outside": "cpus", "across-places": "cpus", "memory-policy": "memory",
          "memory-short": "memory", "nic-variable": "nic"}


@dataclass(frozen=True)
class Problem:
    """One way the process differs from its rank: `code` is verify's problem kind
    (`thread-outside`, `memory-policy`, `nic-variable`, ...); `about` is `cpus`, `memory`,
    `nic` or `process`; `message` says it as verify does."""

    code: str
    about: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(frozen=True)
class Check:
    """One aspect of the binding (CPUs, memory policy, NIC environment): ok, or its problems."""

    planned: str
    actual: str
    problems: Tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Binding:
    """What `check_binding()` found: truthy when the process runs as its rank was planned."""

    local_rank: int
    pid: int
    cpus: Check
    memory: Check
    nic: Check
    #: Every problem, of the three checks and of the process itself; empty when ok.
    problems: Tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.ok


def check_binding(
    plan: PlanArg = None,
    local_rank: LocalRankArg = None,
    *,
    topology: Optional[str] = None,
    group: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Binding:
    """Compares the calling process with its rank of the plan: every thread's CPUs (the union
    must be the rank's, no thread outside them), its memory policy, and `os.environ` (or
    `environ`) against the variables the plan sets for the rank's NIC.

    The plan and the rank are found as `numaplan.bind` finds them: `plan` defaults to
    `$NUMAPLAN_PLAN` (set by `numaplan bind`, `exec`, the generated launchers and
    `numaplan.bind()` in the processes they start), and the rank to the process's mark of the
    plan, else its launcher's variable; `local_rank` says it outright. Raises `numaplan.Error`
    only where there is nothing to compare with (no plan, a plan it cannot read)."""
    args = ["--message-format", "json", "verify", _plan_input(plan), "--process",
            str(os.getpid()), "--format", "json", *_rank_args(local_rank, topology, group)]
    report = _verify(args)
    [rank] = report["ranks"]
    return _binding(rank, os.environ if environ is None else environ)


def _verify(args: List[str]) -> Dict[str, Any]:
    """verify's JSON report; it exits non-zero on a mismatch, which is a result here."""
    binary = executable()
    try:
        done = subprocess.run([binary, *args], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, check=False)
    except OSError as e:
        raise Error(f"cannot run `{binary}`: {e}", E0421) from e
    try:
        report: Dict[str, Any] = json.loads(done.stdout)
        return report
    except ValueError:
        errors = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        first = next((e for e in errors if e.get("severity") == "error"), None)
        if first is not None:
            raise Error.from_diagnostic(first) from None
        raise Error(f"`{binary} verify` failed: {done.stderr.strip()}", E0421) from None


def _binding(rank: Mapping[str, Any], environ: Mapping[str, str]) -> Binding:
    # verify compares the NIC variables with the environment the process started with; the
    # process itself runs with `environ` (numaplan.bind() sets them in it): compared here, in
    # verify's words, instead.
    problems = [Problem(p["kind"], _ABOUT.get(p["kind"], "process"), p["text"])
                for p in rank["problems"] if p["kind"] != "nic-variable"]
    planned_nic: Dict[str, str] = rank.get("nic_env", {})
    for name, value in sorted(planned_nic.items()):
        if environ.get(name) != value:
            actual = "unset" if name not in environ else f"'{environ[name]}'"
            problems.append(Problem("nic-variable", "nic",
                                    f"{name} is {actual}, planned '{value}'"))

    def about(what: str) -> Tuple[Problem, ...]:
        return tuple(p for p in problems if p.about == what)

    nic_now = {name: environ.get(name, "") for name in planned_nic}
    return Binding(
        local_rank=rank["rank"],
        pid=rank["pid"],
        cpus=Check(rank["planned_cpus"], rank["actual_cpus"], about("cpus")),
        memory=Check(rank["planned_memory"], rank["actual_memory"], about("memory")),
        nic=Check(_pairs(planned_nic), _pairs(nic_now), about("nic")),
        problems=tuple(problems),
    )


def _pairs(variables: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(variables.items()))
