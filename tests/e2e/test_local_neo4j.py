"""Failures of the local Neo4j launcher's build, as a user sees them (no server is started here)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness_g.graph.stores import local_neo4j
from harness_g.graph.stores.local_neo4j import LocalNeo4jError, build_launcher


def _bin_with(tmp_path: Path, **scripts: str) -> str:
    """A PATH of a fresh folder holding the real ``java`` and the given shell scripts (name -> body)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "java").symlink_to(shutil.which("java"))
    for name, body in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    return str(folder)


def test_missing_maven_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_G_CACHE", str(tmp_path / "cache"))  # nothing built yet: Maven is needed
    monkeypatch.setenv("PATH", _bin_with(tmp_path))
    with pytest.raises(LocalNeo4jError, match=r"needs `mvn` on PATH \(install Maven, e\.g\. `apt-get install maven`\)"):
        build_launcher()


def test_failed_maven_build_says_why_and_builds_again_next_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-in for Maven Central being unreachable: an ``mvn`` that fails the way Maven does (no real
    network failure can be produced on a machine that reaches Maven Central)."""
    monkeypatch.setenv("HARNESS_G_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", _bin_with(tmp_path, mvn="echo '[ERROR] Could not resolve dependencies'; exit 1"))
    with pytest.raises(LocalNeo4jError, match=r"Maven could not build the Neo4j launcher in .*\(exit 1; is Maven Central "
                                              r"reachable\?\): \[ERROR\] Could not resolve dependencies"):
        build_launcher()
    directory = local_neo4j.launcher_dir()
    assert not (directory / "BUILT").exists()  # the next call tries again instead of using a half build
    assert (directory / "pom.xml").exists() and os.listdir(directory)
