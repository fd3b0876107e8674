"""Environment configuration; defaults from the paper's hyper-parameter table (appendix)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from harness_g.errors import ConfigError


@dataclass(frozen=True)
class EnvConfig:
    """Menu environment knobs. Changing any of them changes menus (and the cache key)."""

    max_turns: int = field(default=6, metadata={"help": "T: decision turns per episode (invalid actions count)"})
    visible_cap: int = field(default=6, metadata={"help": "K_s: visible sentences per step"})
    lookup_cap: int = field(default=8, metadata={"help": "K_e: LOOKUP candidates per menu"})
    query_max_words: int = field(default=64, metadata={"help": "cap on the environment-built lookup query concat(q, C_t), in words"})
    answer_with: bool = field(default=True, metadata={"help": "offer ANSWER_WITH s (commit a visible sentence and stop)"})
    init_global_k: int = field(default=20, metadata={"help": "InitRetrieve: global vector top-k sentences"})
    init_paragraphs: int = field(default=4, metadata={"help": "InitRetrieve: paragraphs expanded by the paragraph-local channel"})
    init_entity_k: int = field(default=20, metadata={"help": "InitRetrieve: sentences kept from the question-entity channel"})
    rrf_k: int = field(default=60, metadata={"help": "reciprocal rank fusion constant: score = sum 1/(rrf_k + rank)"})
    lookup_pool_cap: int = field(default=400, metadata={"help": "how many of a LOOKUP's candidates, after ranking the whole pool by cosine to m_t, the text de-duplication reads (bounds work on hub entities; no channel is cut before ranking)"})
    question_ngram_max: int = field(default=6, metadata={"help": "longest question n-gram matched against entity names"})

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, int) and not isinstance(v, bool) and v < (0 if f.name == "rrf_k" else 1):
                raise ConfigError(f"env config {f.name} must be >= 1 (got {v})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnvConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown env config field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)
