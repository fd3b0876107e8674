"""``harness-g browse``: draw part of a graph as one self-contained, interactive HTML page (no Neo4j needed).

Two ways to pick what to draw, both pure functions returning a :class:`GraphData` (typed nodes and edges, in a
deterministic order: nodes by kind then id, edges by type then endpoints):

- :func:`neighbourhood` -- a question's **menu neighbourhood**: the sentences U_0 that InitRetrieve shows, the
  LOOKUP targets of the first menu and the sentences each LOOKUP would surface (``Menu.lookup_results``), the
  paragraphs of those sentences, the entities they mention, and the graph's CONTAINS / NEXT / MENTIONS / SYNONYM
  edges among the drawn nodes, plus a SURFACES edge from each LOOKUP target to each sentence its LOOKUP would
  show. A question with gold labels (one of the graph's question set) has its gold evidence marked, and drawn
  even when the first menu misses it.
- :func:`cypher_graph` -- the result of a read-only Cypher query: every node and relationship it returns, and
  every paragraph / sentence / entity id in its columns, drawn with the edges among them (like Neo4j Browser's
  "connect result nodes").

:func:`render_page` turns a GraphData into HTML drawn by vis-network (vendored in ``browse_assets/``, inlined, so
the page works from ``file://`` with no network). Every query is a named, parameterised file in ``cypher/``.
"""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import EntityInfo, GraphView, SentenceInfo
from harness_g.errors import ConfigError
from harness_g.graph.stores.base import GraphStore
from harness_g.graph.types import QAItem

#: node kinds and edge types, in drawing (and sorting) order
NODE_KINDS = ("paragraph", "sentence", "entity")
EDGE_TYPES = ("CONTAINS", "NEXT", "MENTIONS", "SYNONYM", "SURFACES")
#: menu roles a node can have (a node may have several)
ROLE_VISIBLE = "visible"  # a sentence of U_0: the first menu's SELECT / ANSWER_WITH targets
ROLE_LOOKUP = "lookup"  # an entity the first menu offers as a LOOKUP target
ROLE_RESULT = "lookup_result"  # a sentence some LOOKUP of the first menu would surface (U_1 after it)
ROLE_GOLD = "gold"  # gold evidence (a gold sentence, or a gold paragraph)

LABEL_CHARS = 56  # sentence text drawn on the node (the full text is in the hover and the details panel)
HOVER_CHARS = 700  # paragraph text shown on hover
ASSETS = "harness_g.agent.eval"  # package holding browse_assets/ (package data)
VIS_JS = "browse_assets/vis-network.min.js"  # vendored, unmodified (browse_assets/NOTICE)
PAGE_JS = "browse_assets/page.js"  # the page's own script: data -> vis-network DataSets, legend, details panel
PAGE_CSS = "browse_assets/page.css"


@dataclass(frozen=True)
class Node:
    """One drawn node. ``group``: paragraph | sentence | entity | entity_other (an entity that is never a LOOKUP
    target: dates, numbers...); ``label``: drawn text; ``text``: the hover text (full sentence, entity details)."""

    id: str
    kind: str
    group: str
    label: str
    text: str
    roles: tuple[str, ...] = ()

    @property
    def gold(self) -> bool:
        return ROLE_GOLD in self.roles


@dataclass(frozen=True)
class Edge:
    """One drawn edge ``src -> dst`` of ``type`` (EDGE_TYPES); ``label``: e.g. a SYNONYM's rule."""

    src: str
    dst: str
    type: str
    label: str = ""


@dataclass(frozen=True)
class GraphData:
    """What one page draws: nodes (NODE_KINDS order, then id), edges (EDGE_TYPES order, then src, dst) and
    ``description`` lines shown under the title (the question, its gold answer, notes)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    description: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{"id": n.id, "kind": n.kind, "group": n.group, "label": n.label, "text": n.text,
                       "roles": list(n.roles), "gold": n.gold} for n in self.nodes],
            "edges": [{"src": e.src, "dst": e.dst, "type": e.type, "label": e.label} for e in self.edges],
            "description": list(self.description),
        }


@dataclass(frozen=True)
class BrowseConfig:
    """``env``: the menu environment (same knobs as ``ask``/``eval``); ``all_mentions``: draw every mentioned
    entity (False: only lookup-able ones); ``include_gold``: also draw gold sentences the first menu misses;
    ``max_nodes``: refuse to draw more (a browser lays out a few thousand nodes slowly). Gold evidence is
    marked wherever it is drawn."""

    env: EnvConfig = field(default_factory=EnvConfig)
    all_mentions: bool = True
    include_gold: bool = True
    max_nodes: int = 2000


# ------------------------------------------------------------------------------------------------------------
# nodes
# ------------------------------------------------------------------------------------------------------------
def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (with an ellipsis)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2:] else cut).rstrip(" ,;:") + "…"


def paragraph_node(row: Mapping[str, Any], roles: tuple[str, ...] = ()) -> Node:
    """A node from a ``paragraphs_by_ids`` row (id, title, text)."""
    title = str(row.get("title") or row["id"])
    hover = f"Paragraph: {title}\n{row['id']}\n\n{shorten(str(row.get('text') or ''), HOVER_CHARS)}"
    return Node(str(row["id"]), "paragraph", "paragraph", shorten(title, 40), hover, roles)


def sentence_node(info: SentenceInfo, roles: tuple[str, ...] = ()) -> Node:
    hover = f"[{info.title}] {info.text}\n{info.id}" + (f"\nroles: {', '.join(roles)}" if roles else "")
    return Node(info.id, "sentence", "sentence", shorten(info.text, LABEL_CHARS), hover, roles)


def entity_node(info: EntityInfo, roles: tuple[str, ...] = ()) -> Node:
    hover = (f"{info.surface} ({info.label})\ncanonical name: {info.name}\nmentions in the corpus: {info.mentions}\n"
             f"LOOKUP target: {'can be' if info.lookupable else 'never (not lookup-able)'}\n{info.id}")
    return Node(info.id, "entity", "entity" if info.lookupable else "entity_other", shorten(info.surface, 40), hover, roles)


def _sorted_nodes(nodes: Iterable[Node]) -> tuple[Node, ...]:
    return tuple(sorted(nodes, key=lambda n: (NODE_KINDS.index(n.kind), n.id)))


def _sorted_edges(edges: Iterable[Edge]) -> tuple[Edge, ...]:
    unique = {(e.type, e.src, e.dst, e.label): e for e in edges}
    return tuple(unique[k] for k in sorted(unique, key=lambda k: (EDGE_TYPES.index(k[0]), k[1], k[2], k[3])))


def edges_among(store: GraphStore, ids: Sequence[str]) -> list[Edge]:
    """The graph's relationships with both endpoints in ``ids`` (named query ``edges_among``)."""
    if not ids:
        return []
    rows = store.query("edges_among", {"ids": list(ids)})
    return [Edge(str(r["src"]), str(r["dst"]), str(r["type"]), str(r.get("kind") or "")) for r in rows]


def _paragraph_rows(store: GraphStore, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): r for r in store.query("paragraphs_by_ids", {"ids": list(ids)})} if ids else {}


def _check_size(nodes: Sequence[Node], cfg_max: int) -> None:
    if len(nodes) > cfg_max:
        raise ConfigError(f"{len(nodes)} nodes to draw, more than {cfg_max}: narrow the query (LIMIT) or the question")


# ------------------------------------------------------------------------------------------------------------
# a question's menu neighbourhood
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _MenuParts:
    """The first menu, as ids: U_0, the LOOKUP targets (menu order) and what each LOOKUP would surface."""

    visible: tuple[str, ...]
    lookups: tuple[EntityInfo, ...]
    results: dict[str, tuple[str, ...]]


def first_menu(view: GraphView, item: QAItem, env: EnvConfig) -> _MenuParts:
    """Reset a fresh MenuEnv on ``item`` (InitRetrieve + the first menu), read-only on the graph."""
    menu_env = MenuEnv(view, env)
    menu_env.reset(item)
    menu = menu_env.menu
    assert menu is not None  # reset always builds one
    return _MenuParts(tuple(s.id for s in menu.sentences), tuple(menu.entities), dict(menu.lookup_results))


def _sentence_roles(parts: _MenuParts, gold: set[str], add_gold: bool) -> dict[str, tuple[str, ...]]:
    """Sentence id -> its roles: U_0, then LOOKUP results (menu order), then (``add_gold``) gold the menu misses."""
    surfaced = [s for e in parts.lookups for s in parts.results.get(e.id, ())]
    order = list(dict.fromkeys([*parts.visible, *surfaced, *(sorted(gold) if add_gold else ())]))
    visible, results = set(parts.visible), set(surfaced)
    return {sid: tuple(r for r, on in ((ROLE_VISIBLE, sid in visible), (ROLE_RESULT, sid in results),
                                       (ROLE_GOLD, sid in gold)) if on) for sid in order}


def neighbourhood(view: GraphView, item: QAItem, cfg: BrowseConfig | None = None) -> GraphData:
    """The menu neighbourhood of ``item`` (see the module docstring) as GraphData.

    Nodes: the sentences of U_0, of every LOOKUP result and (``cfg.include_gold``) the gold sentences; their
    paragraphs and the gold paragraphs; the entities those sentences mention (``cfg.all_mentions``: every one,
    else lookup-able ones) and the LOOKUP targets. Edges: CONTAINS / NEXT / MENTIONS / SYNONYM among them, and
    SURFACES (LOOKUP target -> each sentence its LOOKUP would show)."""
    cfg = cfg or BrowseConfig()
    parts = first_menu(view, item, cfg.env)
    gold = set(item.gold_sentence_ids)  # marked wherever drawn; added when the menu misses them (include_gold)
    roles = _sentence_roles(parts, gold, cfg.include_gold)
    infos = view.sentences(list(roles))
    missing = [s for s in roles if s not in infos]
    sentences = [sentence_node(infos[s], roles[s]) for s in roles if s in infos]
    gold_pars = set(item.gold_paragraph_ids)
    par_ids = sorted({infos[s].paragraph_id for s in infos} | (gold_pars if cfg.include_gold else set()))
    par_rows = _paragraph_rows(view.store, par_ids)
    paragraphs = [paragraph_node(par_rows[p], (ROLE_GOLD,) if p in gold_pars else ()) for p in par_ids if p in par_rows]
    entities = _mentioned_entities(view, [n.id for n in sentences], parts.lookups, cfg.all_mentions)
    nodes = _sorted_nodes([*paragraphs, *sentences, *entities])
    _check_size(nodes, cfg.max_nodes)
    drawn = {n.id for n in nodes}
    surfaces = [Edge(e.id, s, "SURFACES") for e in parts.lookups for s in parts.results.get(e.id, ()) if s in drawn]
    edges = _sorted_edges([*edges_among(view.store, [n.id for n in nodes]), *surfaces])
    return GraphData(nodes, edges, _question_lines(item, parts, gold, missing))


def _mentioned_entities(view: GraphView, sentence_ids: Sequence[str], lookups: Sequence[EntityInfo],
                        all_mentions: bool) -> list[Node]:
    """Entity nodes: the LOOKUP targets (role ``lookup``) and every entity the sentences mention."""
    found = (view.mentions_of if all_mentions else view.entities_of)(list(sentence_ids))
    by_id: dict[str, EntityInfo] = {e.id: e for ents in found.values() for e in ents}
    by_id.update({e.id: e for e in lookups})
    targets = {e.id for e in lookups}
    return [entity_node(e, (ROLE_LOOKUP,) if e.id in targets else ()) for e in by_id.values()]


def _question_lines(item: QAItem, parts: _MenuParts, gold: set[str], missing: Sequence[str]) -> tuple[str, ...]:
    lines = [f"Question: {item.question}"]
    if item.answers:
        lines.append(f"Gold answer: {' | '.join(item.answers)}")
    shown = set(parts.visible) | {s for r in parts.results.values() for s in r}
    lines.append(f"First menu: {len(parts.visible)} visible sentences (U_0), {len(parts.lookups)} LOOKUP targets; "
                 + (f"gold sentences on it: {len(gold & shown)} of {len(gold)}" if gold else "no gold labels"))
    if missing:
        lines.append(f"not in the store (not drawn): {', '.join(missing)}")
    return tuple(lines)


def resolve_question(questions: Sequence[QAItem], text: str, graph: str = "the graph") -> QAItem:
    """A question of the graph's set by id or by exact text (it keeps its gold labels), else an ad-hoc question.

    A single word that is no question id is refused: it is almost surely a mistyped id, not a question."""
    text = text.strip()
    if not text:
        raise ConfigError("the question is empty: give a question text or a question id")
    norm = " ".join(text.split())
    for item in questions:
        if item.id == text or " ".join(item.question.split()) == norm:
            return item
    if not re.search(r"\s", text):
        sample = ", ".join(q.id for q in questions[:3]) or "none"
        raise ConfigError(f"unknown question id {text!r}: {graph} has {len(questions)} questions (ids such as "
                          f"{sample}); a question text has spaces")
    return QAItem(id="browse", question=text, answers=(), dataset="")


# ------------------------------------------------------------------------------------------------------------
# a Cypher query's result
# ------------------------------------------------------------------------------------------------------------
ID_LIKE = re.compile(r"\S{1,300}")  # graph ids have no whitespace; longer strings are texts, not ids
MAX_ID_CANDIDATES = 50_000


@dataclass
class _Found:
    """What a result holds: candidate graph ids (ordered set), internal ids of relationship endpoints, and the
    internal -> graph id map of the nodes it returned."""

    ids: dict[str, None] = field(default_factory=dict)
    endpoints: dict[Any, None] = field(default_factory=dict)
    by_internal: dict[Any, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {"nodes": 0, "relationships": 0, "values": 0})


def _collect(value: Any, found: _Found) -> None:
    """Walk one result cell (store.run_cypher's plain values: node / relationship / path dicts, lists, scalars)."""
    if isinstance(value, dict) and "labels" in value and "properties" in value:  # a node
        found.counts["nodes"] += 1
        gid = (value.get("properties") or {}).get("id")
        if isinstance(gid, str):
            found.ids[gid] = None
            found.by_internal[value.get("id")] = gid
    elif isinstance(value, dict) and {"type", "src", "dst", "properties"} <= value.keys():  # a relationship
        found.counts["relationships"] += 1
        for end in (value["src"], value["dst"]):
            if isinstance(end, dict):
                _collect(end, found)
            elif end is not None:
                found.endpoints[end] = None
    elif isinstance(value, dict):  # a path {nodes, edges} or a map
        for v in value.values():
            _collect(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, found)
    elif isinstance(value, str) and ID_LIKE.fullmatch(value):
        found.counts["values"] += 1
        found.ids[value] = None


def _resolve_endpoints(store: GraphStore, found: _Found) -> None:
    """Graph ids of relationship endpoints the result did not return as nodes (named query by internal id)."""
    unknown = [e for e in found.endpoints if e not in found.by_internal]
    if unknown:
        for row in store.query("nodes_by_internal_ids", {"ids": unknown}):
            if isinstance(row.get("id"), str):
                found.by_internal[row["internal_id"]] = row["id"]
    for end in found.endpoints:
        if end in found.by_internal:
            found.ids[found.by_internal[end]] = None


def nodes_by_ids(store: GraphStore, ids: Sequence[str]) -> list[Node]:
    """Paragraph, sentence and entity nodes of the given ids (strings that are no graph id are skipped)."""
    ids = list(ids)
    sentences = [SentenceInfo(r["id"], r["paragraph_id"], int(r["position"]), r["title"] or "", r["text"] or "")
                 for r in store.query("sentences_by_ids", {"ids": ids})]
    entities = [EntityInfo(r["id"], r["name"], r["surface"], r["label"], bool(r["lookupable"]), int(r["mentions"] or 0))
                for r in store.query("entities_by_ids", {"ids": ids})]
    paragraphs = _paragraph_rows(store, ids).values()
    return [*map(paragraph_node, paragraphs), *map(sentence_node, sentences), *map(entity_node, entities)]


def cypher_graph(store: GraphStore, query: str, params: Mapping[str, Any] | None = None, *,
                 max_nodes: int = BrowseConfig.max_nodes) -> GraphData:
    """The drawable part of a read-only query's result: its nodes, its relationships' endpoints and the graph
    ids among its values (paragraph / sentence / entity), with every CONTAINS / NEXT / MENTIONS / SYNONYM edge
    among them. Raises ConfigError when the result holds none of those."""
    result = store.run_cypher(query, dict(params or {}))
    found = _Found()
    for row in result.rows:
        _collect(row, found)
    _resolve_endpoints(store, found)
    if len(found.ids) > MAX_ID_CANDIDATES:
        raise ConfigError(f"the query returned {len(found.ids)} distinct values: add a LIMIT")
    nodes = _sorted_nodes(nodes_by_ids(store, list(found.ids)))
    if not nodes:
        raise ConfigError(
            f"nothing to draw: the query returned {len(result.rows)} row(s) with no paragraph, sentence or entity "
            "(as a node, a relationship or an id); return nodes (RETURN s) or their ids (RETURN s.id)")
    _check_size(nodes, max_nodes)
    edges = _sorted_edges(edges_among(store, [n.id for n in nodes]))
    c = found.counts
    lines = (f"Cypher: {' '.join(query.split())}",
             *([f"parameters: {json.dumps(dict(params), ensure_ascii=False, default=str)}"] if params else []),
             f"{len(result.rows)} row(s): {c['nodes']} node value(s), {c['relationships']} relationship value(s), "
             f"{c['values']} string value(s); drawn with the graph's edges among them")
    return GraphData(nodes, edges, lines)


# ------------------------------------------------------------------------------------------------------------
# the page
# ------------------------------------------------------------------------------------------------------------
def asset(name: str) -> str:
    """Text of a file of ``browse_assets/``, ready to inline: no '</script' (it would end the inline element)
    and no source-map comment (the page is offline)."""
    text = (resources.files(ASSETS) / name).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ConfigError(f"{name} contains '</script' or '</style': cannot inline it")
    return re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", text)


def vis_network_js() -> str:
    """The vendored vis-network standalone build (window.vis), ready to inline."""
    return asset(VIS_JS)


def _script_json(obj: Any) -> str:
    """JSON safe inside <script type="application/json"> (no '<', '>' or '&' that HTML could read)."""
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


DETAILS_HINT = ("<h2>Details</h2><p>Click a node for its full text, id and menu roles; hover for a preview. "
                "Drag nodes, scroll to zoom, drag the background to pan.</p>")


def render_page(data: GraphData, title: str) -> str:
    """One self-contained HTML page drawing ``data`` with vis-network (inlined): drag, zoom, hover for the full
    text, click for details. Deterministic layout (fixed random seed); when drawn, the page sets
    ``window.harnessBrowse = {ready, nodes, edges, errors}`` (what the headless-browser test reads)."""
    counts = {k: sum(n.kind == k for n in data.nodes) for k in NODE_KINDS}
    summary = (f"{len(data.nodes)} nodes ({counts['paragraph']} paragraphs, {counts['sentence']} sentences, "
               f"{counts['entity']} entities), {len(data.edges)} edges")
    lines = "".join(f"<div>{html.escape(line)}</div>" for line in data.description)
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{html.escape(title)}</title><style>{asset(PAGE_CSS)}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1>{lines}<div class=\"counts\">{html.escape(summary)}</div></header>",
        f"<main><div id=\"network\"></div><aside id=\"side\"><div id=\"details\">{DETAILS_HINT}</div></aside></main>",
        f"<script id=\"browse-data\" type=\"application/json\">{_script_json(data.to_json())}</script>",
        f"<script>{vis_network_js()}</script><script>{asset(PAGE_JS)}</script></body></html>\n",
    ])


def write_page(data: GraphData, out: str | Path, title: str) -> Path:
    """Write :func:`render_page` to ``out`` (parent folders created); returns the path."""
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_page(data, title), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path


def _say(line: str) -> None:
    print(line, flush=True)  # flushed: a caller reading our stdout (a test, a script) sees the URL at once


def serve(path: Path, port: int = 8000, *, announce: Callable[[str], None] = _say) -> None:
    """Serve the page (only it) on 127.0.0.1:``port`` (0: any free port) until Ctrl-C / SIGTERM."""
    body = Path(path).read_bytes()
    names = {"/", "/" + Path(path).name}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?", 1)[0] not in names:
                self.send_error(404, "harness-g browse serves one page: /")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: no line per request
            pass

    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    except OSError as exc:
        raise ConfigError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
    with server:
        announce(f"serving http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C stops)")
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (the CLI turns it into a KeyboardInterrupt)
            pass
    announce("stopped")
