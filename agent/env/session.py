"""Open a GRAPH_DIR for the agent side: artifact + store + cached GraphView, closed together."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness_g.agent.env.graph_view import GraphView
from harness_g.graph.artifact import Artifact
from harness_g.graph.embed import get_embedder
from harness_g.graph.load import load_graph


@contextmanager
def open_view(graph_dir: str | Path, store: str | None = None, *, embedding_model: str | None = None,
              embedding_backend: str | None = None, progress: bool = False) -> Iterator[GraphView]:
    """Yield a GraphView over the loaded graph; loads the artifact first if the store lacks it.

    ``embedding_backend``: encode queries with this backend (torch, onnx, onnx-int8) instead of the one the graph
    was built with (torch and onnx give the same vectors; onnx-int8 is faster and approximate)."""
    artifact = Artifact.open(graph_dir)
    # compare names before loading: a wrong model may not even be loadable (no hub), and loading costs seconds
    if embedding_model and embedding_model != artifact.embedding_model:
        from harness_g.errors import ConfigError

        raise ConfigError(
            f"graph {artifact.path} was built with embedding model {artifact.embedding_model!r}, not {embedding_model!r}; "
            "use the same model or rebuild the graph"
        )
    embedder = None
    if embedding_model or embedding_backend:
        embedder = get_embedder(embedding_model or artifact.embedding_model,
                                backend=embedding_backend or artifact.embedding_backend)
    graph_store, _ = load_graph(graph_dir, store, progress=progress, remember=False)  # a read: store.json is left as is
    try:
        yield GraphView(graph_store, artifact, embedder=embedder)
    finally:
        graph_store.close()
