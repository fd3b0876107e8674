"""``harness-g build --append`` (graph/append.py): build A, append B, compare with a full build of A then B.

Real builds (spaCy NER, the MiniLM encoder) and real stores (FalkorDB and Neo4j through the conftest fixtures):

- the appended artifact equals the union's: every table after a canonical sort, the questions, sentence and
  entity-name vectors within ``EMBEDDING_ATOL``, SYNONYM scores within ``SCORE_ATOL`` (tests/helpers/append_checks.py),
  on the HotpotQA test questions (paper preset) and on ``tests/data/append`` (extended preset, ``link_top_k=1``),
  whose second corpus changes old entities, old sentences' mentions and old links through every global rule;
- a store holding A that receives only the delta holds what a load of the union gives: every node and relationship
  with its properties, the vector index's answers, the menu's queries; an interrupted delta leaves the store
  marked incomplete and the next load reloads the artifact whole;
- question sets that share context paragraphs (two 2Wiki records, ``tests/data/append/2wiki-shared.json``): the
  paragraphs the graph holds are reused (counted, not added again), the new question's gold ids point at them, and
  the result still equals the union build, in the artifact and in both stores; a question set over documents the
  graph holds adds only its questions;
- refusals (one line, nothing changed): another build config, a paragraph id in the graph with another sentence
  split, a question id in the graph with other content, inputs with nothing new, a directory that is not a graph; a
  crash before the publish leaves the old graph (SIGKILL).
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.append_checks import EMBEDDING_ATOL, embedding_difference, split_records, table_differences
from helpers.cli_checks import assert_one_line_error, run
from helpers.paths import TEST_DATA
from helpers.store_queries import run_test_query

from harness_g.graph import artifact as art
from harness_g.graph.append import PENDING_SUFFIX, StoreDelta, append_graph, apply_delta
from harness_g.graph.artifact import Artifact
from harness_g.graph.build import CorpusSpec, build_graph
from harness_g.graph.config import BuildConfig
from harness_g.graph.stores.loader import artifact_samples, table_counts

APPEND_DATA = TEST_DATA / "append"
A_FILE, B_FILE = APPEND_DATA / "a.jsonl", APPEND_DATA / "b.jsonl"
HOTPOT_FILE = TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"
#: two 2Wiki records whose contexts share three paragraphs, one of them gold evidence of the second question
SHARED_FILE = APPEND_DATA / "2wiki-shared.json"
#: the build config of the append corpora: extended rules (title mentions, alias merge), one embedding neighbour
#: per entity, so a new name can push an old one out of a list
SETS = {"link_top_k": 1}


def _config() -> BuildConfig:
    return BuildConfig.load(None, SETS, preset="extended")


class Built:
    """The three graphs of the append corpora: ``a`` (A only, never appended), ``g`` (A, then B appended),
    ``u`` (a full build of A then B); ``delta``: what the append sends a store; ``old``: A's tables before it."""

    def __init__(self, root: Path):
        config = _config()
        self.a, self.g, self.u = root / "a", root / "g", root / "u"
        build_graph([CorpusSpec("jsonl", A_FILE)], self.a, config, progress=False)
        shutil.copytree(self.a, self.g)
        self.old = {t: Artifact.open(self.a).table(t).to_pylist() for t in ("entities", "mentions", "synonyms", "paragraphs")}
        result = append_graph([CorpusSpec("jsonl", B_FILE)], self.g, config, progress=False)
        assert result.delta is not None
        self.delta: StoreDelta = result.delta
        self.result = result
        build_graph([CorpusSpec("jsonl", A_FILE), CorpusSpec("jsonl", B_FILE)], self.u, config, progress=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return Built(tmp_path_factory.mktemp("append"))


# -- the artifact ----------------------------------------------------------------------------------------------------
def test_append_equals_the_union_build_through_every_global_rule(built: Built) -> None:
    appended, full = Artifact.open(built.g, verify=True), Artifact.open(built.u, verify=True)
    assert table_differences(appended, full) == []
    assert embedding_difference(appended, full) <= EMBEDDING_ATOL
    assert appended.counts == full.counts
    # the delta reached old entities, old sentences and old links (what a delta-only computation would miss)
    old_entities = {r["id"]: r for r in built.old["entities"]}
    old_sentences = {p["id"] for p in built.old["paragraphs"]}
    changed = {old_entities[r["id"]]["surface"]: r for r in built.delta.entities_upsert if r["id"] in old_entities}
    assert changed["Barack"]["lookupable"] is False and changed["Barack"]["reject_reason"] == "truncated_alias"
    added_on_old = {m["surface"] for m in built.delta.mentions_add
                    if m["sentence_id"].split(":")[0] in old_sentences and m["kind"] == "title_mention"}
    assert "Politician" in added_on_old
    assert [(m["surface"], m["kind"]) for m in built.delta.mentions_delete] == [("Film director", "title_mention")]
    assert [s["kind"] for s in built.delta.synonyms_delete] == ["embedding"]
    # only the new paragraphs were split, NER'd and embedded
    assert built.result.counts["sentences"] - Artifact.open(built.a).counts["sentences"] == len(built.delta.sentences)
    assert {r["id"] for r in built.delta.paragraphs}.isdisjoint(old_sentences)


def test_append_of_hotpotqa_questions_equals_the_union_build(tmp_path: Path) -> None:
    """The paper preset on real questions: three HotpotQA questions (their contexts) built, three appended."""
    a, b = split_records(HOTPOT_FILE, [0, 2, 4], tmp_path / "in")
    config = BuildConfig()
    build_graph([CorpusSpec("hotpotqa", a)], tmp_path / "g", config, progress=False)
    before = Artifact.open(tmp_path / "g").content_hash
    result = append_graph([CorpusSpec("hotpotqa", b)], tmp_path / "g", config, progress=False)
    build_graph([CorpusSpec("hotpotqa", a), CorpusSpec("hotpotqa", b)], tmp_path / "u", config, progress=False)
    appended, full = Artifact.open(tmp_path / "g", verify=True), Artifact.open(tmp_path / "u")
    assert table_differences(appended, full) == []
    assert embedding_difference(appended, full) <= EMBEDDING_ATOL
    assert [q.id for q in appended.questions()] == [q.id for q in full.questions()] and len(full.questions()) == 6
    assert appended.content_hash not in (before, full.content_hash)  # chained (graph/append.py docstring)
    assert appended.manifest["appends"][0]["base_content_hash"] == before
    assert result.affected["entities_relinked"] < result.counts["lookupable_entities"]  # not every list recomputed


# -- question sets that share paragraphs ------------------------------------------------------------------------------
class Shared:
    """2Wiki record 120 built (``a``), record 53 appended to a copy (``g``), and a full build of both (``u``), paper
    preset; their contexts share three paragraphs (``tests/data/append/README.md``)."""

    def __init__(self, root: Path):
        first, second = split_records(SHARED_FILE, [0], root / "in")
        self.files = (first, second)
        self.a, self.g, self.u = root / "a", root / "g", root / "u"
        build_graph([CorpusSpec("2wiki", first)], self.a, BuildConfig(), progress=False)
        shutil.copytree(self.a, self.g)
        self.result = append_graph([CorpusSpec("2wiki", second)], self.g, BuildConfig(), progress=False)
        assert self.result.delta is not None
        self.delta: StoreDelta = self.result.delta
        build_graph([CorpusSpec("2wiki", first), CorpusSpec("2wiki", second)], self.u, BuildConfig(), progress=False)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    return Shared(tmp_path_factory.mktemp("shared"))


def _ids(artifact: Artifact, table: str) -> set[str]:
    return set(artifact.table(table, columns=["id"]).column("id").to_pylist())


def test_append_reuses_paragraphs_the_graph_holds_and_equals_the_union_build(shared: Shared) -> None:
    base, appended, full = Artifact.open(shared.a), Artifact.open(shared.g, verify=True), Artifact.open(shared.u)
    assert table_differences(appended, full) == []
    assert embedding_difference(appended, full) <= EMBEDDING_ATOL
    assert appended.counts == full.counts
    # three paragraphs of the second question's context were in the graph: reused, not sent again
    assert shared.result.reused == {"paragraphs": 3, "questions": 0} and shared.result.added_questions == 1
    old_paragraphs = _ids(base, "paragraphs")
    assert {r["id"] for r in shared.delta.paragraphs}.isdisjoint(old_paragraphs)
    assert len(shared.delta.paragraphs) == full.counts["paragraphs"] - base.counts["paragraphs"]
    assert len(shared.delta.sentences) == full.counts["sentences"] - base.counts["sentences"]
    assert appended.manifest["appends"][0]["reused_paragraphs"] == 3
    # the new question's gold evidence is in the graph, part of it on a reused paragraph ("Ben Cura")
    added = appended.questions()[-1]
    assert added.id == json.loads(shared.files[1].read_text())[0]["_id"]
    assert set(added.gold_paragraph_ids) <= _ids(appended, "paragraphs")
    assert added.gold_sentence_ids and set(added.gold_sentence_ids) <= _ids(appended, "sentences")
    reused_gold = set(added.gold_paragraph_ids) & old_paragraphs
    titles = dict(zip(*(base.table("paragraphs", columns=["id", "title"]).column(c).to_pylist() for c in ("id", "title"))))
    assert [titles[p] for p in reused_gold] == ["Ben Cura"]


def test_store_delta_with_reused_paragraphs_holds_the_union(shared: Shared, scratch_store: Any) -> None:
    store = scratch_store
    appended = _delta_applied(store, shared.a, shared.g, shared.delta)
    # every node, relationship and property (SYNONYM edges included), the vector index on every 10th sentence: the
    # per-entity menu queries are test_store_receives_only_the_delta_and_holds_the_union's (they cost minutes here)
    after_delta = _dump(store, appended, every=10, per_entity=False)
    full = Artifact.open(shared.u)
    store.load(full, progress=False)
    assert after_delta == _dump(store, full, every=10, per_entity=False)
    assert after_delta["counts"]["Paragraph"] == full.counts["paragraphs"]


def _record_over(graph: Artifact, source: Path, qid: str, **changes: Any) -> list[dict[str, Any]]:
    """``source``'s first 2Wiki record with id ``qid`` and ``changes``: a question over its context."""
    record = {**json.loads(source.read_text())[0], "_id": qid, **changes}
    assert qid not in [q.id for q in graph.questions()]
    return [record]


def test_questions_over_held_documents_and_conflicts(shared: Shared, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    shutil.copytree(shared.g, out)
    graph = Artifact.open(shared.g)  # the copy's source: stays as it is
    again = tmp_path / "again.json"
    again.write_text(json.dumps(_record_over(graph, shared.files[0], "asked-again", question="Who directed it?")))
    # a question over documents the graph holds: only the question is added, every table stays as it was
    rc, stdout, err = run(capsys, "build", "--append", "--format", "2wiki", "--input", again, "--out", out,
                          "--no-load", "-q")
    assert rc == 0, err
    held = Artifact.open(shared.a).counts["paragraphs"]  # the record's context
    assert f"added 0 paragraphs, 0 sentences, 1 questions; reused {held} paragraphs and 0 questions" in stdout, stdout
    now = Artifact.open(out, verify=True)
    assert table_differences(now, graph) == ["questions differ"]
    assert [q.id for q in now.questions()] == [*(q.id for q in graph.questions()), "asked-again"]
    before = _state(out)
    # the same question again: nothing new
    rc, _, err = run(capsys, "build", "--append", "--format", "2wiki", "--input", again, "--out", out, "--no-load", "-q")
    assert_one_line_error(rc, err, "cannot append: nothing new", f"{held} document(s) and 1 question(s)")
    # the same question id with another answer
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps([{**json.loads(again.read_text())[0], "answer": "someone else"}]))
    rc, _, err = run(capsys, "build", "--append", "--format", "2wiki", "--input", changed, "--out", out, "--no-load", "-q")
    assert_one_line_error(rc, err, "1 question id(s) already in the graph with other content", "'asked-again'",
                          "answers differs")
    # a paragraph the graph holds (same title and text: the same id) given as one sentence instead of several
    per_paragraph = Counter(now.table("sentences", columns=["paragraph_id"]).column("paragraph_id").to_pylist())
    pid, title, text = next((i, ti, te) for i, ti, te in zip(*(now.table("paragraphs").column(c).to_pylist()
                                                                for c in ("id", "title", "text"))) if per_paragraph[i] > 1)
    resplit = tmp_path / "resplit.json"
    resplit.write_text(json.dumps(_record_over(now, shared.files[0], "resplit", context=[[title, [text]]],
                                               supporting_facts=[[title, 0]])))
    rc, _, err = run(capsys, "build", "--append", "--format", "2wiki", "--input", resplit, "--out", out, "--no-load", "-q")
    assert_one_line_error(rc, err, f"document {pid} titled {title!r} is in the graph split into", "splits it into 1")
    assert _state(out) == before


# -- the store -------------------------------------------------------------------------------------------------------
DUMP = {
    "paragraphs": "MATCH (p:Paragraph) RETURN p.id, p.title, p.text, p.source",
    "sentences": "MATCH (s:Sentence) RETURN s.id, s.paragraph_id, s.position, s.title, s.text",
    "entities": "MATCH (e:Entity) RETURN e.id, e.name, e.surface, e.label, e.lookupable, e.reject_reason, e.mentions",
    "contains": "MATCH (p:Paragraph)-[c:CONTAINS]->(s:Sentence) RETURN p.id, s.id, c.position",
    "next": "MATCH (a:Sentence)-[:NEXT]->(b:Sentence) RETURN a.id, b.id",
    "mentions": "MATCH (s:Sentence)-[m:MENTIONS]->(e:Entity) RETURN s.id, e.id, m.surface, m.start, m.`end`, m.kind",
    "synonyms": "MATCH (a:Entity)-[y:SYNONYM]->(b:Entity) RETURN a.id, b.id, y.kind, round(y.score * 10000)",
    "hub_samples": "MATCH (e:Entity) WHERE e.pool_sample IS NOT NULL RETURN e.id, e.pool_sample",
}


def _dump(store: Any, artifact: Artifact, *, every: int = 3, per_entity: bool = True) -> dict[str, Any]:
    """Every node and relationship with its properties, the store's counts, and the menu's queries: each entity's
    sentences, each entity's synonyms (``per_entity``: one query per entity), and the vector index's top 5 for every
    ``every``-th sentence."""
    out: dict[str, Any] = {name: sorted(map(repr, store.run_cypher(q).rows)) for name, q in DUMP.items()}
    stats = store.stats()
    out["counts"] = {**stats["nodes"], **stats["relationships"], "lookupable": stats["lookupable_entities"]}
    ids = sorted(artifact.table("entities", columns=["id"]).column("id").to_pylist())
    out["sentences_mentioning"] = run_test_query(store, "sentences_mentioning", {"entity_ids": ids})
    if per_entity:
        out["synonyms_of"] = [(i, [(r["id"], r["kind"]) for r in run_test_query(store, "synonyms_of", {"entity_id": i})])
                              for i in ids]
    sids = artifact.table("sentences", columns=["id"]).column("id").to_pylist()
    vecs = artifact.embeddings(mmap=False)
    out["vector_top_k"] = [[sid for sid, _ in store.vector_top_k(vecs[k], 5)] for k in range(0, len(sids), every)]
    return out


def _delta_applied(store: Any, base_dir: Path, appended_dir: Path, delta: StoreDelta) -> Artifact:
    """``store`` loaded with the graph of ``base_dir``, then sent only ``delta``; returns the appended artifact, whose
    content hash the store now reports."""
    store.load(Artifact.open(base_dir), progress=False)
    appended = Artifact.open(appended_dir, verify=True)
    apply_delta(store, appended, delta)
    assert store.loaded_hash() == appended.content_hash
    return appended


def test_store_receives_only_the_delta_and_holds_the_union(built: Built, scratch_store: Any) -> None:
    store = scratch_store
    appended = _delta_applied(store, built.a, built.g, built.delta)
    after_delta = _dump(store, appended)
    full = Artifact.open(built.u)
    store.load(full, progress=False)  # another content hash: cleared and loaded whole
    assert after_delta == _dump(store, full)
    expected = table_counts(full)
    assert {k: after_delta["counts"][k] for k in expected} == expected
    # the delta is a delta: new sentences only, a handful of changed entities and links
    assert len(built.delta.sentences) == full.counts["sentences"] - Artifact.open(built.a).counts["sentences"]
    assert len(built.delta.entities_upsert) < full.counts["entities"]


def test_the_delta_brings_the_hub_samples_to_the_unions(built: Built, scratch_store: Any) -> None:
    """Loaded with tiny hub samples (an entity mentioned in more sentences than the size is a hub; the smallest size
    whose samples the append changes), A's store receives the delta: its samples are those of the union, as a full
    load of the union with the same size writes."""
    store = scratch_store
    base, appended = Artifact.open(built.a), Artifact.open(built.g, verify=True)
    size = next(n for n in (1, 2, 3) if artifact_samples(base, n) != artifact_samples(appended, n))
    store.load(base, progress=False, hub_sample=size)
    before = {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}
    assert before == artifact_samples(base, size) and before
    seconds = apply_delta(store, appended, built.delta)
    assert "pool_samples" in seconds and store.meta()["hub_sample"] == size
    after = {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}
    assert after == artifact_samples(appended, size) and after != before
    after_delta = _dump(store, appended, every=10, per_entity=False)
    store.load(Artifact.open(built.u), progress=False, hub_sample=size)
    assert after_delta == _dump(store, Artifact.open(built.u), every=10, per_entity=False)


def test_an_interrupted_store_delta_is_reloaded_whole(built: Built, scratch_store: Any) -> None:
    store = scratch_store
    store.load(Artifact.open(built.a), progress=False)
    appended = Artifact.open(built.g, verify=True)
    real_write = store.write_batch
    sent: list[str] = []

    def dies_at_mentions(name: str, rows: list) -> None:  # a crash part-way through the delta
        sent.append(name)
        if name == "load_mentions":
            raise KeyboardInterrupt
        real_write(name, rows)

    store.write_batch = dies_at_mentions
    try:
        with pytest.raises(KeyboardInterrupt):
            apply_delta(store, appended, built.delta)
    finally:
        del store.write_batch
    assert "load_sentences" in sent
    meta = store.meta()
    assert meta["complete"] is False and meta["content_hash"] == appended.content_hash + PENDING_SUFFIX
    assert store.loaded_hash() is None  # taken for neither graph
    report = store.load(appended, progress=False)  # what the next command's load_graph does
    assert not report.skipped and "clear" in report.seconds
    reloaded = _dump(store, appended)
    full = Artifact.open(built.u)
    store.load(full, progress=False)
    assert reloaded == _dump(store, full)


# -- the command -----------------------------------------------------------------------------------------------------
def _append_argv(out: Path, *extra: str) -> list[str]:
    return ["build", "--append", "--format", "jsonl", "--input", str(B_FILE), "--out", str(out), "--preset", "extended",
            "--set", "link_top_k=1", "-q", *extra]


def _state(graph_dir: Path) -> dict[str, str]:
    return {p.name: art.file_sha256(p) for p in sorted(graph_dir.iterdir()) if p.is_file() and p.name != ".lock"}


def test_cli_append_sends_the_delta_to_the_embedded_store(built: Built, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    shutil.copytree(built.a, out)
    rc, stdout, err = run(capsys, "build", "--format", "jsonl", "--input", A_FILE, "--out", out, "--preset", "extended",
                          "--set", "link_top_k=1", "-q")  # a cache hit: loads A into the embedded store
    assert rc == 0 and "cache hit" in stdout, err
    rc, stdout, err = run(capsys, *_append_argv(out))
    assert rc == 0, err
    assert "appended:" in stdout and ": delta in" in stdout, stdout
    rc, stdout, err = run(capsys, "stats", out, "--json")
    assert rc == 0, err
    stats = json.loads(stdout)["store"]
    expected = table_counts(Artifact.open(built.u))
    assert {k: {**stats["nodes"], **stats["relationships"]}[k] for k in expected} == expected
    assert stats["content_hash"] == Artifact.open(out).content_hash and stats["complete"] is True


def test_append_refusals_change_nothing(built: Built, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    shutil.copytree(built.a, out)
    before = _state(out)
    # another build config (the graph is extended with link_top_k=1)
    rc, _, err = run(capsys, "build", "--append", "--format", "jsonl", "--input", B_FILE, "--out", out, "--no-load", "-q")
    assert_one_line_error(rc, err, "cannot append", "build config field", "--preset extended")
    rc, _, err = run(capsys, *_append_argv(out, "--set", "link_top_k=5", "--no-load"))
    assert_one_line_error(rc, err, "link_top_k is 5", "built with 1")
    # only documents already in the graph (content-addressed ids: the same title and text): nothing new
    rc, _, err = run(capsys, "build", "--append", "--format", "jsonl", "--input", A_FILE, "--out", out, "--preset",
                     "extended", "--set", "link_top_k=1", "--no-load", "-q")
    assert_one_line_error(rc, err, "cannot append: nothing new", "3 document(s) are all already in the graph",
                          "Chicago speech")
    assert _state(out) == before
    # not a graph: a missing directory is not created, a directory without a manifest is left as it is
    missing = tmp_path / "nothing"
    rc, _, err = run(capsys, *_append_argv(missing, "--no-load"))
    assert_one_line_error(rc, err, "cannot append", "no manifest.json", str(missing))
    assert not missing.exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a graph\n")
    rc, _, err = run(capsys, *_append_argv(other, "--no-load"))
    assert_one_line_error(rc, err, "cannot append", "no manifest.json")
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    broken = tmp_path / "broken"
    shutil.copytree(built.a, broken)
    (broken / "entities.parquet").write_bytes(b"garbage")
    rc, _, err = run(capsys, *_append_argv(broken, "--no-load"))
    assert_one_line_error(rc, err, "cannot append: not a harness-g graph", "entities.parquet")


def test_question_already_in_the_graph_is_refused(tmp_path: Path, capsys) -> None:
    a, _ = split_records(HOTPOT_FILE, [0], tmp_path / "in")
    build_graph([CorpusSpec("hotpotqa", a)], tmp_path / "g", BuildConfig(), progress=False)
    records = json.loads(a.read_text())
    records[0]["context"] = [["Another title", ["Another sentence about nothing."]]]  # new documents, same question id
    again = tmp_path / "in" / "again.json"
    again.write_text(json.dumps(records))
    before = _state(tmp_path / "g")
    rc, _, err = run(capsys, "build", "--append", "--format", "hotpotqa", "--input", again, "--out", tmp_path / "g",
                     "--no-load", "-q")
    assert_one_line_error(rc, err, "1 question id(s) already in the graph", records[0]["_id"])
    assert _state(tmp_path / "g") == before


CRASH = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from harness_g.graph import artifact
    from harness_g.graph.append import append_graph
    from harness_g.graph.build import CorpusSpec
    from harness_g.graph.config import BuildConfig

    def killed(staging, graph_dir):  # the staging copy is complete: die before the commit
        assert (Path(staging) / artifact.MANIFEST).is_file()
        os.kill(os.getpid(), signal.SIGKILL)

    artifact.publish = killed
    append_graph([CorpusSpec("jsonl", Path(sys.argv[2]))], Path(sys.argv[1]),
                 BuildConfig.load(None, {"link_top_k": 1}, preset="extended"), progress=False)
""")


def test_a_crash_before_the_switch_leaves_the_old_graph(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "g"
    shutil.copytree(built.a, out)
    old_hash = Artifact.open(out).content_hash
    proc = subprocess.run([sys.executable, "-c", CRASH, str(out), str(B_FILE)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert list(out.glob(art.STAGING_PREFIX + "*"))  # the new artifact was written beside the old one
    opened = Artifact.open(out, verify=True)
    assert opened.content_hash == old_hash and opened.counts == Artifact.open(built.a).counts
    # the next append clears the leftover and succeeds
    result = append_graph([CorpusSpec("jsonl", B_FILE)], out, _config(), progress=False)
    assert not list(out.glob(art.STAGING_PREFIX + "*"))
    assert table_differences(Artifact.open(out, verify=True), Artifact.open(built.u)) == []
    assert np.isfinite(Artifact.open(out).embeddings()).all() and result.counts == Artifact.open(built.u).counts
