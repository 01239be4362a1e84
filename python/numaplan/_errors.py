"""numaplan's errors in Python: the binary's diagnostic (code, message, location, help), and the
two ways a rank of `numaplan.spawn` can fail, named as `torch.multiprocessing.spawn` names them."""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType
from typing import Any, Mapping, Optional, Sequence, Tuple


class Error(Exception):
    """An error of numaplan, carrying the binary's diagnostic.

    `code` is numaplan's error code (`numaplan codes E0419` explains it); `file`, `line` and
    `column` say where, when the error is about a place in a file; `help` says what to do.
    """

    def __init__(
        self,
        message: str,
        code: Optional[str] = None,
        *,
        file: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
        help: Optional[str] = None,
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.help = help
        self.notes: Tuple[str, ...] = tuple(notes)

    @classmethod
    def from_diagnostic(cls, diagnostic: Mapping[str, Any]) -> "Error":
        """An error from one JSON diagnostic (`numaplan --message-format json`)."""
        return cls(
            str(diagnostic.get("message", "")),
            diagnostic.get("code"),
            file=diagnostic.get("file"),
            line=diagnostic.get("line"),
            column=diagnostic.get("column"),
            help=diagnostic.get("help"),
            notes=diagnostic.get("notes") or (),
        )

    @property
    def location(self) -> Optional[str]:
        """`file:line:column`, as far as it is known."""
        if self.file is None:
            return None
        parts = [self.file] + [str(p) for p in (self.line, self.column) if p is not None]
        return ":".join(parts)

    def __str__(self) -> str:
        head = f"error[{self.code}]: {self.message}" if self.code else self.message
        lines = [head]
        if self.location:
            lines.append(f" --> {self.location}")
        lines += [f" = note: {n}" for n in self.notes]
        if self.help:
            lines.append(f" = help: {self.help}")
        return "\n".join(lines)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # Crosses process boundaries (numaplan.spawn) with every field, not just the message.
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: "type[Error]", fields: Mapping[str, Any]) -> Error:
    error: Error = Exception.__new__(cls)
    Exception.__init__(error, fields.get("message", ""))
    error.__dict__.update(fields)
    return error


class ProcessRaisedException(Error):
    """A rank of `numaplan.spawn` raised: `traceback` is the rank's, `index` its local rank.

    When the rank failed to bind (a `numaplan.Error` in the child), `code` and the location are
    that error's; otherwise `code` is E0414, a rank that failed.
    """

    def __init__(
        self, message: str, index: int, pid: int, traceback: str, cause: Optional[Error] = None
    ) -> None:
        fields = cause.__dict__ if cause is not None else {}
        super().__init__(
            message,
            fields.get("code", "E0414"),
            file=fields.get("file"),
            line=fields.get("line"),
            column=fields.get("column"),
            help=fields.get("help"),
            notes=fields.get("notes", ()),
        )
        self.index = index
        self.pid = pid
        self.traceback = traceback


class ProcessExitedException(Error):
    """A rank of `numaplan.spawn` exited with a non-zero status or was killed by a signal."""

    def __init__(
        self,
        message: str,
        index: int,
        pid: int,
        exit_code: int,
        signal_name: Optional[str] = None,
    ) -> None:
        super().__init__(message, "E0414")
        self.index = index
        self.pid = pid
        self.exit_code = exit_code
        self.signal_name = signal_name


class NumaplanWarning(UserWarning):
    r"""A warning of the plan: something that does not stop the rank but that its reader should
    know (a fallback, CPUs a restriction cuts, an option the policy ignores).

    Its text starts with its kind's code (`[W0203] node 0 has 10 of 20 CPUs allowed`; `numaplan
    codes W0203` explains it), which `code` also holds: Python's own filters accept a kind,
    `warnings.filterwarnings("ignore", message=r"\[W0203\]")`, as the spec's
    `allow_warnings:` does for every launcher."""

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(f"[{code}] {message}" if code else message)
        self.code = code


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def warn(warning: Warning) -> None:
    """Issues `warning` at the first caller outside numaplan's package: the line of the user's
    code that called `bind()`, `spawn()` or `resolve()`, however deep inside numaplan it arose."""
    level = 2
    frame: Optional[FrameType] = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE:
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)
