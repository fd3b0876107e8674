"""The kinds of run directory ``harness-g report`` draws, one registry every layer registers into.

``agent/cli.py`` registers the evaluation run (``harness-g eval --out``: the default, any RUN_DIR no other kind
claims) and ``training/cli.py`` the training run (``harness-g train --out``). The report command asks
:func:`group_runs` which kind each RUN_DIR is and hands each kind its runs, so ``report runs/*`` works on a mix while
``agent/`` never imports ``training/`` (the registry lives here, below both).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness_g.errors import ConfigError
from harness_g.registry import Registry

__all__ = ["RUN_KINDS", "RunKind", "group_runs", "kind_of", "register_run_kind"]


@dataclass(frozen=True)
class RunKind:
    """One kind of run directory: how to recognise it and how to draw a report of it."""

    name: str  #: e.g. "eval run"; the registry key
    #: ``claims(run_dir)`` is True for a run of this kind; None: the default kind, every RUN_DIR no other kind claims
    claims: Callable[[Path], bool] | None
    #: ``report(run_dirs, args, alone)`` writes this kind's pages for ``run_dirs`` (the report command's parsed
    #: ``args``: ``--out``, ``--title``, ...) and prints one ``report: PATH`` line per page; ``alone`` is True when
    #: no run of another kind is in the same call (the kind may then take ``--out`` itself)
    report: Callable[[list[str], argparse.Namespace, bool], None]


#: name -> RunKind; exactly one kind has ``claims=None`` (the default)
RUN_KINDS: Registry[RunKind] = Registry("run kind")


def register_run_kind(kind: RunKind) -> RunKind:
    """Add ``kind`` (at import of the module that defines it); a second default kind or a taken name is refused."""
    if kind.claims is None and any(k.claims is None for _, k in RUN_KINDS.items()):
        raise ConfigError(f"run kind {kind.name!r}: there is already a default run kind")
    RUN_KINDS.add(kind.name, kind)
    return kind


def kind_of(run_dir: str | Path) -> RunKind:
    """The kind that claims ``run_dir``, else the default kind (its report then names what the directory lacks)."""
    kinds = [k for _, k in RUN_KINDS.items()]
    claimed = next((k for k in kinds if k.claims is not None and k.claims(Path(run_dir))), None)
    if claimed is not None:
        return claimed
    default = next((k for k in kinds if k.claims is None), None)
    if default is None:
        raise LookupError(f"no run kind claims {run_dir} and none is the default (registered: {RUN_KINDS.names()})")
    return default


def group_runs(run_dirs: list[str]) -> list[tuple[RunKind, list[str]]]:
    """``run_dirs`` grouped by kind, each group in the order given: the default kind first, then the others by name."""
    groups: dict[str, list[str]] = {}
    for run in run_dirs:
        groups.setdefault(kind_of(run).name, []).append(run)
    order = sorted(groups, key=lambda name: (RUN_KINDS.get(name).claims is not None, name))
    return [(RUN_KINDS.get(name), groups[name]) for name in order]
