"""``benchmarks/repro_empty_class.py``: the empty-class recount of N_eq, on hand-made evidence sets and on a committed
result folder (its cached rollouts must give the N_eq its equivalence.json recorded; a folder whose record disagrees
is refused in one line and nothing is written); several folders are read in the pool's order, whatever the order
given."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import REPO_ROOT, load_script

FOLDER = REPO_ROOT / "benchmarks" / "results" / "repro_small" / "2wiki-paper-t6-q26-50"


def test_empty_rollouts_share_one_class_and_count_apart_in_the_upper_bound():
    ec = load_script("benchmarks/repro_empty_class.py")
    a, b = frozenset({"s1", "s2"}), frozenset({"s9"})
    counts = ec.class_counts([frozenset(), a, frozenset(), a, b, frozenset()], 0.8)
    assert counts == {"n_eq": 3.0, "n_eq_empty_apart": 5.0, "empty_frac": 0.5}
    # no empty rollout: both counts are the appendix's
    assert ec.class_counts([a, a, b], 0.8) == {"n_eq": 2.0, "n_eq_empty_apart": 2.0, "empty_frac": 0.0}
    assert ec.class_counts([frozenset()] * 4, 0.8) == {"n_eq": 1.0, "n_eq_empty_apart": 4.0, "empty_frac": 1.0}


def test_matched_count_compares_the_retrieving_menu_rollouts_with_as_many_free_query_ones():
    ec = load_script("benchmarks/repro_empty_class.py")
    a, b, c = frozenset({"s1"}), frozenset({"s2"}), frozenset({"s3"})
    e = frozenset()
    # k = 3 menu rollouts retrieved (2 classes); every 3-subset of [a, b, c] has 3 classes
    assert ec.matched_counts([e, a, a, b, e], [a, b, c], 0.8) == {"k": 3.0, "menu_retrieving": 2.0, "free_matched": 3.0}
    # k = 1: any one rollout is one class
    assert ec.matched_counts([e, c, e], [a, a, b], 0.8) == {"k": 1.0, "menu_retrieving": 1.0, "free_matched": 1.0}
    # k = 2 against [a, a, b]: subsets (a,a) 1, (a,b) 2, (a,b) 2 -> 5/3
    assert ec.matched_counts([a, b], [a, a, b], 0.8)["free_matched"] == pytest.approx(5 / 3)
    assert ec.matched_counts([e, e], [a, b], 0.8) == {"k": 0.0, "menu_retrieving": 0.0, "free_matched": 0.0}


def test_committed_folder_reproduces_its_n_eq_and_a_tampered_one_is_refused(tmp_path, capsys):
    ec = load_script("benchmarks/repro_empty_class.py")
    out = tmp_path / "check.json"
    assert ec.main(["--from", str(FOLDER), "--out", str(out), "--resamples", "200"]) == 0
    data = json.loads(out.read_text())
    recorded = json.loads((FOLDER / "equivalence.json").read_text())
    for arm in ("menu", "free-query"):
        assert data["pooled"]["arms"][arm]["n_eq"]["mean"] == pytest.approx(recorded["arms"][arm]["n_eq"]["mean"])
        assert data["pooled"]["arms"][arm]["empty_frac"]["mean"] == pytest.approx(
            recorded["arms"][arm]["describe"]["empty_evidence_frac"]["mean"])
    menu = data["pooled"]["arms"]["menu"]
    # counting each empty rollout apart can only add classes, and adds exactly where a menu group had empty rollouts
    assert menu["n_eq_empty_apart"]["mean"] >= menu["n_eq"]["mean"]
    assert (menu["n_eq_empty_apart"]["mean"] > menu["n_eq"]["mean"]) == (menu["empty_frac"]["mean"] > 0)
    assert data["pooled"]["questions"] == recorded["rests_on"]["questions"] == 25
    m = data["pooled"]["matched"]
    assert 0 < m["questions"] <= 25 and 1 <= m["k"]["mean"] <= 8
    assert m["menu_minus_free"]["mean"] == pytest.approx(m["menu_retrieving"]["mean"] - m["free_matched"]["mean"])

    bad = tmp_path / "bad"
    shutil.copytree(FOLDER, bad, ignore=shutil.ignore_patterns("credit"))
    eq = json.loads((bad / "equivalence.json").read_text())
    eq["per_question"]["menu"][0]["n_eq"] += 1
    (bad / "equivalence.json").write_text(json.dumps(eq))
    out2 = tmp_path / "refused.json"
    assert ec.main(["--from", str(bad), "--out", str(out2)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the cache is not this folder's" in err
    assert not out2.exists()


def test_the_page_shows_a_check_filed_beside_a_pool_and_only_there(tmp_path):
    ec = load_script("benchmarks/repro_empty_class.py")
    rp = load_script("benchmarks/repro_pool.py")
    pool = REPO_ROOT / "benchmarks" / "results" / "repro_small" / "pooled-paper-t6-grown"
    for name, with_check in (("with", True), ("without", False)):
        (tmp_path / name / "p").mkdir(parents=True)
        shutil.copy(pool / "pooled.json", tmp_path / name / "p" / "pooled.json")
        if with_check:
            shutil.copy(pool / ec.EMPTY_CLASS, tmp_path / name / "p" / ec.EMPTY_CLASS)
    check = json.loads((pool / ec.EMPTY_CLASS).read_text())
    apart = check["pooled"]["menu_minus_free_query"]["n_eq_empty_apart"]
    html = rp.pooled_sections(tmp_path / "with")
    assert "retrieved nothing and share one class" in html and f"{apart['mean']:+.2f} [{apart['lo']:+.2f}," in html
    assert "retrieved nothing" not in rp.pooled_sections(tmp_path / "without")
    assert rp.pooled_sections(tmp_path / "without") in html  # the pool's own section is unchanged


def test_several_folders_pool_as_repro_pool_does_and_bad_input_is_refused_in_one_line(tmp_path, capsys):
    ec = load_script("benchmarks/repro_empty_class.py")
    root = REPO_ROOT / "benchmarks" / "results" / "repro_small"
    out = tmp_path / "pooled.json"
    assert ec.main(["--from", str(root / "2wiki-paper-t6"), str(FOLDER), "--out", str(out), "--resamples", "200"]) == 0
    data = json.loads(out.read_text())
    pooled = json.loads((root / "pooled-2wiki-paper-t6" / "pooled.json").read_text())["equivalence"]
    assert data["pooled"]["questions"] == pooled["questions"] == 50
    assert data["pooled"]["menu_minus_free_query"]["n_eq"]["mean"] == pytest.approx(
        pooled["menu_minus_free_query"]["n_eq"]["mean"])
    assert [f["questions"] for f in data["per_folder"]] == [25, 25]
    # the folders given the other way round are read in the pool's order (dataset, then list position): the same check
    back = tmp_path / "back.json"
    assert ec.main(["--from", str(FOLDER), str(root / "2wiki-paper-t6"), "--out", str(back), "--resamples", "200"]) == 0
    data_back = json.loads(back.read_text())
    assert data_back["pooled"] == data["pooled"]
    assert [f["first_question"] for f in data_back["per_folder"]] == [1, 26]
    capsys.readouterr()

    no_eq = tmp_path / "credit-only"
    shutil.copytree(FOLDER, no_eq, ignore=shutil.ignore_patterns("rollouts", "equivalence.json"))
    missing = tmp_path / "missing"
    shutil.copytree(FOLDER, missing, ignore=shutil.ignore_patterns("credit"))
    first = json.loads((missing / "equivalence.json").read_text())["per_question"]["menu"][0]["question_id"]
    next((missing / "cache" / "rollouts" / "menu").glob(f"{first}*")).unlink()
    cases = [
        (["--from", str(FOLDER), str(FOLDER)], "is also in"),  # a question counted twice
        (["--from", str(FOLDER), str(root / "2wiki-paper-menu")], "played with other settings"),
        (["--from", str(no_eq)], "no equivalence.json there"),
        (["--from", str(missing)], "is missing from cache/rollouts/menu"),
        (["--from", str(FOLDER), "--resamples", "50"], "--resamples must be >= 100"),
    ]
    for argv, message in cases:
        target = tmp_path / "refused.json"
        assert ec.main([*argv, "--out", str(target)]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, (argv, err)
        assert not target.exists()


def test_a_group_with_more_retrieving_menu_rollouts_than_free_query_ones_is_refused():
    ec = load_script("benchmarks/repro_empty_class.py")
    from harness_g.errors import ConfigError

    with pytest.raises(ConfigError, match="only 1 rollouts"):
        ec.matched_counts([frozenset({"s1"}), frozenset({"s2"})], [frozenset({"s1"})], 0.8)


def test_the_sentence_says_n_a_where_no_menu_rollout_retrieved(capsys):
    ec = load_script("benchmarks/repro_empty_class.py")
    e, a, b = frozenset(), frozenset({"s1"}), frozenset({"s2"})
    values = {"menu": [ec.class_counts([e, e], 0.8)], "free-query": [ec.class_counts([a, b], 0.8)],
              "matched": [ec.matched_counts([e, e], [a, b], 0.8)]}
    summary = ec.summarise(values, 100)
    assert summary["matched"]["questions"] == 0 and summary["matched"]["menu_minus_free"]["mean"] is None
    html = ec.paragraph({"pooled": summary})
    assert "over the 0 questions" in html and "(k = n/a of them" in html and "rollouts: n/a." in html
    # as defined: 1 class (both empty) - 2; each empty rollout apart: 2 - 2
    assert "100.0% of the menu" in html and "N_eq is +0.00 [+0.00, +0.00], against -1.00 [-1.00, -1.00] as defined" in html
