"""Neo4j Browser, served by the local Neo4j (``neo4j_server``), works end to end in headless Chromium.

docker/README.md tells users to browse harness-g graphs in Neo4j Browser and lists queries worth running
there. This test loads the real HotpotQA test graph into the session's Neo4j, then drives the Browser with
``tools/browser-check/browser_query.mjs`` (puppeteer-core + the system Chromium): it opens the Browser,
signs in with the server's user and password (the local Neo4j always has authentication on), sets
``:param title => "Giotto"``, runs README query 1 ("a sentence in context") exactly as the README prints it,
waits for the graph view and takes a screenshot. The test checks what the Browser reported against the same
query run through :class:`Neo4jStore`.

``tools/browser-check/cross_origin.mjs`` plays a web page the user opens while the server runs: from another
origin its script cannot read the HTTP API's answers (no wildcard CORS), not even with the password, and writes
nothing; from the Browser's own origin the same request works.

Needs Chromium and the node tool's dependencies: ``bash tools/browser-check/setup.sh`` (the test fails,
not skips, without them). ``HARNESS_G_UPDATE_SCREENSHOTS=1`` also copies the screenshot, once the test has
passed, to ``docs/images/neo4j-browser.png`` (shown in docker/README.md).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO_ROOT as ROOT

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.local_neo4j import LocalNeo4j
from harness_g.graph.stores.neo4j_store import Neo4jStore

pytestmark = pytest.mark.neo4j

README = ROOT / "docker" / "README.md"
TOOL_DIR = ROOT / "tools" / "browser-check"
SCRIPT = TOOL_DIR / "browser_query.mjs"
DOCS_SCREENSHOT = ROOT / "docs" / "images" / "neo4j-browser.png"
SETUP_HINT = "run `bash tools/browser-check/setup.sh` (installs Chromium with apt-get and the node tool's packages)"

#: a paragraph of the 6-question HotpotQA test graph whose first sentence has a NEXT sentence and 8 entities
TITLE = "Giotto"
WIDTH, HEIGHT = 1400, 900
#: the node script bounds itself to this many seconds (it always closes its browser)
SCRIPT_TIMEOUT_S = 90


def readme_query(number: int) -> str:
    """The Cypher of docker/README.md's query ``number`` ("**1. ...**"), without its leading ``// :param`` lines."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^\*\*{number}\. .*?```cypher\n(.*?)```", text, flags=re.S | re.M)
    assert match, f"docker/README.md has no '**{number}. ...**' query followed by a ```cypher block"
    lines = match.group(1).strip().splitlines()
    while lines and lines[0].lstrip().startswith("//"):
        lines.pop(0)
    return "\n".join(lines)


def _require_tools() -> tuple[str, str]:
    node = shutil.which("node")
    chromium = os.environ.get("CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    missing = []
    if node is None:
        missing.append("node (Node.js 18+)")
    if chromium is None or not Path(chromium).exists():
        missing.append("chromium")
    if not (TOOL_DIR / "node_modules" / "puppeteer-core" / "package.json").is_file():
        missing.append("tools/browser-check/node_modules (puppeteer-core)")
    if missing:
        pytest.fail(f"the Neo4j Browser check needs {', '.join(missing)}: {SETUP_HINT}", pytrace=False)
    assert node is not None and chromium is not None
    return node, chromium


def _run_node(cmd: list[str], server: LocalNeo4j) -> dict[str, Any]:
    """Run one node tool with the server's credentials in its environment (never on its command line); its last
    JSON line, plus ``exit_code`` and ``stderr_tail``."""
    name = Path(cmd[1]).name
    env = {**os.environ, "NEO4J_USER": server.user, "NEO4J_PASSWORD": server.password}
    # its own process group, so a hung run can be ended with its Chromium (the script has a watchdog too)
    proc = subprocess.Popen(cmd, cwd=TOOL_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        stdout, stderr = proc.communicate(timeout=SCRIPT_TIMEOUT_S + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"{name} did not finish in {SCRIPT_TIMEOUT_S + 30} s: {stdout[-2000:]} {stderr[-2000:]}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, f"{name} printed no JSON (exit {proc.returncode}): {stdout[-2000:]} {stderr[-2000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    report["exit_code"] = proc.returncode
    report["stderr_tail"] = stderr[-2000:]
    return report


def _run_browser_query(node: str, chromium: str, server: LocalNeo4j, query: str, params: dict[str, Any],
                       out: Path) -> dict[str, Any]:
    return _run_node([node, str(SCRIPT), server.browser_url, server.bolt_uri, query, str(out), "--params",
                      json.dumps(params), "--width", str(WIDTH), "--height", str(HEIGHT), "--timeout-s",
                      str(SCRIPT_TIMEOUT_S), "--chromium", chromium], server)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _distinct_nodes(rows: list[list[Any]]) -> set[str]:
    """Element ids of the nodes in query rows (values as Neo4jStore.run_cypher returns them)."""
    ids: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, dict) and "labels" in value and "id" in value:
            ids.add(value["id"])
        elif isinstance(value, dict) and "nodes" in value:
            for node in value["nodes"]:
                visit(node)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for row in rows:
        visit(row)
    return ids


def test_neo4j_browser_runs_readme_query(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    node, chromium = _require_tools()  # before the slow fixtures, so a missing tool fails at once
    query, params = readme_query(1), {"title": TITLE}
    assert "$title" in query
    neo4j_server: LocalNeo4j = request.getfixturevalue("neo4j_server")
    hotpot_graph_dir: Path = request.getfixturevalue("hotpot_graph_dir")

    # the database holds one graph at a time and other tests share this server: (re)load ours first
    store = Neo4jStore(neo4j_server.bolt_uri, *neo4j_server.auth)
    try:
        store.load(Artifact.open(hotpot_graph_dir), progress=False)
        expected = store.run_cypher(query, params)
    finally:
        store.close()
    expected_nodes = _distinct_nodes(expected.rows)
    assert len(expected.rows) > 1 and len(expected_nodes) > 3, f"README query 1 finds too little for {TITLE!r}"

    png = tmp_path / "neo4j-browser.png"
    report = _run_browser_query(node, chromium, neo4j_server, query, params, png)
    print("browser_query:", json.dumps({k: v for k, v in report.items() if k != "stderr_tail"}))
    context = json.dumps(report, indent=1)[:4000]

    assert report["connected"], f"Neo4j Browser did not connect to {neo4j_server.bolt_uri}: {context}"
    assert report["error"] is None and report["query_ran"] and report["ok"], f"the query failed: {context}"
    assert report["exit_code"] == 0, context
    assert " ".join(report["command"].split()) == " ".join(query.split()), context
    assert report["records"] == len(expected.rows), context
    assert report["summary"].startswith(f"Started streaming {len(expected.rows)} records"), context
    # the graph view draws every node of the result (it may add relationships between them, not nodes)
    assert report["view"] == "graph", context
    assert report["nodes"] == len(expected_nodes) and report["relationships"] >= 1, context

    assert report["screenshot"] == str(png) and png.is_file(), context
    assert _png_size(png) == (WIDTH, HEIGHT)
    assert png.stat().st_size > 20_000, f"screenshot is only {png.stat().st_size} bytes"

    if os.environ.get("HARNESS_G_UPDATE_SCREENSHOTS") == "1":
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, DOCS_SCREENSHOT)
        print(f"updated {DOCS_SCREENSHOT.relative_to(ROOT)}")


def test_a_foreign_web_page_cannot_use_the_http_api(request: pytest.FixtureRequest) -> None:
    """A page from another origin (another port on 127.0.0.1) POSTs to the transaction endpoint from headless
    Chromium: the browser hands it no response (the server's Access-Control-Allow-Origin names only its own origin),
    not even when the script knows the password, and a preflight-free text/plain POST is refused (401: no
    credentials). Nothing is written. From the Browser's own origin the same request works (200), so the refusals
    are the server's doing, not a broken request. Before: ``Access-Control-Allow-Origin: *`` and no authentication,
    so any page could read and write the database."""
    node, chromium = _require_tools()
    neo4j_server: LocalNeo4j = request.getfixturevalue("neo4j_server")
    store = Neo4jStore(neo4j_server.bolt_uri, *neo4j_server.auth)
    probes = "MATCH (n:CorsProbe) RETURN count(n) AS n"
    try:
        assert store.run_cypher(probes).rows == [[0]]
        report = _run_node([node, str(TOOL_DIR / "cross_origin.mjs"), neo4j_server.http_uri, "--timeout-s",
                            str(SCRIPT_TIMEOUT_S), "--chromium", chromium], neo4j_server)
        context = json.dumps(report, indent=1)[:3000]
        assert report["ok"] and report["exit_code"] == 0, context
        assert report["foreign_origin"] != report["target_origin"] == neo4j_server.http_uri, context
        results = report["results"]
        assert results["foreign_json_no_auth"].get("blocked") is True, context
        assert results["foreign_json_password"].get("blocked") is True, context
        # sent without a preflight, so the server answers; the page may not read it, and it had no credentials
        simple = results["foreign_simple_no_auth"]
        assert simple.get("blocked") is True or simple.get("status") == 401, context
        same = results["same_origin_password"]
        assert same.get("status") == 200 and '"errors":[]' in same.get("body", "").replace(" ", ""), context
        # only the same-origin request wrote its node
        assert store.run_cypher(probes).rows == [[1]]
    finally:
        _delete_probes(neo4j_server)
        store.close()


def _delete_probes(server: LocalNeo4j) -> None:
    import neo4j

    with neo4j.GraphDatabase.driver(server.bolt_uri, auth=server.auth) as driver:
        driver.execute_query("MATCH (n:CorsProbe) DETACH DELETE n")
