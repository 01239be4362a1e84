"""Running the numaplan executable: finding it, and reading its JSON answer and diagnostics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._errors import Error, NumaplanWarning, warn

E0421 = "E0421"


def executable() -> str:
    """The path of the numaplan executable this package runs.

    `$NUMAPLAN_BIN` when set; else the one installed with this package (the wheel puts it in
    the environment's scripts directory, beside `python`); else the first `numaplan` on PATH.
    """
    explicit = os.environ.get("NUMAPLAN_BIN")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise Error(
            f"NUMAPLAN_BIN names `{explicit}`, which is not an executable file",
            E0421,
            help="point NUMAPLAN_BIN at the numaplan binary, or unset it to use the installed one",
        )
    scripts = [sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        scripts.append(sysconfig.get_path("scripts", user_scheme))
    scripts.append(os.path.dirname(sys.executable))
    for directory in scripts:
        candidate = os.path.join(directory, "numaplan")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("numaplan")
    if found:
        return found
    raise Error(
        "the numaplan executable is not installed: not beside this Python package "
        f"({', '.join(scripts)}) nor on PATH",
        E0421,
        help="install the wheel (`pip install numaplan`), or point NUMAPLAN_BIN at the binary",
    )


def run_json(args: Sequence[str], env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Runs `numaplan --message-format json ARGS...` (in `env`, else this process's
    environment) and returns the JSON object it prints.

    Its warnings become `NumaplanWarning`s; a failure raises the first error diagnostic as a
    `numaplan.Error` (the others become its notes).
    """
    binary = executable()
    try:
        done = subprocess.run(
            [binary, "--message-format", "json", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            env=None if env is None else dict(env),
        )
    except OSError as e:
        raise Error(f"cannot run `{binary}`: {e}", E0421) from e
    errors = _report(done.stderr)
    if done.returncode != 0:
        if errors:
            first = errors[0]
            first.notes += tuple(str(e) for e in errors[1:])
            raise first
        raise Error(
            f"`{binary}` exited with status {done.returncode} without a diagnostic: "
            f"{done.stderr.strip() or '(nothing on stderr)'}",
            E0421,
        )
    try:
        value = json.loads(done.stdout)
    except ValueError as e:
        raise Error(f"`{binary}` printed something that is not JSON: {e}", E0421) from e
    if not isinstance(value, dict):
        raise Error(f"`{binary}` printed JSON that is not an object", E0421)
    return value


def _report(stderr: str) -> List[Error]:
    """The error diagnostics on `stderr`; warnings are issued as `NumaplanWarning`s and any
    other text is passed on to this process's stderr, so nothing is dropped."""
    errors: List[Error] = []
    for line in stderr.splitlines():
        try:
            diagnostic = json.loads(line)
        except ValueError:
            diagnostic = None
        if not isinstance(diagnostic, dict) or "severity" not in diagnostic:
            if line.strip():
                print(line, file=sys.stderr)
            continue
        error = Error.from_diagnostic(diagnostic)
        if diagnostic["severity"] == "error":
            errors.append(error)
        else:
            where = f"\n --> {error.file}" if error.file else ""
            warn(NumaplanWarning(error.message + where, error.code))
    return errors
