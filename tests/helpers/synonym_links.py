"""Entity records and checks on synonym edges, for the entity-linking tests (rule links and embedding links)."""
from __future__ import annotations

from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.linking import EntityRecord, SynonymEdge
from harness_g.graph.types import entity_id


def ent(surface: str, label: str) -> EntityRecord:
    """The entity record of ``surface`` with NER label ``label`` (id and canonical name as the build makes them)."""
    c = canonicalize(surface)
    return EntityRecord(entity_id(label, c), c, label, surface)


def pairs(edges: list[SynonymEdge], kind: str | None = None) -> set[tuple[str, str]]:
    """The (src, dst) id pairs of ``edges``, only those of ``kind`` when given."""
    return {(e.src, e.dst) for e in edges if kind is None or e.kind == kind}


def pair(a: EntityRecord, b: EntityRecord) -> tuple[str, str]:
    """The id pair an edge between ``a`` and ``b`` has (smaller id first)."""
    return (a.id, b.id) if a.id < b.id else (b.id, a.id)


def check_invariants(edges: list[SynonymEdge]) -> None:
    """Edges are undirected (src < dst), unique, and sorted."""
    keys = [(e.src, e.dst) for e in edges]
    assert all(s < d for s, d in keys)
    assert len(keys) == len(set(keys))
    assert keys == sorted(keys)
