"""Put a built artifact into a graph store, and remember which store a GRAPH_DIR uses.

One database holds one graph. A store that graphs share (Neo4j, a FalkorDB server) records which GRAPH_DIR it
holds in its GraphMeta (``graph_dir``, ``graph_host``, ``graph_name``); loading or reading another graph there is
refused with a one-line error naming the database, the graph it holds and how to give each graph its own
(:func:`refuse_other_graph`), never a silent reload over it. ``build --replace`` replaces it on purpose.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from typing import Any

from harness_g.errors import InputError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.locks import exclusive_lock
from harness_g.graph.stores import connect_store, parse_store_spec
from harness_g.graph.stores.local_neo4j import DEFAULT_BOLT_PORT, LOOPBACK_HOSTS
from harness_g.graph.stores.base import GraphStore, LoadReport, graph_identity

STORE_FILE = "store.json"
#: how long a load waits for another process holding GRAPH_DIR's lock (a load of the same graph, a build)
LOAD_LOCK_WAIT_S = 1800.0


def _say_waiting(graph_dir: str | Path):  # noqa: ANN202 - a small callback factory
    import sys

    return lambda holder: print(f"harness-g: waiting for another process to finish with {graph_dir} ({holder})",
                                file=sys.stderr, flush=True)


def remembered_store(graph_dir: str | Path) -> str | None:
    """The store spec the last ``build``/``load`` used for this GRAPH_DIR (None = embedded)."""
    path = Path(graph_dir) / STORE_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("store")
    except (OSError, json.JSONDecodeError):
        return None


def remember_store(graph_dir: str | Path, spec: str | None) -> None:
    """Record ``spec`` (None = ``embedded``) in ``GRAPH_DIR/store.json`` as the store later commands use."""
    (Path(graph_dir) / STORE_FILE).write_text(json.dumps({"store": spec or "embedded"}) + "\n", encoding="utf-8")


def store_for_graph(graph_dir: str | Path, spec: str | None = None) -> GraphStore:
    """Open the store for a GRAPH_DIR: the explicit spec, else the remembered one, else embedded. A remembered
    server that cannot be opened (a stopped Neo4j) is a StoreError that also names ``store.json`` and the ways out
    (:func:`remembered_store_hint`)."""
    if spec:
        return connect_store(spec, Path(graph_dir))
    remembered = remembered_store(graph_dir)
    try:
        return connect_store(remembered, Path(graph_dir))
    except StoreError as exc:
        if parse_store_spec(remembered).kind == "embedded":
            raise
        raise StoreError(f"{exc}; {remembered_store_hint(graph_dir, str(remembered))}") from exc


def remembered_store_hint(graph_dir: str | Path, spec: str) -> str:
    """Which store a GRAPH_DIR remembers and how to go on: start that server again (a local Neo4j: ``harness-g
    neo4j``, which starts empty, so the graph is loaded again) or use the embedded FalkorDB, for one command
    (``--store embedded``) or from now on (a build with ``--store embedded``, a cache hit, records it)."""
    store_file = Path(graph_dir) / STORE_FILE
    parts = urlsplit(spec)
    if parse_store_spec(spec).kind == "neo4j" and parts.hostname in LOOPBACK_HOSTS:
        port = parts.port or DEFAULT_BOLT_PORT
        flag = "" if port == DEFAULT_BOLT_PORT else f" --bolt-port {port}"
        start = (f"start it again with `harness-g neo4j{flag}` (its database starts empty: "
                 f"`harness-g build ... --out {graph_dir} --store {spec}` loads the graph again)")
    else:
        start = "start that server again"
    return (f"{graph_dir} remembers the store {spec} ({store_file}, written by its build); {start}, or use the "
            f"embedded FalkorDB: `--store embedded` on this command, or `harness-g build ... --out {graph_dir} "
            "--store embedded` to remember it")


def other_graph(store: GraphStore, artifact: Artifact) -> dict[str, Any] | None:
    """The GraphMeta of another graph ``store`` holds, or None: the store is empty, private to this GRAPH_DIR
    (:attr:`GraphStore.private`), holds this artifact's content (from this GRAPH_DIR or a copy of it), or holds
    this GRAPH_DIR's earlier build or unfinished load (the same ``graph_dir`` on the same host)."""
    if store.private:
        return None
    meta = store.meta()
    if not meta or meta.get("content_hash") == artifact.content_hash:
        return None
    ours = graph_identity(artifact)
    if meta.get("graph_dir") == ours["graph_dir"] and meta.get("graph_host") == ours["graph_host"]:
        return None
    return meta


def describe_graph(meta: dict[str, Any]) -> str:
    """A GraphMeta row as one phrase: the graph's GRAPH_DIR (or that it was not recorded), name, hash, load time."""
    state = "loaded" if meta.get("complete") is True else "load unfinished, started"
    details = f"content hash {str(meta.get('content_hash'))[:12]}, {state} {meta.get('loaded_at')}"
    if not meta.get("graph_dir"):
        return f"a graph loaded by an older harness-g that did not record its GRAPH_DIR ({details})"
    host = f" on {meta['graph_host']}" if meta.get("graph_host") else ""
    return f"{meta['graph_dir']}{host} ({meta.get('graph_name') or 'unnamed'}, {details})"


def refuse_other_graph(store: GraphStore, artifact: Artifact, doing: str = "load") -> None:
    """StoreError when ``store`` holds another graph (:func:`other_graph`); ``doing``: what was refused, "load"
    (the artifact over that graph) or "read" (that graph as this one)."""
    meta = other_graph(store, artifact)
    if meta is None:
        return
    raise StoreError(
        f"{store.where} holds another graph: {describe_graph(meta)}; refusing to "
        f"{'read ' + str(artifact.path) + ' from it' if doing == 'read' else 'load ' + str(artifact.path) + ' over it'}. "
        f"To keep both, {store.other_graph_hint()}; to replace it, `harness-g build ... --out {artifact.path} "
        "--store SPEC --replace`")


def open_store(graph_dir: str | Path, spec: str | None = None) -> GraphStore:
    """The store of a GRAPH_DIR for a read that does not load (``stats``, ``cypher``): refused when it holds
    another graph (a GRAPH_DIR without a readable manifest is not checked: there is nothing to compare)."""
    store = store_for_graph(graph_dir, spec)
    try:
        try:
            artifact = Artifact.open(graph_dir)
        except InputError:
            return store
        refuse_other_graph(store, artifact, "read")
    except BaseException:
        store.close()
        raise
    return store


def load_graph(
    graph_dir: str | Path, spec: str | None = None, *, progress: bool = True, batch_size: int = 2000, index_timeout_s: float = 600.0,
    remember: bool = True, force: bool = False, replace: bool = False, hub_sample: int | None = None,
) -> tuple[GraphStore, LoadReport]:
    """Load the artifact (idempotent; no-op when already loaded) and wait for the vector index.

    A store that holds another graph (:func:`other_graph`) is refused (StoreError naming it), unless ``replace``
    (``build --replace``): then that graph is cleared and this one loaded. Read commands never pass ``replace``.
    ``force``: clear the store's graph and load the artifact again even when it is already loaded (``build --force``).
    ``hub_sample``: the hub sample size (:meth:`GraphStore.load`; default ``HUB_SAMPLE_SIZE``).

    ``remember``: record the store used (``spec``, else the remembered one, else ``embedded``) in
    ``GRAPH_DIR/store.json`` as the graph's store (``build`` / ``load``); read commands pass False, so ``--store embedded:PORT`` on one call does not change where later calls go.

    A load that has work to do holds ``GRAPH_DIR/.lock`` (waiting up to ``LOAD_LOCK_WAIT_S`` for a build or
    another load that holds it) and first checks every artifact file against the manifest's sha256; a no-op load takes no lock.
    """
    artifact = Artifact.open(graph_dir)
    store = store_for_graph(graph_dir, spec)
    try:
        if not replace:
            refuse_other_graph(store, artifact, "load")
        if not force and store.holds(artifact, hub_sample):  # completely loaded (with hub samples): a no-op
            report = store.load(artifact, batch_size=batch_size, progress=progress, hub_sample=hub_sample)
        else:
            # another process loading this graph (a DDP rank, a second eval) finishes first; then ours is a no-op
            with exclusive_lock(graph_dir, "GRAPH_DIR", wait_s=LOAD_LOCK_WAIT_S, on_wait=_say_waiting(graph_dir)):
                artifact = Artifact.open(graph_dir, verify=True)  # re-read under the lock: a build may have published
                report = store.load(artifact, batch_size=batch_size, progress=progress, force=force,
                                    hub_sample=hub_sample)
        store.wait_for_indexes(index_timeout_s)
    except BaseException:
        store.close()
        raise
    if remember:  # an embedded build records it too: store.json always names the graph's store after a build
        remember_store(graph_dir, spec or remembered_store(graph_dir))
    return store, report
