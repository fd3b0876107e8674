"""Names of the graph schema both stores share: labels, relationship types, index names.

Labels and properties::

    (:Paragraph {id, title, text, source})
    (:Sentence  {id, paragraph_id, position, title, text, embedding})
    (:Entity    {id, name, surface, label, lookupable, reject_reason, mentions})
    (:GraphMeta {key: 'artifact', content_hash, embedding_model, embedding_dim, complete, loaded_at})
    (:Paragraph)-[:CONTAINS {position}]->(:Sentence)
    (:Sentence)-[:NEXT]->(:Sentence)                       consecutive sentences of one paragraph
    (:Sentence)-[:MENTIONS {surface, start, end, kind}]->(:Entity)
    (:Entity)-[:SYNONYM {kind, score}]->(:Entity)          stored once src->dst, read undirected
"""
from __future__ import annotations

LABELS: tuple[str, ...] = ("Entity", "GraphMeta", "Paragraph", "Sentence")
REL_TYPES: tuple[str, ...] = ("CONTAINS", "MENTIONS", "NEXT", "SYNONYM")

#: the vector index over Sentence.embedding (Neo4j's index name; FalkorDB's indexes are unnamed)
VECTOR_INDEX = "sentence_embedding"

#: (label, property) -> index name, for the id-like lookups every load and query uses
RANGE_INDEXES: dict[tuple[str, str], str] = {
    ("Paragraph", "id"): "paragraph_id",
    ("Sentence", "id"): "sentence_id",
    ("Entity", "id"): "entity_id",
    ("Entity", "name"): "entity_name",
    ("GraphMeta", "key"): "graphmeta_key",
}

#: index state reported for an expected index that does not exist
MISSING = "MISSING"

#: extra neighbours fetched by vector_top_k so ties at the k-th place are broken by id, not by index order
TIE_MARGIN = 16

#: how long load() waits for a fresh vector index to be queryable (seconds); HNSW over millions of
#: 384-d vectors takes minutes, and a load only counts as complete once its index answers
LOAD_INDEX_TIMEOUT_S = 3600.0
