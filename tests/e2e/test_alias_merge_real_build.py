"""Truncated person aliases are merged into the entity they name (``BuildConfig.person_alias_merge``, an extension of
the extended preset), in a graph built by the real pipeline (the alias rules themselves:
tests/unit/test_alias_merge.py); the paper's build (the session graph) keeps them apart."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness_g.graph.build import TITLE_LABEL, CorpusSpec, build_graph
from harness_g.graph.config import BuildConfig
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.types import entity_id

from graph_fixtures import HOTPOT_FILE


@pytest.fixture(scope="module")
def merged_graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session graph's input built with the person-alias merge on (the paper's rules otherwise; artifact only)."""
    out = tmp_path_factory.mktemp("alias-merge") / "graph"
    build_graph([CorpusSpec("hotpotqa", HOTPOT_FILE)], out, BuildConfig(person_alias_merge=True), progress=False)
    return out


def test_the_paper_build_keeps_the_alias_its_own_entity(hotpot_graph_dir) -> None:
    ents = pq.read_table(hotpot_graph_dir / "entities.parquet").to_pylist()
    syns = pq.read_table(hotpot_graph_dir / "synonyms.parquet").to_pylist()
    assert any(e["name"] == "peder lauritz sørensen" for e in ents)
    assert not any(s["kind"] == "alias" for s in syns)


def test_real_build_merges_truncated_alias_into_title(merged_graph_dir) -> None:
    """The demo's menu offered both 'S. P. L. Sørensen' and 'Peder Lauritz Sørensen' (the NER span of the article's
    first sentence): with the merge that mention names the article's title entity, and no separate entity exists."""
    hotpot_graph_dir = merged_graph_dir
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
