"""Neo4j Browser, served by the local Neo4j (``neo4j_server``), works end to end in headless Chromium.

docker/README.md tells users to browse harness-g graphs in Neo4j Browser and lists queries worth running
there. This test loads the real HotpotQA test graph into the session's Neo4j, then drives the Browser with
``tools/browser-check/browser_query.mjs`` (puppeteer-core + the system Chromium): it opens the Browser,
connects with no authentication, sets ``:param title => "Giotto"``, runs README query 1 ("a sentence in
context") exactly as the README prints it, waits for the graph view and takes a screenshot. The test
checks what the Browser reported against the same query run through :class:`Neo4jStore`.

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


def _run_browser_query(node: str, chromium: str, server: LocalNeo4j, query: str, params: dict[str, Any],
                       out: Path) -> dict[str, Any]:
    cmd = [node, str(SCRIPT), server.browser_url, server.bolt_uri, query, str(out), "--params", json.dumps(params),
           "--width", str(WIDTH), "--height", str(HEIGHT), "--timeout-s", str(SCRIPT_TIMEOUT_S), "--chromium", chromium]
    # its own process group, so a hung run can be ended with its Chromium (the script has a watchdog too)
    proc = subprocess.Popen(cmd, cwd=TOOL_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=SCRIPT_TIMEOUT_S + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"browser_query.mjs did not finish in {SCRIPT_TIMEOUT_S + 30} s: {stdout[-2000:]} {stderr[-2000:]}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert lines, f"browser_query.mjs printed no JSON (exit {proc.returncode}): {stdout[-2000:]} {stderr[-2000:]}"
    report: dict[str, Any] = json.loads(lines[-1])
    report["exit_code"] = proc.returncode
    report["stderr_tail"] = stderr[-2000:]
    return report


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
    store = Neo4jStore(neo4j_server.bolt_uri)
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
