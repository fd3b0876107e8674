"""Argument helpers shared by the command modules (``harness_g.cli``, ``agent/cli.py``, ``training/cli.py``).

They live here, not in ``harness_g.cli``, so that no command module imports another: ``harness_g.cli`` is the
top of the program and nothing imports it.
"""
from __future__ import annotations

import json
from typing import Any

from harness_g.config_loader import PRESETS
from harness_g.errors import ConfigError

__all__ = ["PRESETS", "PRESET_HELP", "STORE_HELP", "parse_param"]

#: ``--preset`` help, the same for build, eval (ask, menu, browse) and train
PRESET_HELP = ("rules preset: paper (default) = every menu and build rule as harness-g.tex defines it; extended = the "
               "project's extensions on top (README 'Presets and extensions'); an explicit --set value beats it")

#: ``--store`` help, the same for every command that opens a graph
STORE_HELP = (
    "graph store: 'embedded' (default: FalkorDB started by harness-g, data in GRAPH_DIR/store), "
    "'embedded:PORT' (same, on 127.0.0.1:PORT; password in GRAPH_DIR/store/falkordb.password), "
    "'falkordb://HOST:PORT' (existing FalkorDB; FALKORDB_PASSWORD), "
    "'bolt://HOST:7687' or 'neo4j://…' (Neo4j; NEO4J_USER/NEO4J_PASSWORD from the environment, else the credentials "
    "a running `harness-g neo4j` stored)"
)


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` (a ``--param``); value parsed as JSON when it is valid JSON, else kept as a string."""
    if "=" not in text:
        raise ConfigError(f"--param expects name=value, got {text!r}")
    name, raw = text.split("=", 1)
    if not name.isidentifier():
        raise ConfigError(f"--param name must be an identifier, got {name!r}")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw
