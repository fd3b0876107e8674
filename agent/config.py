"""Environment configuration; defaults from the paper's hyper-parameter table (appendix)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from harness_g.errors import ConfigError


_MAY_BE_ZERO = ("rrf_k", "init_entity_reserve")


@dataclass(frozen=True)
class EnvConfig:
    """Menu environment knobs. Changing any of them changes menus (and the cache key)."""

    max_turns: int = field(default=6, metadata={"help": "T: decision turns per episode (invalid actions count)"})
    visible_cap: int = field(default=6, metadata={"help": "K_s: visible sentences per step"})
    lookup_cap: int = field(default=8, metadata={"help": "K_e: LOOKUP candidates per menu"})
    query_max_words: int = field(default=64, metadata={"help": "cap on the environment-built lookup query concat(q, C_t), in words"})
    answer_with: bool = field(default=True, metadata={"help": "offer ANSWER_WITH (commit visible sentences and stop)"})
    answer_with_max: int = field(default=2, metadata={"help": "k: the most visible sentences one ANSWER_WITH(s_1..s_k) commits "
                                                      "(harness-g.tex l.291, l.1242); the menu offers every subset of U_t of "
                                                      "size 1..k, so k = 2 adds C(K_s, 2) = 15 entries at K_s = 6 (k = 1: the "
                                                      "single-sentence variant)"})
    init_global_k: int = field(default=20, metadata={"help": "InitRetrieve: global vector top-k sentences"})
    init_paragraphs: int = field(default=4, metadata={"help": "InitRetrieve: paragraphs expanded by the paragraph-local channel"})
    init_entity_k: int = field(default=20, metadata={"help": "InitRetrieve: sentences kept from the question-entity channel"})
    init_entity_reserve: int = field(default=2, metadata={"help": "InitRetrieve: U_0 slots reserved for question entities that the fused channels miss (each gets its best sentence, e.g. the second film of a comparison question; 0: off)"})
    rrf_k: int = field(default=60, metadata={"help": "reciprocal rank fusion constant: score = sum 1/(rrf_k + rank)"})
    lookup_pool_cap: int = field(default=400, metadata={"help": "how many of a LOOKUP's candidates, after ranking the whole pool by cosine to m_t, the text de-duplication reads (bounds work on hub entities; no channel is cut before ranking)"})
    question_ngram_max: int = field(default=6, metadata={"help": "longest question n-gram matched against entity names"})

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, int) and not isinstance(v, bool) and v < (0 if f.name in _MAY_BE_ZERO else 1):
                raise ConfigError(f"env config {f.name} must be >= {0 if f.name in _MAY_BE_ZERO else 1} (got {v})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnvConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown env config field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)
