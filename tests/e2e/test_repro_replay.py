"""``repro_small.py replay`` (benchmarks/repro_replay.py) end to end, with the tiny random test model on the packaged
2Wiki slice and the embedded FalkorDB: a block of a 4-question folder replayed from its caches gives a folder whose
records, credit and settings equal what ``equivalence``/``credit`` wrote when they played that block, with no model
loaded; it pools with the other block into the 4-question folder's numbers; a moved graph of the same content is
accepted with ``--graph``; a window the source does not hold, a cache file missing, a source whose recorded order is
not its list's, recorded records or credit questions its cache does not give, a source recorded on other graph
content and an ``--out`` that holds files are refused in one line, with nothing written and the existing folder
unchanged."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import load_script
from helpers.slice_graph import SLICE_2WIKI as SLICE
from helpers.slice_graph import build_2wiki_slice

N_G = 3
RESAMPLES = 200


def _args(command, graph, out, n, skip=0, *extra):
    return [command, "--graph", str(graph), "--questions", str(SLICE), "--format", "2wiki", "--n-questions", str(n),
            "--skip-questions", str(skip), "--out", str(out), "--model", "tiny-random", "--group-size", str(N_G),
            "--free-action-tokens", "8", "--set", "rollout.max_turns=3", "--set", "rollout.max_answer_tokens=4",
            "--set", "rollout.env={visible_cap: 3, lookup_cap: 3}", "--set", "credit.dead_zone=0", *extra]


def _json(folder, name):
    return json.loads((folder / name).read_text())


def _tree(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_replayed_block_equals_the_played_block_and_bad_replays_are_refused(tmp_path, capsys, monkeypatch):
    rs, rr = load_script("benchmarks/repro_small.py"), load_script("benchmarks/repro_replay.py")
    graph = tmp_path / "graph"
    build_2wiki_slice(graph, None)
    src, played = tmp_path / "src", tmp_path / "played-q3-4"
    assert rs.main(_args("equivalence", graph, src, 4)) == 0 and rs.main(_args("credit", graph, src, 4)) == 0
    # the block q3-4 as equivalence/credit write it when they play it (from a copy of its caches)
    shutil.copytree(src / "cache", played / "cache")
    assert rs.main(_args("equivalence", graph, played, 2, 2)) == 0 and rs.main(_args("credit", graph, played, 2, 2)) == 0

    # the replay loads no model: every question comes from the copied cache
    def no_model(*a, **k):
        raise AssertionError("a replay loaded a model")

    monkeypatch.setattr(rr.cmd_equivalence.__globals__["Models"], "_load", no_model)
    out = tmp_path / "replay-q3-4"
    assert rs.main(["replay", "--from", str(src), "--skip-questions", "2", "--n-questions", "2", "--out", str(out)]) == 0
    for name in ("equivalence.json", "credit.json"):
        mine, want = _json(out, name), _json(played, name)
        assert {k: v for k, v in mine.items() if k != "generated"} == {k: v for k, v in want.items() if k != "generated"}
    assert _json(out, "settings.json") == _json(played, "settings.json")
    src_ids = _json(src, "credit.json")["question_ids"]
    record = _json(out, "replay.json")
    assert record["questions"] == [r["question_id"] for r in _json(src, "equivalence.json")["per_question"]["menu"]][2:]
    assert record["credit_questions"] == src_ids[2:] and record["first_question"] == 3
    assert record["cache_files_copied"] == 2 * 2 + len(src_ids[2:])
    assert not list(tmp_path.glob(".*replay-tmp"))

    # the replayed block and a replay of q1-2 pool into the 4-question folder's numbers
    first = tmp_path / "replay-q1-2"
    assert rs.main(["replay", "--from", str(src), "--n-questions", "2", "--out", str(first)]) == 0
    rp = load_script("benchmarks/repro_pool.py")
    pooled = rp.cmd_pool([first, out], tmp_path / "pool", resamples=RESAMPLES)
    one = rp.pool([rp.load_source(src)], resamples=RESAMPLES)
    assert pooled["equivalence"] == one["equivalence"] and pooled["credit"] == one["credit"]

    # refused, one line, nothing written
    lost = tmp_path / "lost"
    shutil.copytree(src, lost)
    qid = src_ids[3]
    (lost / "cache" / "rollouts" / "free-query" / f"{rs._safe(qid)}.json.gz").unlink()
    reordered = tmp_path / "reordered"  # its equivalence.json lists q1-2 where the list has q3-4
    shutil.copytree(src, reordered)
    eq = _json(reordered, "equivalence.json")
    for arm in eq["per_question"]:
        eq["per_question"][arm] = eq["per_question"][arm][2:] + eq["per_question"][arm][:2]
    (reordered / "equivalence.json").write_text(json.dumps(eq))
    edited = tmp_path / "edited"  # its recorded N_eq for question 3 is not what its cache gives
    shutil.copytree(src, edited)
    eq = _json(edited, "equivalence.json")
    eq["per_question"]["menu"][2]["n_eq"] += 1
    (edited / "equivalence.json").write_text(json.dumps(eq))
    no_credit = tmp_path / "no-credit"  # its credit.json does not list question 4, so its credit record is not copied
    shutil.copytree(src, no_credit)
    cr = _json(no_credit, "credit.json")
    cr["question_ids"].remove(src_ids[3])
    (no_credit / "credit.json").write_text(json.dumps(cr))
    other_graph = tmp_path / "other-graph"  # recorded on a graph of other content
    shutil.copytree(src, other_graph)
    st = _json(other_graph, "settings.json")
    st["content_hash"] = "0" * 16
    (other_graph / "settings.json").write_text(json.dumps(st))
    refused = tmp_path / "refused"
    cases = [([str(src), "3", "2"], "holds questions 1-4 of its list, not 4-5"),
             ([str(lost), "2", "2"], "is missing (1 cache file(s)"),
             ([str(reordered), "2", "2"], "has no cached group"),
             ([str(tmp_path / "nowhere"), "0", "1"], "no settings.json there"),
             ([str(src), "0", "0"], "--n-questions >= 1"),
             ([str(edited), "2", "2"], "the menu arm's per-question records differ from the source's"),
             ([str(no_credit), "2", "2"], "credit: question"),
             ([str(other_graph), "0", "2"], "settings differ beyond the window (content_hash:")]
    for (source, skip, n), message in cases:
        capsys.readouterr()
        argv = ["replay", "--from", source, "--skip-questions", skip, "--n-questions", n, "--out", str(refused)]
        assert rs.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, err
        assert not refused.exists() and not list(tmp_path.glob(".*replay-tmp"))
    # the same graph content read from another path (--graph): accepted, the path the one allowed difference
    moved = tmp_path / "graph-moved"
    shutil.copytree(graph, moved)
    elsewhere = tmp_path / "replay-moved"
    assert rs.main(["replay", "--from", str(src), "--n-questions", "2", "--out", str(elsewhere), "--graph", str(moved)]) == 0
    assert _json(elsewhere, "replay.json")["checked"][-1] == "settings equal the source's but skip_questions and graph"
    assert _json(elsewhere, "equivalence.json")["per_question"] == _json(first, "equivalence.json")["per_question"]
    before = _tree(out)
    assert rs.main(["replay", "--from", str(src), "--n-questions", "2", "--out", str(out)]) == 2
    assert "already holds files" in capsys.readouterr().err and _tree(out) == before
