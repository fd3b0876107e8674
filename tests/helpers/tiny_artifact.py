"""A hand-built tiny GRAPH_DIR (3 paragraphs, 10 sentences, 8 entities) for store tests.

Written with the artifact writer functions only, so store tests do not depend on the NLP
pipeline. Every expected value in the store tests is derived by hand from the tables below.

Graph (sentence ids are ``<paragraph id>:<position>``; entities in brackets)::

    p_curie  "Marie Curie"  0 Marie Curie was a physicist.                 [e_curie]
                            1 She was born in Warsaw.                      []
                            2 She moved to Paris ("la Ville Lumière").     [e_paris]
                            3 She won the Nobel Prize in 1903.             [e_nobel, e_1903 (DATE, not lookupable)]
    p_paris  "Paris"        0 Paris is the capital of France.              [e_paris, e_france]
                            1 It hosts the Sorbonne.                       [e_sorbonne]
                            2 Curie taught at the Sorbonne.                [e_mcurie, e_sorbonne]
    p_nobel  "Nobel Prize"  0 The Nobel Prize is awarded yearly.           [e_nobel x2: 'title' + 'ner' mention]
                            1 The University of Paris hosted the ceremony. [e_univ]
                            2 M. Curie won it twice at the Sorbonne.       [e_mcurie, e_sorbonne]

    SYNONYM: e_mcurie -> e_curie (abbreviation, 0.9), e_univ -> e_sorbonne (embedding, 0.83)

Embeddings are dim 8, seeded, L2-normalised; p_paris:1 and p_nobel:1 share one vector on
purpose (a tie that vector_top_k must break by id).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from harness_g.graph.artifact import (
    FORMAT_VERSION,
    write_embeddings,
    write_manifest,
    write_questions,
    write_table,
)
from harness_g.graph.types import QAItem

DIM = 8
CONTENT_HASH = "tiny-0001"

PARAGRAPHS = {
    "p_curie": ("Marie Curie", "docs\\curie.txt", [
        "Marie Curie was a physicist.",
        "She was born in Warsaw.",
        'She moved to Paris ("la Ville Lumière").',
        "She won the Nobel Prize in 1903.",
    ]),
    "p_paris": ("Paris", "docs/paris.txt", [
        "Paris is the capital of France.",
        "It hosts the Sorbonne.",
        "Curie taught at the Sorbonne.",
    ]),
    "p_nobel": ("Nobel Prize", "docs/nobel.txt", [
        "The Nobel Prize is awarded yearly.",
        "The University of Paris hosted the ceremony.",
        "M. Curie won it twice at the Sorbonne.",
    ]),
}

# id, name (canonical), surface, label, lookupable, reject_reason, mentions
ENTITIES = [
    ("e_curie", "marie curie", "Marie Curie", "PERSON", True, None, 1),
    ("e_mcurie", "curie", "Curie", "PERSON", True, None, 2),
    ("e_paris", "paris", "Paris", "GPE", True, None, 2),
    ("e_france", "france", "France", "GPE", True, None, 1),
    ("e_nobel", "nobel prize", "Nobel Prize", "WORK_OF_ART", True, None, 3),
    ("e_1903", "1903", "1903", "DATE", False, "label:DATE", 1),
    ("e_sorbonne", "sorbonne", "Sorbonne", "ORG", True, None, 3),
    ("e_univ", "university of paris", "University of Paris", "ORG", True, None, 1),
]

# sentence_id, entity_id, surface, start, end, kind
MENTIONS = [
    ("p_curie:0", "e_curie", "Marie Curie", 0, 11, "ner"),
    ("p_curie:2", "e_paris", "Paris", 13, 18, "ner"),
    ("p_curie:3", "e_nobel", "Nobel Prize", 12, 23, "ner"),
    ("p_curie:3", "e_1903", "1903", 27, 31, "ner"),
    ("p_paris:0", "e_paris", "Paris", 0, 5, "ner"),
    ("p_paris:0", "e_france", "France", 24, 30, "ner"),
    ("p_paris:1", "e_sorbonne", "Sorbonne", 13, 21, "ner"),
    ("p_paris:2", "e_mcurie", "Curie", 0, 5, "ner"),
    ("p_paris:2", "e_sorbonne", "Sorbonne", 20, 28, "ner"),
    ("p_nobel:0", "e_nobel", "Nobel Prize", 0, 0, "title"),
    ("p_nobel:0", "e_nobel", "Nobel Prize", 4, 15, "ner"),
    ("p_nobel:1", "e_univ", "University of Paris", 4, 23, "ner"),
    ("p_nobel:2", "e_mcurie", "M. Curie", 0, 8, "ner"),
    ("p_nobel:2", "e_sorbonne", "Sorbonne", 29, 37, "ner"),
]

SYNONYMS = [
    ("e_mcurie", "e_curie", "abbreviation", 0.9),
    ("e_univ", "e_sorbonne", "embedding", 0.83),
]


def sentence_rows(paragraphs: tuple[str, ...] | None = None) -> list[tuple[str, str, int, str, str]]:
    """(id, paragraph_id, position, title, text) in file order (= embedding row order)."""
    rows = []
    for pid, (title, _source, sentences) in PARAGRAPHS.items():
        if paragraphs is None or pid in paragraphs:
            rows.extend((f"{pid}:{i}", pid, i, title, text) for i, text in enumerate(sentences))
    return rows


def embeddings(paragraphs: tuple[str, ...] | None = None) -> np.ndarray:
    """float32 [n, 8], L2-normalised, seeded; rows of p_paris:1 and p_nobel:1 are identical."""
    ids = [r[0] for r in sentence_rows()]
    matrix = np.random.default_rng(7).normal(size=(len(ids), DIM)).astype(np.float32)
    matrix[ids.index("p_nobel:1")] = matrix[ids.index("p_paris:1")]
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    keep = [i for i, sid in enumerate(ids) if paragraphs is None or sid.split(":")[0] in paragraphs]
    return matrix[keep]


def _columns(rows: list[tuple], names: list[str]) -> dict[str, list]:
    return {name: [r[i] for r in rows] for i, name in enumerate(names)}


def build_tiny_artifact(graph_dir: Path, content_hash: str = CONTENT_HASH, paragraphs: tuple[str, ...] | None = None) -> Path:
    """Write the tiny artifact into ``graph_dir`` (created) and return it.

    ``paragraphs`` keeps only those paragraphs (and the sentences, mentions, entities and synonyms
    that remain connected) -- a smaller variant for tests that swap one graph for another.
    """
    graph_dir.mkdir(parents=True, exist_ok=True)
    pars = {pid: p for pid, p in PARAGRAPHS.items() if paragraphs is None or pid in paragraphs}
    sentences = sentence_rows(paragraphs)
    sids = {r[0] for r in sentences}
    mentions = [m for m in MENTIONS if m[0] in sids]
    eids = {m[1] for m in mentions}
    entities = [e for e in ENTITIES if e[0] in eids]
    synonyms = [s for s in SYNONYMS if s[0] in eids and s[1] in eids]
    write_table(graph_dir, "paragraphs", {
        "id": list(pars),
        "title": [p[0] for p in pars.values()],
        "text": [" ".join(p[2]) for p in pars.values()],
        "source": [p[1] for p in pars.values()],
    })
    write_table(graph_dir, "sentences", _columns(sentences, ["id", "paragraph_id", "position", "title", "text"]))
    write_table(graph_dir, "entities", _columns(entities, ["id", "name", "surface", "label", "lookupable", "reject_reason", "mentions"]))
    write_table(graph_dir, "mentions", _columns(mentions, ["sentence_id", "entity_id", "surface", "start", "end", "kind"]))
    write_table(graph_dir, "synonyms", _columns(synonyms, ["src", "dst", "kind", "score"]))
    write_embeddings(graph_dir, embeddings(paragraphs))
    write_questions(graph_dir, [
        QAItem(id="q1", question="Where did Marie Curie teach?", answers=("Sorbonne",), dataset="tiny",
               gold_sentence_ids=("p_paris:2",), gold_paragraph_ids=("p_paris",)),
    ])
    write_manifest(graph_dir, {
        "format_version": FORMAT_VERSION,
        "content_hash": content_hash,
        "models": {"embedding": "test/random-dim8", "embedding_dim": DIM},
        "counts": {"paragraphs": len(pars), "sentences": len(sentences), "entities": len(entities),
                   "mentions": len(mentions), "synonyms": len(synonyms)},
    })
    return graph_dir
