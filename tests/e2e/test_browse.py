"""``harness-g browse``: a question's menu neighbourhood, or a Cypher result, drawn as one offline HTML page.

On the real HotpotQA test graph, on both stores: the GraphData of each test question holds U_0, the first menu's
LOOKUP targets and results, their paragraphs, and the gold evidence marked; its edges are exactly the graph's
edges among the drawn nodes (checked through other named queries); the README's commands run as printed; Cypher
results (nodes, relationships alone, paths, id columns) draw the same nodes; bad input is one line; ``--serve``
serves the page; and headless Chromium (tools/browser-check/browse_page.mjs, puppeteer-core) draws every node
with no JS error and no network request. ``HARNESS_G_UPDATE_SCREENSHOTS=1`` (or a missing file) writes that
screenshot to docs/images/browse.png (shown in the README).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO_ROOT as ROOT
from helpers.store_queries import run_test_query

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.browse import (EDGE_TYPES, NODE_KINDS, ROLE_GOLD, ROLE_LOOKUP, ROLE_RESULT, ROLE_VISIBLE,
                                         BrowseConfig, Edge, GraphData, Node, cypher_graph, first_menu, neighbourhood,
                                         render_page, resolve_question, shorten, vis_network_js)
from harness_g.cli import main
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem

README = ROOT / "README.md"
ASSETS = ROOT / "agent" / "eval" / "browse_assets"
TOOL_DIR = ROOT / "tools" / "browser-check"
SCRIPT = TOOL_DIR / "browse_page.mjs"
DOCS_SCREENSHOT = ROOT / "docs" / "images" / "browse.png"
README_GRAPH = "graphs/hotpotqa"  # the GRAPH_DIR the README's commands name; the tests substitute the test graph
HUGO = "5a8268aa55429940e5e1a8aa"  # the README's question (two gold sentences, both on its first menu)
DATA = re.compile(r'<script id="browse-data" type="application/json">(.*?)</script>', re.S)
WIDTH, HEIGHT = 1400, 900


# ------------------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------------------
def page_data(path: Path) -> dict[str, Any]:
    """The GraphData JSON a page embeds."""
    match = DATA.search(path.read_text(encoding="utf-8"))
    assert match, f"{path} embeds no browse-data"
    return json.loads(match.group(1))


def readme_commands() -> list[list[str]]:
    """argv of each `harness-g browse` line of the README's browse block, split by bash exactly as a shell would."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"\*\*Looking at a graph without Neo4j\.\*\*.*?```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no 'Looking at a graph without Neo4j' paragraph with a ```bash block"
    lines = [line for line in block.group(1).splitlines() if line.startswith("harness-g browse ")]
    argvs = []
    for line in lines:
        out = subprocess.run(["bash", "-c", "printf '%s\\0' " + line], capture_output=True, check=True).stdout
        argvs.append(out.decode("utf-8").split("\0")[:-1])
    return argvs


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def by_id(data: GraphData) -> dict[str, Node]:
    return {n.id: n for n in data.nodes}


def question(questions: list[QAItem], qid: str) -> QAItem:
    return next(q for q in questions if q.id == qid)


# ------------------------------------------------------------------------------------------------------------
# the menu neighbourhood
# ------------------------------------------------------------------------------------------------------------
def test_neighbourhood_holds_the_first_menu_its_paragraphs_and_the_gold(hotpot_view: GraphView, hotpot_questions) -> None:
    for item in hotpot_questions:
        data = neighbourhood(hotpot_view, item)
        nodes = by_id(data)
        env = MenuEnv(hotpot_view)  # the menu, independently of browse.first_menu
        env.reset(item)
        menu = env.menu
        assert menu is not None and menu.sentences and menu.entities, item.id
        for s in menu.sentences:  # U_0
            assert ROLE_VISIBLE in nodes[s.id].roles and nodes[s.id].kind == "sentence"
            assert nodes[s.paragraph_id].kind == "paragraph" and nodes[s.paragraph_id].label == shorten(s.title, 40)
        for e in menu.entities:  # LOOKUP targets, and what each would surface
            assert nodes[e.id].roles == (ROLE_LOOKUP,) and nodes[e.id].kind == "entity"
            for sid in menu.lookup_results[e.id]:
                assert ROLE_RESULT in nodes[sid].roles
                assert Edge(e.id, sid, "SURFACES") in data.edges
        assert item.gold_sentence_ids
        for sid in item.gold_sentence_ids:  # gold marked, drawn even where the menu misses it
            assert nodes[sid].gold and ROLE_GOLD in nodes[sid].roles
        for pid in item.gold_paragraph_ids:
            assert nodes[pid].gold
        gold = set(item.gold_sentence_ids)
        assert not [n.id for n in data.nodes if n.kind == "sentence" and n.gold and n.id not in gold]
        assert any("Gold answer: " in line for line in data.description)


def test_every_edge_is_a_graph_edge_among_the_drawn_nodes(hotpot_view: GraphView, hotpot_questions) -> None:
    """Edges checked against other named queries: sentences' paragraph ids and positions (CONTAINS, NEXT),
    mentions_of (MENTIONS), synonyms_of (SYNONYM)."""
    data = neighbourhood(hotpot_view, question(hotpot_questions, HUGO))
    nodes = by_id(data)
    assert all(e.src in nodes and e.dst in nodes for e in data.edges)
    assert [n for n in data.nodes] == sorted(data.nodes, key=lambda n: (NODE_KINDS.index(n.kind), n.id))
    assert list(data.edges) == sorted(data.edges, key=lambda e: (EDGE_TYPES.index(e.type), e.src, e.dst, e.label))
    infos = hotpot_view.sentences([n.id for n in data.nodes if n.kind == "sentence"])
    kinds = {t: {(e.src, e.dst) for e in data.edges if e.type == t} for t in EDGE_TYPES}
    assert kinds["CONTAINS"] == {(s.paragraph_id, s.id) for s in infos.values()}
    assert kinds["NEXT"] == {(a.id, b.id) for a in infos.values() for b in infos.values()
                             if a.paragraph_id == b.paragraph_id and b.position == a.position + 1}
    mentions = hotpot_view.mentions_of(list(infos))
    assert kinds["MENTIONS"] == {(s, e.id) for s, ents in mentions.items() for e in ents}
    synonyms = set()
    for eid in (n.id for n in data.nodes if n.kind == "entity"):
        synonyms |= {frozenset((eid, r["id"])) for r in run_test_query(hotpot_view.store, "synonyms_of", {"entity_id": eid})
                     if r["id"] in nodes}
    assert {frozenset(p) for p in kinds["SYNONYM"]} == synonyms and synonyms
    assert kinds["MENTIONS"] and kinds["CONTAINS"] and kinds["NEXT"]


def test_neighbourhood_is_deterministic_and_options_narrow_it(hotpot_view: GraphView, hotpot_questions) -> None:
    item = question(hotpot_questions, HUGO)
    full = neighbourhood(hotpot_view, item)
    assert neighbourhood(hotpot_view, item) == full
    narrow = neighbourhood(hotpot_view, item, BrowseConfig(all_mentions=False))
    entities = [n for n in narrow.nodes if n.kind == "entity"]
    assert entities and all(n.group == "entity" for n in entities)  # lookup-able only
    assert any(n.group == "entity_other" for n in full.nodes) and len(narrow.nodes) < len(full.nodes)
    with pytest.raises(ConfigError, match=r"nodes to draw, more than 10"):
        neighbourhood(hotpot_view, item, BrowseConfig(max_nodes=10))


def test_gold_the_first_menu_misses_is_drawn_unless_asked_not_to(hotpot_view: GraphView, hotpot_questions) -> None:
    missed_somewhere = False
    for item in hotpot_questions:
        parts = first_menu(hotpot_view, item, BrowseConfig().env)
        on_menu = set(parts.visible) | {s for r in parts.results.values() for s in r}
        default = by_id(neighbourhood(hotpot_view, item))
        menu_only = neighbourhood(hotpot_view, item, BrowseConfig(include_gold=False))
        assert {n.id for n in menu_only.nodes if n.kind == "sentence"} == on_menu, item.id
        assert {n.id for n in menu_only.nodes if n.gold and n.kind == "sentence"} == on_menu & set(item.gold_sentence_ids)
        for sid in set(item.gold_sentence_ids) - on_menu:  # missed by the menu: drawn, gold its only role
            assert default[sid].roles == (ROLE_GOLD,)
            missed_somewhere = True
    assert missed_somewhere, "no test question has gold evidence its first menu misses: the check above is empty"


def test_an_ad_hoc_question_has_no_gold(hotpot_view: GraphView, hotpot_questions) -> None:
    item = resolve_question(hotpot_questions, "Which football team is based in Cartagena?")
    assert item.id == "browse" and not item.gold_sentence_ids
    data = neighbourhood(hotpot_view, item)
    assert data.nodes and not any(n.gold for n in data.nodes)
    assert set(first_menu(hotpot_view, item, BrowseConfig().env).visible) <= set(by_id(data))
    assert any("no gold labels" in line for line in data.description)


def test_questions_resolve_by_id_or_text(hotpot_questions) -> None:
    item = question(hotpot_questions, HUGO)
    assert resolve_question(hotpot_questions, HUGO) is item
    assert resolve_question(hotpot_questions, "  " + item.question.replace(" ", "  ") + " ") is item  # spacing aside
    with pytest.raises(ConfigError, match=r"unknown question id 'nosuchid': G has 6 questions"):
        resolve_question(hotpot_questions, "nosuchid", "G")
    with pytest.raises(ConfigError, match="the question is empty"):
        resolve_question(hotpot_questions, "   ")


# ------------------------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------------------------
def test_readme_commands_write_pages_with_the_library_and_the_data(
        hotpot_dir: Path, hotpot_view: GraphView, hotpot_questions, tmp_path: Path, capsys, monkeypatch) -> None:
    commands = readme_commands()
    assert len(commands) == 2 and all(argv[:3] == ["harness-g", "browse", README_GRAPH] for argv in commands)
    monkeypatch.chdir(tmp_path)
    library = (ASSETS / "vis-network.min.js").read_text(encoding="utf-8").split("\n//# sourceMappingURL")[0]
    pages = []
    for argv in commands:
        code, out, err = run_cli([argv[1], str(hotpot_dir), *argv[3:]], capsys)
        assert code == 0, err
        out_name = argv[argv.index("--out") + 1] if "--out" in argv else "browse.html"
        assert out.startswith(f"browse: {out_name}  (")
        page = tmp_path / out_name
        text = page.read_text(encoding="utf-8")
        assert library in text and "sourceMappingURL" not in text  # inlined whole; nothing to fetch
        assert not re.search(r"<(script|link)[^>]+(src|href)=", text)
        pages.append(page)

    question_page = page_data(pages[0])  # the question's neighbourhood: the same data neighbourhood() gives
    item = resolve_question(hotpot_questions, commands[0][3])
    assert item.id == HUGO  # given by text, still the graph's question: gold marked
    expected = neighbourhood(hotpot_view, item).to_json()
    assert question_page == expected and sum(n["gold"] for n in question_page["nodes"]) >= 4

    params = {"n": "copenhagen"}  # --param n='"copenhagen"' is JSON
    rows = hotpot_view.store.run_cypher("MATCH (e:Entity {name: $n})<-[:MENTIONS]-(s:Sentence) RETURN s.id, e.id", params).rows
    cypher_page = page_data(pages[1])
    assert rows and {n["id"] for n in cypher_page["nodes"]} == {v for row in rows for v in row}
    assert {(e["src"], e["dst"], e["type"]) for e in cypher_page["edges"]} >= {(s, e, "MENTIONS") for s, e in rows}


def test_the_question_id_draws_what_its_text_draws(hotpot_dir: Path, hotpot_questions, tmp_path: Path, capsys) -> None:
    item = question(hotpot_questions, HUGO)
    pages = [tmp_path / "by-id.html", tmp_path / "by-text.html"]
    for arg, page in zip((HUGO, item.question), pages):
        assert run_cli(["browse", str(hotpot_dir), arg, "--out", str(page)], capsys)[0] == 0
    assert page_data(pages[0]) == page_data(pages[1])
    assert f"menu neighbourhood of {HUGO}" in pages[0].read_text(encoding="utf-8")


CYPHER_FORMS = {  # each returns the Giotto paragraph, its sentences, or both: drawn as the same nodes
    "nodes": "MATCH (p:Paragraph {title: $t})-[:CONTAINS]->(s:Sentence) RETURN p, s",
    "relationships only": "MATCH (:Paragraph {title: $t})-[r:CONTAINS]->(:Sentence) RETURN r",
    "paths": "MATCH path = (:Paragraph {title: $t})-[:CONTAINS]->(:Sentence) RETURN path",
    "id columns": "MATCH (p:Paragraph {title: $t})-[:CONTAINS]->(s:Sentence) RETURN p.id AS paragraph, s.id AS sentence",
    "a list of ids": "MATCH (p:Paragraph {title: $t})-[:CONTAINS]->(s:Sentence) RETURN p.id, collect(s.id) AS ids",
}


def test_cypher_results_of_every_form_draw_the_same_nodes(hotpot_view: GraphView) -> None:
    store = hotpot_view.store
    expected = {v for row in store.run_cypher(CYPHER_FORMS["id columns"], {"t": "Giotto"}).rows for v in row}
    assert len(expected) >= 3
    for form, query in CYPHER_FORMS.items():
        data = cypher_graph(store, query, {"t": "Giotto"})
        assert {n.id for n in data.nodes} == expected, form
        contains = {(e.src, e.dst) for e in data.edges if e.type == "CONTAINS"}
        assert len(contains) == len(expected) - 1 and {e.type for e in data.edges} <= {"CONTAINS", "NEXT"}, form
        assert data.description[0].startswith("Cypher: MATCH"), form


@pytest.mark.parametrize("argv, message", [
    (["nosuchid"], r"unknown question id 'nosuchid': .* has 6 questions"),
    (["--cypher", "MATCH (s:Sentence) WHERE s.title = $t RETURN s.text", "--param", "t=Giotto"],
     r"nothing to draw: the query returned \d+ row\(s\) with no paragraph, sentence or entity"),
    (["--cypher", "MATCH (s:Sentence {title: $t}) RETURN s", "--param", "t=nope"], r"nothing to draw: .* 0 row\(s\)"),
    (["--cypher", "MATCH (s:Sentence RETURN s"], r"(FalkorDB|Neo4j) query failed"),
    (["--cypher", "CREATE (p:Paragraph {id: 'x'}) RETURN p"], r"(FalkorDB|Neo4j) query failed"),
    ([], r"give a QUESTION \(text or question id\) or --cypher QUERY$"),
    (["a question?", "--cypher", "RETURN 1"], r"or --cypher QUERY, not both"),
    (["a question?", "--param", "t=1"], r"--param needs --cypher"),
    (["a question?", "--port", "0"], r"--port needs --serve"),
], ids=["unknown-id", "no-graph-values", "no-rows", "syntax-error", "a-write", "nothing", "both", "param-alone",
        "port-alone"])
def test_bad_input_is_one_line(hotpot_dir: Path, argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "page.html"
    code, _, err = run_cli(["browse", str(hotpot_dir), *argv, "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("harness-g: error: "), err
    assert re.search(message, err.strip()), err
    assert not out.exists()


def test_serve_serves_the_page_until_interrupted(falkordb_hotpot_view, hotpot_graph_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "served.html"
    cmd = [sys.executable, "-m", "harness_g", "browse", str(hotpot_graph_dir), "--cypher",
           "MATCH (p:Paragraph {title: $t}) RETURN p", "--param", "t=Giotto", "--out", str(out), "--serve", "--port", "0"]
    # a command started in the background of a non-interactive shell (`.ci/run &`, nohup) inherits SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: give the server the default disposition a terminal gives it
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = [proc.stdout.readline() for _ in range(2)]  # "browse: PATH (...)", "serving http://127.0.0.1:PORT/ ..."
        match = re.match(r"serving (http://127\.0\.0\.1:\d+/)  \(Ctrl-C stops\)", lines[1])
        assert lines[0].startswith(f"browse: {out}") and match, (lines, proc.stderr.read() if proc.poll() else "")
        with urllib.request.urlopen(match.group(1), timeout=30) as reply:
            assert reply.status == 200 and reply.headers["Content-Type"] == "text/html; charset=utf-8"
            assert reply.read() == out.read_bytes()
        with pytest.raises(urllib.error.HTTPError, match="404"):  # the page only, not the folder around it
            urllib.request.urlopen(match.group(1) + "etc/passwd", timeout=30)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and rest.strip() == "stopped", err


# ------------------------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------------------------
def test_render_page_escapes_what_the_graph_holds() -> None:
    evil = "</script><script>alert(1)</script> & <b>"
    data = GraphData((Node("p_1", "paragraph", "paragraph", evil, evil, (ROLE_GOLD,)),), (), (evil,))
    page = render_page(data, title=evil).replace(vis_network_js(), "")  # the page around the library
    assert "<script>alert(1)" not in page and "<b>" not in page
    assert page.count("&lt;/script&gt;&lt;script&gt;alert(1)") == 3  # the title element, the heading, the description
    assert json.loads(DATA.search(page).group(1)) == data.to_json()  # the data survives escaping intact


def test_the_vendored_library_is_the_one_its_notice_names() -> None:
    notice = (ASSETS / "NOTICE").read_text(encoding="utf-8")
    digest = hashlib.sha256((ASSETS / "vis-network.min.js").read_bytes()).hexdigest()
    assert f"sha256 of vis-network.min.js: {digest}" in notice and "vis-network 10.1.5" in notice
    assert "@version 10.1.5" in (ASSETS / "vis-network.min.js").read_text(encoding="utf-8")[:400]
    assert "MIT License" in (ASSETS / "LICENSE-MIT").read_text(encoding="utf-8")
    assert "Apache License" in (ASSETS / "LICENSE-APACHE-2.0").read_text(encoding="utf-8")
    shipped = resources.files("harness_g.agent.eval") / "browse_assets"  # read as package data, as the wheel ships it
    assert {p.name for p in shipped.iterdir()} >= {"vis-network.min.js", "page.js", "page.css", "NOTICE", "LICENSE-MIT"}
    assert '"harness_g.agent.eval" = ["browse_assets/*"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_readme_browse_query_passes_the_cypher_linter() -> None:
    from test_cypher_lint import Text, run_lint

    queries = [argv[argv.index("--cypher") + 1] for argv in readme_commands() if "--cypher" in argv]
    assert queries
    texts = [Text(f"README browse {i}", q, "README.md", None) for i, q in enumerate(queries)]
    texts.append(Text("control", "MATCH (e:Entity {id: $id} RETURN e", "tests/e2e/test_browse.py", None))
    found = run_lint(texts)
    assert found["control"], "the linter reported nothing on a broken query"
    for t in texts[:-1]:
        assert not [d for d in found[t.name] if d["severity"] == "error" or d["deprecation"]], (t.text, found[t.name])


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def _render(page: Path, png: Path) -> dict[str, Any]:
    """Run browse_page.mjs (puppeteer-core + the system Chromium) on ``page``; its JSON report."""
    if not (TOOL_DIR / "node_modules" / "puppeteer-core" / "package.json").is_file() or shutil.which("node") is None:
        pytest.fail("the headless check needs node and tools/browser-check/node_modules (puppeteer-core): "
                    "run `bash tools/browser-check/setup.sh`", pytrace=False)
    cmd = ["node", str(SCRIPT), page.resolve().as_uri(), str(png), "--width", str(WIDTH), "--height", str(HEIGHT),
           "--timeout-s", "120", "--chromium", str(shutil.which("chromium"))]
    proc = subprocess.run(cmd, cwd=TOOL_DIR, capture_output=True, text=True, timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"browse_page.mjs printed no JSON (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    return {**json.loads(lines[-1]), "exit_code": proc.returncode}


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not on PATH (apt-get install chromium) - headless rendering check skipped")
def test_the_page_renders_in_headless_chromium(hotpot_dir: Path, store_kind: str, tmp_path: Path, capsys) -> None:
    argv = readme_commands()[0]  # the README's question: the README shows this screenshot
    page = tmp_path / "browse.html"
    assert run_cli([argv[1], str(hotpot_dir), *argv[3:], "--out", str(page)], capsys)[0] == 0
    data = page_data(page)
    png = tmp_path / "browse.png"
    report = _render(page, png)
    context = json.dumps(report, indent=1)[:3000]
    assert report["ok"] and report["exit_code"] == 0 and report["ready"], context
    assert report["nodes"] == len(data["nodes"]) and report["edges"] == len(data["edges"]), context
    assert report["page_errors"] == [] and report["console_errors"] == [], context
    assert report["requests_refused"] == [], context  # offline: nothing but the file itself
    assert "gold evidence" in report["legend"] and "LOOKUP target" in report["legend"], context
    assert report["title"] == f"harness-g browse: menu neighbourhood of {HUGO}"
    assert _png_size(png) == (WIDTH, HEIGHT) and png.stat().st_size > 40_000  # a blank canvas is a few KB
    if store_kind == "falkordb" and (os.environ.get("HARNESS_G_UPDATE_SCREENSHOTS") == "1" or not DOCS_SCREENSHOT.exists()):
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, DOCS_SCREENSHOT)
