"""Extra JVM options of the local Neo4j and its bulk importer (``LocalNeo4jConfig.java_options``, default
``$HARNESS_G_NEO4J_JAVA_OPTIONS``): they reach both command lines, and an option harness-g cannot pass on (no leading
``-``, the heap, the classpath) is one line naming it, before any JVM starts. The suite itself runs its servers with
``-XX:TieredStopAtLevel=1`` (tests/conftest.py); ``tests/e2e/test_neo4j_java_options.py`` checks a real server took it."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness_g.cli import main
from harness_g.errors import ConfigError
from harness_g.graph.stores import neo4j_bulk
from harness_g.graph.stores.local_neo4j import (JAVA_OPTIONS_ENV, LocalNeo4j, LocalNeo4jConfig, check_java_options,
                                                java_options_from_env)

JAVA = "/opt/java/bin/java"


def _server_command(config: LocalNeo4jConfig) -> list[str]:
    return LocalNeo4j(config).server_command(JAVA, "CP", Path("/w"), Path("/w/password"))


def test_the_environment_s_options_reach_the_server_and_the_importer(monkeypatch) -> None:
    monkeypatch.setenv(JAVA_OPTIONS_ENV, "  -XX:TieredStopAtLevel=1 \t -Xss2m ")
    config = LocalNeo4jConfig(heap_mb=512)
    assert config.java_options == ("-XX:TieredStopAtLevel=1", "-Xss2m")
    cmd = _server_command(config)
    assert cmd[:6] == [JAVA, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss2m", "-cp"]
    assert neo4j_bulk.importer_command("CP", config, java=JAVA) == [
        JAVA, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-Xss2m", "-cp", "CP", neo4j_bulk.ADMIN_TOOL_CLASS]
    assert neo4j_bulk.importer_command("CP", None, java=JAVA)[2:4] == ["-XX:TieredStopAtLevel=1", "-Xss2m"]


def test_without_the_variable_no_option_is_added(monkeypatch) -> None:
    monkeypatch.delenv(JAVA_OPTIONS_ENV, raising=False)
    assert java_options_from_env() == () and LocalNeo4jConfig().java_options == ()
    assert _server_command(LocalNeo4jConfig())[:4] == [JAVA, "-Xmx1024m", "-XX:+UseSerialGC", "-cp"]
    assert neo4j_bulk.importer_command("CP", None, java=JAVA)[:3] == [JAVA, "-Xmx1024m", "-cp"]
    explicit = LocalNeo4jConfig(java_options=("-XX:TieredStopAtLevel=1",))  # a Python caller's own options
    assert _server_command(explicit)[3] == "-XX:TieredStopAtLevel=1"


@pytest.mark.parametrize(("options", "why"), [
    (("TieredStopAtLevel=1",), "a JVM option starts with '-'"),
    (("-XX:TieredStopAtLevel=1 -Xss2m",), "a JVM option starts with '-' and has no spaces"),
    (("-Xmx4g",), "the heap is --heap-mb"),
    (("-cp",), "harness-g sets the classpath itself"),
    (("-jar",), "harness-g sets the classpath itself"),
    ("-XX:TieredStopAtLevel=1", "must be a list of JVM options"),
])
def test_an_option_that_cannot_be_passed_on_is_refused_naming_it(options: object, why: str) -> None:
    with pytest.raises(ConfigError, match=r"^LocalNeo4jConfig\.java_options") as err:
        LocalNeo4jConfig(java_options=options)  # type: ignore[arg-type]
    assert why in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="^X[: ]"):
        check_java_options(options, "X")


def test_the_cli_refuses_a_bad_variable_in_one_line_before_starting_anything(tmp_path: Path, monkeypatch,
                                                                              capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no mvn: a start would fail naming them instead
    monkeypatch.setenv(JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=1 -Xmx8g")
    assert main(["neo4j", "--bolt-port", "0", "--http-port", "0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"${JAVA_OPTIONS_ENV}: '-Xmx8g' cannot be passed on (the heap is --heap-mb (heap_mb))" in err
