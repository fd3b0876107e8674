"""``repro_small.py pool`` (benchmarks/repro_pool.py) end to end, with the tiny random test model on the packaged
2Wiki slice and the embedded FalkorDB: two blocks of the list played into two folders and pooled give exactly the
numbers of one folder that played both blocks (the same per-question values, in the same order, under the same
bootstrap); a credit-only block counts for claim (b) alone; folders of other settings, a question counted twice and a
folder whose credit cache does not match its credit.json are refused in one line with nothing written; the page
shows the pool."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import load_script
from helpers.slice_graph import SLICE_2WIKI as SLICE
from helpers.slice_graph import build_2wiki_slice

N_G = 3
RESAMPLES = 200  # enough to compare two computations draw for draw; the CLI's default is 2000


def _args(command, graph, out, n, skip=0, *extra):
    return [command, "--graph", str(graph), "--questions", str(SLICE), "--format", "2wiki", "--n-questions", str(n),
            "--skip-questions", str(skip), "--out", str(out), "--model", "tiny-random", "--group-size", str(N_G),
            "--free-action-tokens", "8", "--set", "rollout.max_turns=3", "--set", "rollout.max_answer_tokens=4",
            "--set", "rollout.env={visible_cap: 3, lookup_cap: 3}", "--set", "credit.dead_zone=0", *extra]


def _no_stamp(d):
    return {k: v for k, v in d.items() if k not in ("generated", "rests_on")}


@pytest.mark.slow
def test_pooled_blocks_equal_one_folder_and_bad_pools_are_refused(tmp_path, capsys):
    rs, rp = load_script("benchmarks/repro_small.py"), load_script("benchmarks/repro_pool.py")
    graph = tmp_path / "graph"
    build_2wiki_slice(graph, None)
    a, b, c, only_credit = (tmp_path / name for name in ("a", "b", "both", "credit-only"))
    for folder, n, skip in ((a, 2, 0), (b, 2, 2)):
        assert rs.main(_args("equivalence", graph, folder, n, skip)) == 0
        assert rs.main(_args("credit", graph, folder, n, skip)) == 0
    # one folder playing questions 1-4 from the two blocks' caches (a question's rollouts are its id's, not its place's)
    for folder in (a, b):
        shutil.copytree(folder / "cache", c / "cache", dirs_exist_ok=True)
    assert rs.main(_args("equivalence", graph, c, 4)) == 0 and rs.main(_args("credit", graph, c, 4)) == 0
    assert rs.main(["pool", "--from", str(a), str(b), "--out", str(tmp_path / "pool"), "--resamples", str(RESAMPLES)]) == 0
    pooled = json.loads((tmp_path / "pool" / "pooled.json").read_text())
    one = rp.pool([rp.load_source(c)], resamples=RESAMPLES)  # the same arithmetic on one folder
    assert pooled["equivalence"] == one["equivalence"] and pooled["credit"] == one["credit"]
    assert pooled["equivalence"]["questions"] == 4 and pooled["credit"]["questions"] == 4
    # and the point values equal what the one folder's own equivalence.json and credit.json report
    eq_c, cr_c = (json.loads((c / f).read_text()) for f in ("equivalence.json", "credit.json"))
    assert pooled["equivalence"]["menu_minus_free_query"]["n_eq"]["mean"] == eq_c["menu_minus_free_query"]["n_eq"]["mean"]
    assert pooled["credit"]["signals"]["snc"]["auc"] == cr_c["signals"]["snc"]["auc"]
    assert pooled["credit"]["steps"] == cr_c["rests_on"]["steps"] and cr_c["question_ids"] == [
        q["question_id"] for q in eq_c["per_question"]["menu"]]
    assert [(s["first_question"], s["equivalence_questions"]) for s in pooled["rests_on"]["sources"]] == [(1, 2), (3, 2)]

    # a credit-only block (the replication runs' shape) pools into claim (b) and leaves claim (a) to the others
    assert rs.main(_args("credit", graph, only_credit, 2, 4)) == 0
    data = rp.cmd_pool([a, only_credit], tmp_path / "pool2", resamples=RESAMPLES)
    assert data["equivalence"]["questions"] == 2 and data["credit"]["questions"] == 4
    assert rs.main(["page", "--out", str(tmp_path)]) == 0
    html = (tmp_path / "index.html").read_text()
    assert "<h2>Pooled over 2wiki (pool)</h2>" in html and "<h2>Pooled over 2wiki (pool2)</h2>" in html
    assert "claim (a): 2wiki q1-2, 2wiki q3-4" in html and "claim (b): 2wiki q1-2, 2wiki q5-6" in html

    # refused, one line, nothing written
    other = tmp_path / "other"
    assert rs.main(_args("equivalence", graph, other, 1, 6, "--seed", "1")) == 0
    refused = tmp_path / "refused"
    cases = [([a, other], "(seed: 0 -> 1)"), ([a, c], "is also in"), ([a], "two or more"),
             ([a, tmp_path / "missing"], "no settings.json there"), ([a, b, a], "is also in")]
    for sources, message in cases:
        capsys.readouterr()
        assert rs.main(["pool", "--from", *map(str, sources), "--out", str(refused)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, err
    assert not refused.exists()
    # a folder caught between runs: its credit cache no longer holds credit.json's questions
    (b / "cache" / "credit" / f"{rs._safe(cr_c['question_ids'][3])}.json.gz").unlink()
    capsys.readouterr()
    assert rs.main(["pool", "--from", str(a), str(b), "--out", str(refused)]) == 2
    assert "is missing from cache/credit" in capsys.readouterr().err and not refused.exists()
    assert rs.main(["pool", "--from", str(a), str(b), "--out", str(a)]) == 2  # the pool may not overwrite a source
