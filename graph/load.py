"""Put a built artifact into a graph store, and remember which store a GRAPH_DIR uses."""
from __future__ import annotations

import json
from pathlib import Path

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores import open_store
from harness_g.graph.stores.base import GraphStore, LoadReport

STORE_FILE = "store.json"


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


def open_graph_store(graph_dir: str | Path, spec: str | None = None) -> GraphStore:
    """Open the store for a GRAPH_DIR: the explicit spec, else the remembered one, else embedded."""
    return open_store(spec or remembered_store(graph_dir), Path(graph_dir))


def load_graph(
    graph_dir: str | Path, spec: str | None = None, *, progress: bool = True, batch_size: int = 2000, index_timeout_s: float = 600.0
) -> tuple[GraphStore, LoadReport]:
    """Load the artifact (idempotent; no-op when already loaded) and wait for the vector index."""
    artifact = Artifact.open(graph_dir)
    store = open_graph_store(graph_dir, spec)
    try:
        report = store.load(artifact, batch_size=batch_size, progress=progress)
        store.wait_for_indexes(index_timeout_s)
    except BaseException:
        store.close()
        raise
    if spec is not None:
        remember_store(graph_dir, spec)
    return store, report
