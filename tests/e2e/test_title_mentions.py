"""Title mentions on the real PopQA test slice (spaCy, MiniLM, the embedded FalkorDB): an occupation question's second
gold paragraph is a concept article ("Politician", "Film director") that NER never tags in the subject's article.
Without title mentions no LOOKUP reaches it (``no_entity_path``); with them (the default) the article is a LOOKUP
target of the sentences that name it and the menu reaches it."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.paths import TEST_DATA

from harness_g.agent.env.session import open_view
from harness_g.agent.eval.reachability import menu_reachability
from harness_g.graph.build import CorpusSpec, build_graph
from harness_g.graph.config import BuildConfig

POPQA = TEST_DATA / "popqa" / "popqa.subset.json"


@pytest.fixture(scope="module")
def popqa_graphs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("popqa_titles")
    out = {}
    for on in (False, True):
        out[on] = root / ("on" if on else "off")
        build_graph([CorpusSpec("popqa", POPQA)], out[on], BuildConfig(title_mentions=on), progress=False)
    return out


def _title_mentions(graph_dir: Path) -> dict[str, set[str]]:
    """{entity id: sentence ids} of the mentions the build recorded as kind 'title_mention'."""
    table = pq.read_table(graph_dir / "mentions.parquet", columns=["sentence_id", "entity_id", "kind"]).to_pylist()
    out: dict[str, set[str]] = {}
    for row in table:
        if row["kind"] == "title_mention":
            out.setdefault(row["entity_id"], set()).add(row["sentence_id"])
    return out


def test_a_concept_article_is_linked_to_the_sentences_that_name_it(popqa_graphs) -> None:
    assert _title_mentions(popqa_graphs[False]) == {}
    linked = _title_mentions(popqa_graphs[True])
    with open_view(popqa_graphs[True]) as view:
        finlay = next(q for q in view.artifact.questions() if q.question == "What is John Finlay's occupation?")
        subject = next(p for p in finlay.gold_paragraph_ids if view.sentences([f"{p}:0"])[f"{p}:0"].title != "Politician")
        lead = f"{subject}:0"  # "John Finlay (April 22, 1837 – November 13, 1910) was a Canadian politician."
        politician = [e for e in view.entities_of([lead])[lead] if e.name == "politician"]
        assert politician and politician[0].label == "TITLE" and politician[0].lookupable
        assert lead in linked[politician[0].id]


def test_occupation_questions_become_reachable(popqa_graphs) -> None:
    verdicts = {}
    for on, graph_dir in popqa_graphs.items():
        with open_view(graph_dir) as view:
            items = [q for q in view.artifact.questions() if "occupation" in q.question]
            verdicts[on] = {q.question: menu_reachability(view, q) for q in items}
    off_missed = {q for q, r in verdicts[False].items() if r.cause == "no_entity_path"}
    assert len(off_missed) >= 3  # without title mentions the concept articles are cut off
    # Poe's gold object is the article "Playwright", and Poe's paragraph never uses the word: nothing can link them
    assert verdicts[True]["What is Edgar Allan Poe's occupation?"].cause == "no_entity_path"
    for question in off_missed - {"What is Edgar Allan Poe's occupation?"}:
        assert verdicts[True][question].cause != "no_entity_path", question
    assert sum(r.status == "reachable" for r in verdicts[True].values()) >= sum(
        r.status == "reachable" for r in verdicts[False].values()) + 3
