"""Errors harness-g reports to users as one line, without a traceback (see ``harness_g.cli``)."""
from __future__ import annotations

import os


class HarnessError(Exception):
    """Base class of every user-facing error."""


class InputError(HarnessError):
    """Bad input file or value; the message names the file and line where known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class ConfigError(HarnessError):
    """Malformed or inconsistent configuration."""


class StoreError(HarnessError):
    """The graph store is unreachable, misconfigured, or lacks what a query needs (e.g. an index)."""


def one_line(exc: BaseException | str) -> str:
    """An exception's (or a text's) message on one line: drivers put newlines and indentation in theirs."""
    return " ".join(str(exc).split())


def os_error_reason(exc: OSError, path: "str | os.PathLike[str] | None" = None) -> str:
    """Why a file operation failed, for a one-line message: the system's reason ("No space left on device"), else
    the message. numpy reports a short write without an errno ("448128 requested and 63456 written"): when the
    filesystem of ``path`` has (almost) no space left, that is said first."""
    reason = exc.strerror or one_line(exc) or type(exc).__name__
    if exc.errno is None and path is not None and low_on_space(path):
        return f"No space left on device ({reason})"
    return reason


def low_on_space(path: "str | os.PathLike[str]", below: int = 1 << 20) -> bool:
    """Whether the filesystem of ``path`` has fewer than ``below`` bytes left for an unprivileged writer."""
    return _free_bytes(path) < below


def _free_bytes(path: "str | os.PathLike[str]") -> int:
    """Bytes an unprivileged writer may still use on the filesystem of ``path`` (its nearest existing ancestor)."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    try:
        st = os.statvfs(p)
    except OSError:
        return 1 << 62
    return st.f_bavail * st.f_frsize
