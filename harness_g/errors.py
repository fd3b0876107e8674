"""Errors harness-g reports to users as one line, without a traceback (see ``harness_g.cli``)."""
from __future__ import annotations


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
