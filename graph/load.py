"""Put a built artifact into a graph store, and remember which store a GRAPH_DIR uses."""
from __future__ import annotations

import json
from pathlib import Path

from harness_g.graph.artifact import Artifact
from harness_g.graph.locks import exclusive_lock
from harness_g.graph.stores import connect_store
from harness_g.graph.stores.base import GraphStore, LoadReport

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
    (Path(graph_dir) / STORE_FILE).write_text(json.dumps({"store": spec}) + "\n", encoding="utf-8")


def store_for_graph(graph_dir: str | Path, spec: str | None = None) -> GraphStore:
    """Open the store for a GRAPH_DIR: the explicit spec, else the remembered one, else embedded."""
    return connect_store(spec or remembered_store(graph_dir), Path(graph_dir))


def load_graph(
    graph_dir: str | Path, spec: str | None = None, *, progress: bool = True, batch_size: int = 2000, index_timeout_s: float = 600.0,
    remember: bool = True, force: bool = False,
) -> tuple[GraphStore, LoadReport]:
    """Load the artifact (idempotent; no-op when already loaded) and wait for the vector index.

    ``force``: clear the store's graph and load the artifact again even when it is already loaded (``build --force``).

    ``remember``: record an explicit ``spec`` in ``GRAPH_DIR/store.json`` as the graph's store (``build`` / ``load``);
    read commands pass False, so ``--store embedded:PORT`` on one call does not change where later calls go.

    A load that has work to do holds ``GRAPH_DIR/.lock`` (waiting up to ``LOAD_LOCK_WAIT_S`` for a build or
    another load that holds it) and first checks every artifact file against the manifest's sha256; a no-op load takes no lock.
    """
    artifact = Artifact.open(graph_dir)
    store = store_for_graph(graph_dir, spec)
    try:
        if not force and store.loaded_hash() == artifact.content_hash:  # completely loaded: load() is a no-op
            report = store.load(artifact, batch_size=batch_size, progress=progress)
        else:
            # another process loading this graph (a DDP rank, a second eval) finishes first; then ours is a no-op
            with exclusive_lock(graph_dir, "GRAPH_DIR", wait_s=LOAD_LOCK_WAIT_S, on_wait=_say_waiting(graph_dir)):
                artifact = Artifact.open(graph_dir, verify=True)  # re-read under the lock: a build may have published
                report = store.load(artifact, batch_size=batch_size, progress=progress, force=force)
        store.wait_for_indexes(index_timeout_s)
    except BaseException:
        store.close()
        raise
    if spec is not None and remember:
        remember_store(graph_dir, spec)
    return store, report
