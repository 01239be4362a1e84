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
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ._binary import E0421, executable, run_json
from ._bind import VISIBILITY, LocalRankArg, PlanArg, _in_python_words, _plan_input, _rank_args
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
    problems: List[Problem] = field(default_factory=list)

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
    #: Every problem, of the three checks and of the process itself; empty (`[]`) when ok.
    problems: List[Problem]

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
    plan, else the title a serving engine gave its worker (`VLLM::Worker_TP1`,
    `sglang::scheduler_TP1`), else its launcher's variable; `local_rank` says it outright, or
    `"gpu"`: the rank of the GPU the process drives (PyTorch's current CUDA device, where it
    has initialized CUDA), else of the GPUs it sees (`CUDA_VISIBLE_DEVICES`...). Raises
    `numaplan.Error` where there is nothing to compare with: no plan, a plan it cannot read, a
    rank it cannot tell (E0449) or past the plan's (E0433)."""
    if local_rank == "gpu":
        local_rank = _rank_of_its_gpu(plan, topology, group)
    args = ["--message-format", "json", "verify", _plan_input(plan), "--process",
            str(os.getpid()), "--format", "json", *_rank_args(local_rank, topology, group)]
    try:
        report = _verify(args)
    except Error as error:
        raise _in_python_words(error, plan, "check_binding") from None
    [rank] = report["ranks"]
    return _binding(rank, os.environ if environ is None else environ)


def _rank_of_its_gpu(plan: PlanArg, topology: Optional[str], group: Optional[str]) -> int:
    """The local rank whose GPUs are the one this process drives (PyTorch's current CUDA
    device, an entry of CUDA_VISIBLE_DEVICES), else those it sees, as `bind --local-rank gpu`
    finds it."""
    env = dict(os.environ)
    driven = _driven_gpu(env)
    if driven is not None:
        for name in VISIBILITY:
            env.pop(name, None)
        env["CUDA_VISIBLE_DEVICES"] = driven
    args = ["bind", _plan_input(plan), "--dry-run", "--force", "--format", "json",
            *_rank_args("gpu", topology, group)]
    try:
        found = run_json(["--quiet", *args], env)
    except Error as error:
        raise _in_python_words(error, plan, "check_binding") from None
    return int(found["local_rank"])


def _driven_gpu(env: Mapping[str, str]) -> Optional[str]:
    """The GPU this process drives, as CUDA_VISIBLE_DEVICES names it: PyTorch's current device
    where PyTorch is loaded and has initialized CUDA (an engine's worker sees every GPU of its
    server and drives one), else none."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return None
        index = int(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - a torch without CUDA, or one that fails: no device
        return None
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if not visible:
        return str(index)
    return visible[index] if index < len(visible) else None


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

    def about(what: str) -> List[Problem]:
        return [p for p in problems if p.about == what]

    nic_now = {name: environ.get(name, "") for name in planned_nic}
    return Binding(
        local_rank=rank["rank"],
        pid=rank["pid"],
        cpus=Check(rank["planned_cpus"], rank["actual_cpus"], about("cpus")),
        memory=Check(rank["planned_memory"], rank["actual_memory"], about("memory")),
        nic=Check(_pairs(planned_nic), _pairs(nic_now), about("nic")),
        problems=problems,
    )


def _pairs(variables: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(variables.items()))
