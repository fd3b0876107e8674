"""Truncated person aliases are merged into the entity they name, in a graph built by the real pipeline
(the alias rules themselves: tests/unit/test_alias_merge.py)."""
from __future__ import annotations

import pyarrow.parquet as pq

from harness_g.graph.build import TITLE_LABEL
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.types import entity_id


def test_real_build_merges_truncated_alias_into_title(hotpot_graph_dir) -> None:
    """The demo's menu offered both 'S. P. L. Sørensen' and 'Peder Lauritz Sørensen' (the NER span of the article's
    first sentence): now that mention names the article's title entity, and no separate entity exists."""
    ents = pq.read_table(hotpot_graph_dir / "entities.parquet").to_pylist()
    ments = pq.read_table(hotpot_graph_dir / "mentions.parquet").to_pylist()
    syns = pq.read_table(hotpot_graph_dir / "synonyms.parquet").to_pylist()
    title_id = entity_id(TITLE_LABEL, canonicalize("S. P. L. Sørensen"))
    person_id = entity_id("PERSON", canonicalize("S. P. L. Sørensen"))
    assert any(e["id"] == title_id for e in ents)
    assert not any(e["name"] == "peder lauritz sørensen" for e in ents)
    merged = [m for m in ments if m["surface"] == "Peder Lauritz Sørensen"]
    # still a PERSON mention (answer typing reads labels), of the person the article is about, linked to its title
    assert merged and all(m["entity_id"] == person_id for m in merged)
    assert next(e for e in ents if e["id"] == person_id)["label"] == "PERSON"
    assert any({s["src"], s["dst"]} == {person_id, title_id} and s["kind"] == "title" for s in syns)
    # conservative: different people who share a surname keep their own entities
    names = {e["name"] for e in ents if e["label"] == "PERSON"}
    by_surname: dict[str, set[str]] = {}
    for n in names:
        if len(n.split()) >= 2:
            by_surname.setdefault(n.split()[-1], set()).add(n)
    assert any(len(v) > 1 for v in by_surname.values())
