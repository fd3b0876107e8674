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
from urllib.parse import parse_qs, urlsplit

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

    kind: str  # "embedded" | "falkordb" | "neo4j"
    host: str | None = None
    port: int | None = None
    graph: str | None = None
    uri: str | None = None


def _malformed(spec: str, why: str) -> StoreError:
    return StoreError(f"malformed store spec {spec!r} ({why}); accepted: {', '.join(SPEC_FORMS)}")


def _port(spec: str, text: str | None) -> int:
    if text is None or not text.isdigit() or not 0 < int(text) < 65536:
        raise _malformed(spec, f"port {text!r} is not a number in 1-65535")
    return int(text)


def parse_store_spec(spec: str | None) -> StoreSpec:
    """Parse a store spec; raises StoreError listing the accepted forms when it is malformed."""
    if spec is None or spec.strip() in ("", "embedded"):
        return StoreSpec("embedded")
    spec = spec.strip()
    if spec.startswith("embedded:"):
        return StoreSpec("embedded", port=_port(spec, spec.split(":", 1)[1]))
    if "://" not in spec:
        raise _malformed(spec, "unknown form")
    try:
        parts = urlsplit(spec)
        port_text = str(parts.port) if parts.port is not None else None
    except ValueError as exc:
        raise _malformed(spec, str(exc)) from exc
    scheme = parts.scheme.lower()
    if scheme == "falkordb":
        if not parts.hostname:
            raise _malformed(spec, "no host")
        query = parse_qs(parts.query)
        unknown = sorted(set(query) - {"graph"})
        if unknown:
            raise _malformed(spec, f"unknown option {unknown[0]!r}")
        graph = query.get("graph", [None])[-1]
        return StoreSpec("falkordb", host=parts.hostname, port=_port(spec, port_text), graph=graph)
    if scheme in NEO4J_SCHEMES:
        if not parts.hostname:
            raise _malformed(spec, "no host")
        return StoreSpec("neo4j", uri=spec)
    raise _malformed(spec, f"unknown scheme {scheme!r}")


def describe_store(spec: str | None) -> str:
    """One phrase naming where a spec points, for messages (never includes credentials)."""
    parsed = parse_store_spec(spec)
    if parsed.kind == "embedded":
        where = f"127.0.0.1:{parsed.port}" if parsed.port else "a unix socket"
        return f"embedded FalkorDB ({where}, data in GRAPH_DIR/store)"
    if parsed.kind == "falkordb":
        return f"FalkorDB at {parsed.host}:{parsed.port} (graph {parsed.graph or 'harness_g'})"
    database = os.environ.get("NEO4J_DATABASE")
    uri = urlsplit(parsed.uri or "")
    return f"Neo4j at {uri.scheme}://{uri.hostname}{f':{uri.port}' if uri.port else ''}" + (f" (database {database})" if database else "")


def connect_store(spec: str | None, graph_dir: Path | None) -> GraphStore:
    """Connect to the store ``spec`` names (see module doc); the embedded one keeps its data in ``graph_dir/store``.

    Names, one job each: ``connect_store`` (a spec -> a client), ``graph.load.store_for_graph`` (a GRAPH_DIR -> its
    store: explicit, remembered or embedded), ``graph.load.load_graph`` (load the artifact into that store, idempotent),
    ``agent.session.open_view`` (a loaded graph -> a GraphView for the environment)."""
    parsed = parse_store_spec(spec)
    if parsed.kind == "embedded":
        if graph_dir is None:
            raise StoreError("the embedded store needs a GRAPH_DIR (its data lives in GRAPH_DIR/store)")
        from harness_g.graph.stores.falkordb_store import FalkorDBStore

        return FalkorDBStore.from_embedded(Path(graph_dir) / "store", port=parsed.port)
    if parsed.kind == "falkordb":
        from harness_g.graph.stores.falkordb_store import DEFAULT_GRAPH, FalkorDBStore

        assert parsed.host is not None and parsed.port is not None
        return FalkorDBStore.connect(parsed.host, parsed.port, graph=parsed.graph or DEFAULT_GRAPH,
                                     password=os.environ.get("FALKORDB_PASSWORD") or None)
    from harness_g.graph.stores.neo4j_store import Neo4jStore

    user, password = neo4j_credentials(parsed.uri or "")
    return Neo4jStore(parsed.uri or "", user=user, password=password, database=os.environ.get("NEO4J_DATABASE") or None)


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


__all__ = ["CypherResult", "GraphStore", "LoadReport", "SPEC_FORMS", "StoreSpec", "describe_store", "connect_store",
           "neo4j_credentials", "parse_store_spec"]
