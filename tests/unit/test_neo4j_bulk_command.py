"""The Neo4j bulk importer's JVM heap follows ``harness-g neo4j --heap-mb`` (graph/stores/neo4j_bulk.py).

The command line is built from the CLI's own parser and config, and the ``seed`` that ``bulk_load_local`` hands the
local server is run on the hand-built tiny artifact (its CSV files are written for real); only ``import_database``,
the call that would start the importer's JVM, is replaced by a recorder: the importer itself runs in
``tests/e2e/test_neo4j_bulk.py``.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from harness_g.graph import cli as graph_cli
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores import neo4j_bulk
from harness_g.graph.stores.local_neo4j import JAVA_OPTIONS_ENV, LocalNeo4jConfig

JAVA = "/opt/java/bin/java"


@pytest.fixture(autouse=True)
def _no_extra_java_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands here carry no extra JVM options (the suite sets some: tests/conftest.py; they are checked in
    test_local_neo4j_java_options.py)."""
    monkeypatch.delenv(JAVA_OPTIONS_ENV, raising=False)


def _neo4j_args(*argv: str) -> argparse.Namespace:
    """``harness-g neo4j ARGV`` parsed by the command's own parser."""
    parser = argparse.ArgumentParser(prog="harness-g")
    graph_cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["neo4j", *argv])


def test_importer_heap_follows_heap_mb() -> None:
    config = graph_cli.local_neo4j_config(_neo4j_args("--heap-mb", "3072", "--bulk-load", "G"))
    assert config.heap_mb == 3072
    assert neo4j_bulk.importer_command("CP", config, java=JAVA) == [JAVA, "-Xmx3072m", "-cp", "CP",
                                                                     neo4j_bulk.ADMIN_TOOL_CLASS]


def test_importer_heap_default_is_unchanged() -> None:
    config = graph_cli.local_neo4j_config(_neo4j_args("--bulk-load", "G"))
    assert neo4j_bulk.importer_command("CP", config, java=JAVA)[1] == "-Xmx1024m"
    assert neo4j_bulk.importer_command("CP", None, java=JAVA)[1] == f"-Xmx{neo4j_bulk.IMPORT_HEAP_MB}m" == "-Xmx1024m"
    assert neo4j_bulk.import_heap_mb(LocalNeo4jConfig()) == 1024


def test_bulk_load_seed_runs_the_importer_with_the_servers_heap(tiny_artifact: Artifact, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def recorded(files: Any, home: Path, admin: list[str], database: str = neo4j_bulk.DATABASE) -> Path:
        ran.append(list(admin))  # instead of starting the importer's JVM
        return home / "data"

    monkeypatch.setattr(neo4j_bulk, "import_database", recorded)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    (tmp_path / "bin").mkdir()
    java = tmp_path / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 1\n")  # found on PATH, never run
    java.chmod(0o755)
    for heap in (2048, 1024):
        seed_dir = tmp_path / f"seed{heap}"
        seed_dir.mkdir()
        seed = neo4j_bulk._seed_with(tiny_artifact, neo4j_bulk.BulkReport(), LocalNeo4jConfig(heap_mb=heap))
        assert seed(seed_dir, "CP") == seed_dir / "data"
    assert [cmd[1] for cmd in ran] == ["-Xmx2048m", "-Xmx1024m"]
    assert all(cmd[0] == str(java) and cmd[-1] == neo4j_bulk.ADMIN_TOOL_CLASS for cmd in ran)
