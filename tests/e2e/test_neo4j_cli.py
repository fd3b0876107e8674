"""A new user's Neo4j session, end to end through the installed ``harness-g`` command (real processes):
``harness-g neo4j`` starts a local Neo4j with authentication on and prints its generated password, then
``build --store bolt://…``, ``stats``, ``ask``, ``eval`` and ``cypher`` run against it (with no NEO4J_PASSWORD:
they read the credentials the server stored, mode 0600), and SIGTERM stops it and removes them. No driver
warning or deprecation notice may reach stderr."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.neo4j_process import wait_until_ready
from helpers.paths import TEST_DATA

DATA = TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"
HARNESS_G = shutil.which("harness-g") or str(Path(sys.executable).with_name("harness-g"))

pytestmark = pytest.mark.neo4j
#: the environment of every command here: no NEO4J_* variables, so the password is generated and found, not given
ENV = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HARNESS_G, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _clean_stderr(stderr: str) -> None:
    """The Neo4j path prints no driver notification (e.g. a deprecated CALL { WITH … }) and no traceback."""
    for needle in ("received notification", "deprecat", "traceback", "neo4j"):
        assert needle not in stderr.lower(), stderr[-1500:]


def test_new_user_neo4j_session(tmp_path: Path) -> None:
    server = subprocess.Popen([HARNESS_G, "neo4j", "--bolt-port", "0", "--http-port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        printed = wait_until_ready(server)
        uri = re.search(r"bolt\s+(bolt://127\.0\.0\.1:\d+)", printed).group(1)
        browser = re.search(r"browser\s+(http://127\.0\.0\.1:\d+/browser/)", printed).group(1)
        password = re.search(r"password (\S+)\s+\(generated", printed).group(1)
        stored = Path(re.search(r"stored\s+(\S+)", printed).group(1))
        assert "Neo4j 5.26." in printed and "user     neo4j" in printed and f"--store {uri}" in printed
        assert "No authentication" not in printed
        port = int(uri.rsplit(":", 1)[1])
        assert stored.stat().st_mode & 0o777 == 0o600 and json.loads(stored.read_text())["password"] == password
        import neo4j

        with pytest.raises(neo4j.exceptions.AuthError):  # authentication is on
            with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
                driver.verify_connectivity()

        graph = tmp_path / "graph"
        build = _cli("build", "--format", "hotpotqa", "--input", str(DATA), "--limit", "2", "--out", str(graph),
                     "--store", uri, "-q")
        assert build.returncode == 0, build.stderr
        assert f"store Neo4j at {uri}: loaded in" in build.stdout and "'sentence_embedding': 'ONLINE'" in build.stdout
        _clean_stderr(build.stderr)
        assert json.loads((graph / "store.json").read_text())["store"] == uri

        stats = _cli("stats", str(graph), "--json")  # the remembered store: no --store needed
        assert stats.returncode == 0, stats.stderr
        data = json.loads(stats.stdout)
        assert data["store"]["backend"] == "neo4j" and data["store"]["address"] == uri and data["store"]["complete"]
        assert data["store"]["nodes"]["Sentence"] == data["manifest"]["counts"]["sentences"] > 0
        _clean_stderr(stats.stderr)

        question = json.loads(DATA.read_text())[0]
        ask = _cli("ask", str(graph), question["question"], "--json", "--max-turns", "3")
        assert ask.returncode == 0, ask.stderr
        episode = json.loads(ask.stdout)
        assert episode["question"] == question["question"] and 1 <= len(episode["steps"]) <= 3
        _clean_stderr(ask.stderr)

        run = tmp_path / "run"
        evaluation = _cli("eval", str(graph), "--out", str(run), "--limit", "2", "--max-turns", "3", "-q")
        assert evaluation.returncode == 0, evaluation.stderr
        summary = json.loads((run / "summary.json").read_text())
        assert summary["questions"] == 2 and summary["errors"] == 0
        _clean_stderr(evaluation.stderr)

        cypher = _cli("cypher", str(graph), "MATCH (p:Paragraph) RETURN count(p) AS n", "--json")
        assert cypher.returncode == 0 and json.loads(cypher.stdout) == [{"n": data["store"]["nodes"]["Paragraph"]}]

        import urllib.request

        with urllib.request.urlopen(browser, timeout=10) as page:  # the Browser is served by the same server
            assert page.status == 200 and b"Neo4j Browser" in page.read()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            out, err = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert server.returncode == 0, err
    assert "neo4j: stopped" in out
    assert not _port_open(port), "the Neo4j server outlived harness-g neo4j"
    assert not stored.exists(), "the stored credentials outlived the server"


def test_neo4j_command_takes_the_password_from_neo4j_password() -> None:
    """A password the user sets (NEO4J_PASSWORD; --password works the same) is the one the server requires; it is not
    printed, and a harness-g command finds it through the stored credentials."""
    chosen = "my-own-Passw0rd"
    server = subprocess.Popen([HARNESS_G, "neo4j", "--bolt-port", "0", "--http-port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**ENV, "NEO4J_PASSWORD": chosen})
    try:
        printed = wait_until_ready(server)
        assert "password the one you set (NEO4J_PASSWORD)" in printed and chosen not in printed
        uri = re.search(r"bolt\s+(bolt://127\.0\.0\.1:\d+)", printed).group(1)
        import neo4j

        with neo4j.GraphDatabase.driver(uri, auth=("neo4j", chosen)) as driver:
            driver.verify_connectivity()
        from harness_g.graph.stores.local_neo4j import local_credentials

        assert local_credentials(uri) == ("neo4j", chosen)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert server.returncode == 0


def test_neo4j_command_needs_java(tmp_path: Path) -> None:
    """Without Java on PATH the command fails in one line naming what to install."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # the venv's bin only: no java, no mvn
    proc = subprocess.run([HARNESS_G, "neo4j"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "needs `java` on PATH" in proc.stderr and "openjdk-17" in proc.stderr


def test_neo4j_command_refuses_a_busy_port() -> None:
    """A taken --bolt-port is named at once (it used to wait 180 s for a JVM whose server never started)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        started = time.monotonic()
        proc = _cli("neo4j", "--bolt-port", str(port), "--http-port", "0", timeout=120)
    assert proc.returncode == 2 and time.monotonic() - started < 30
    assert proc.stderr.count("\n") == 1 and f"Bolt port {port} on 127.0.0.1 is in use" in proc.stderr


def test_launcher_reports_its_own_start_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the server cannot bind (a port taken between the check and the bind), the launcher prints the
    root cause and exits instead of hanging with the harness's threads alive."""
    import harness_g.graph.stores.local_neo4j as local

    monkeypatch.setattr(local, "_port_in_use", lambda port: False)  # skip the early check: exercise the launcher
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        server = local.LocalNeo4j(local.LocalNeo4jConfig(bolt_port=busy.getsockname()[1], start_timeout_s=120))
        started = time.monotonic()
        with pytest.raises(local.LocalNeo4jError, match=r"failed to start: .*(Address already in use|bind)"):
            server.start()
    assert time.monotonic() - started < 90
    assert not server.running
