"""Graph stores: open one from a ``--store`` spec.

Accepted specs (``SPEC_FORMS``)::

    (none) | embedded          embedded FalkorDB on a unix socket, data in GRAPH_DIR/store
    embedded:PORT              embedded FalkorDB, also listening on 127.0.0.1:PORT
    falkordb://HOST:PORT[?graph=NAME]   an existing FalkorDB server (graph name default harness_g);
                               password from FALKORDB_PASSWORD when the server requires one
    neo4j://... | bolt://... | neo4j+s://... | bolt+s://... (and +ssc)
                               Neo4j 5; credentials from NEO4J_USER (or NEO4J_USERNAME) and
                               NEO4J_PASSWORD, database from NEO4J_DATABASE (default: the server's). Without
                               NEO4J_PASSWORD, a loopback URI served by a running ``harness-g neo4j`` / LocalNeo4j
                               uses the credentials that server stored for harness-g (``local_neo4j.local_credentials``)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import SplitResult, parse_qs, urlsplit

from harness_g.errors import StoreError
from harness_g.graph.stores.base import CypherResult, GraphStore, LoadReport

SPEC_FORMS = (
    "embedded",
    "embedded:PORT",
    "falkordb://HOST:PORT[?graph=NAME]",
    "neo4j://HOST[:PORT]",
    "bolt://HOST[:PORT]",
    "neo4j+s://HOST[:PORT]",
)
NEO4J_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")


@dataclass(frozen=True)
class StoreSpec:
    """A parsed ``--store`` value."""

    kind: str  # a key of STORE_KINDS: "embedded" | "falkordb" | "neo4j"
    host: str | None = None
    port: int | None = None
    graph: str | None = None
    uri: str | None = None


@dataclass(frozen=True)
class StoreKind:
    """One kind of graph store in :data:`STORE_KINDS`: which specs name it and what to do with one."""

    #: URL schemes of its ``SCHEME://...`` specs (lower case); empty for the embedded store ("embedded[:PORT]")
    schemes: tuple[str, ...]
    #: ``parse(spec, url)``: the stripped spec text and its urlsplit (None for the embedded form) -> StoreSpec
    parse: Callable[[str, SplitResult | None], StoreSpec]
    #: ``describe(parsed)``: one phrase naming where it points, for messages (never credentials)
    describe: Callable[[StoreSpec], str]
    #: ``connect(parsed, graph_dir)``: a client (the embedded store keeps its data in ``graph_dir/store``)
    connect: Callable[[StoreSpec, Path | None], GraphStore]


def _malformed(spec: str, why: str) -> StoreError:
    return StoreError(f"malformed store spec {spec!r} ({why}); accepted: {', '.join(SPEC_FORMS)}")


def _port(spec: str, text: str | None) -> int:
    if text is None or not text.isdigit() or not 0 < int(text) < 65536:
        raise _malformed(spec, f"port {text!r} is not a number in 1-65535")
    return int(text)


def _split(spec: str) -> SplitResult:
    """``urlsplit(spec)``, its port checked (a port that is no number or out of range is a malformed spec)."""
    try:
        parts = urlsplit(spec)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError as exc:
        raise _malformed(spec, str(exc)) from exc
    return parts


# -- embedded FalkorDB: "embedded" | "embedded:PORT" -------------------------------------------------
def _parse_embedded(spec: str, url: SplitResult | None) -> StoreSpec:
    if spec.startswith("embedded:"):
        return StoreSpec("embedded", port=_port(spec, spec.split(":", 1)[1]))
    return StoreSpec("embedded")


def _describe_embedded(parsed: StoreSpec) -> str:
    where = f"127.0.0.1:{parsed.port}" if parsed.port else "a unix socket"
    return f"embedded FalkorDB ({where}, data in GRAPH_DIR/store)"


def _connect_embedded(parsed: StoreSpec, graph_dir: Path | None) -> GraphStore:
    if graph_dir is None:
        raise StoreError("the embedded store needs a GRAPH_DIR (its data lives in GRAPH_DIR/store)")
    from harness_g.graph.stores.falkordb_store import FalkorDBStore

    return FalkorDBStore.from_embedded(Path(graph_dir) / "store", port=parsed.port)


# -- a FalkorDB server: falkordb://HOST:PORT[?graph=NAME] ---------------------------------------------
def _parse_falkordb(spec: str, url: SplitResult | None) -> StoreSpec:
    assert url is not None
    if not url.hostname:
        raise _malformed(spec, "no host")
    query = parse_qs(url.query)
    unknown = sorted(set(query) - {"graph"})
    if unknown:
        raise _malformed(spec, f"unknown option {unknown[0]!r}")
    graph = query.get("graph", [None])[-1]
    port_text = str(url.port) if url.port is not None else None
    return StoreSpec("falkordb", host=url.hostname, port=_port(spec, port_text), graph=graph)


def _describe_falkordb(parsed: StoreSpec) -> str:
    return f"FalkorDB at {parsed.host}:{parsed.port} (graph {parsed.graph or 'harness_g'})"


def _connect_falkordb(parsed: StoreSpec, graph_dir: Path | None) -> GraphStore:
    from harness_g.graph.stores.falkordb_store import DEFAULT_GRAPH, FalkorDBStore

    assert parsed.host is not None and parsed.port is not None
    return FalkorDBStore.connect(parsed.host, parsed.port, graph=parsed.graph or DEFAULT_GRAPH,
                                 password=os.environ.get("FALKORDB_PASSWORD") or None)


# -- Neo4j 5: neo4j:// bolt:// (+s, +ssc) ------------------------------------------------------------
def _parse_neo4j(spec: str, url: SplitResult | None) -> StoreSpec:
    assert url is not None
    if not url.hostname:
        raise _malformed(spec, "no host")
    return StoreSpec("neo4j", uri=spec)


def _describe_neo4j(parsed: StoreSpec) -> str:
    database = os.environ.get("NEO4J_DATABASE")
    uri = urlsplit(parsed.uri or "")
    return f"Neo4j at {uri.scheme}://{uri.hostname}{f':{uri.port}' if uri.port else ''}" + (f" (database {database})" if database else "")


def _connect_neo4j(parsed: StoreSpec, graph_dir: Path | None) -> GraphStore:
    from harness_g.graph.stores.neo4j_store import Neo4jStore

    user, password = neo4j_credentials(parsed.uri or "")
    return Neo4jStore(parsed.uri or "", user=user, password=password, database=os.environ.get("NEO4J_DATABASE") or None)


#: the store kinds, name (``StoreSpec.kind``) -> how its specs parse, how it is described and connected
STORE_KINDS: dict[str, StoreKind] = {
    "embedded": StoreKind((), _parse_embedded, _describe_embedded, _connect_embedded),
    "falkordb": StoreKind(("falkordb",), _parse_falkordb, _describe_falkordb, _connect_falkordb),
    "neo4j": StoreKind(NEO4J_SCHEMES, _parse_neo4j, _describe_neo4j, _connect_neo4j),
}


def parse_store_spec(spec: str | None) -> StoreSpec:
    """Parse a store spec; raises StoreError listing the accepted forms when it is malformed."""
    text = (spec or "").strip()
    if text in ("", "embedded") or text.startswith("embedded:"):
        return STORE_KINDS["embedded"].parse(text, None)
    if "://" not in text:
        raise _malformed(text, "unknown form")
    url = _split(text)
    scheme = url.scheme.lower()
    kind = next((k for k in STORE_KINDS.values() if scheme in k.schemes), None)
    if kind is None:
        raise _malformed(text, f"unknown scheme {scheme!r}")
    return kind.parse(text, url)


def describe_store(spec: str | None) -> str:
    """One phrase naming where a spec points, for messages (never includes credentials)."""
    parsed = parse_store_spec(spec)
    return STORE_KINDS[parsed.kind].describe(parsed)


def connect_store(spec: str | None, graph_dir: Path | None) -> GraphStore:
    """Connect to the store ``spec`` names (see module doc); the embedded one keeps its data in ``graph_dir/store``.

    Names, one job each: ``connect_store`` (a spec -> a client), ``graph.load.store_for_graph`` (a GRAPH_DIR -> its
    store: explicit, remembered or embedded), ``graph.load.load_graph`` (load the artifact into that store, idempotent),
    ``agent.session.open_view`` (a loaded graph -> a GraphView for the environment)."""
    parsed = parse_store_spec(spec)
    return STORE_KINDS[parsed.kind].connect(parsed, graph_dir)


def neo4j_credentials(uri: str) -> tuple[str | None, str | None]:
    """(user, password) for a Neo4j URI: NEO4J_USER (or NEO4J_USERNAME) and NEO4J_PASSWORD when NEO4J_PASSWORD is
    set; else, for a loopback URI a running local Neo4j serves, the credentials it stored for harness-g; else none."""
    user = os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME")
    password = os.environ.get("NEO4J_PASSWORD")
    if password:
        return user, password
    from harness_g.graph.stores.local_neo4j import local_credentials

    local = local_credentials(uri)
    if local is not None:
        return local
    return user, password


__all__ = ["CypherResult", "GraphStore", "LoadReport", "SPEC_FORMS", "STORE_KINDS", "StoreKind", "StoreSpec",
           "describe_store", "connect_store", "neo4j_credentials", "parse_store_spec"]
