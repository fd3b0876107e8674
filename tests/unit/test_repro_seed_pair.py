"""``benchmarks/repro_seed_pair.py``: two seeds' per-question N_eq paired by question, on copies of committed result
folders (the copy at "seed 1" edited by hand so the expected differences are known), and its refusals (same seed,
another setting, a question on one side only), each one line with nothing written."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import REPO_ROOT, load_script

RESULTS = REPO_ROOT / "benchmarks" / "results" / "repro_small"
FIRST, SECOND = RESULTS / "2wiki-paper-t6", RESULTS / "2wiki-paper-t6-q26-50"


def _copy(src, dst, *, seed=None, edit=None):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("cache"))
    if seed is not None:
        settings = json.loads((dst / "settings.json").read_text())
        settings["seed"] = seed
        (dst / "settings.json").write_text(json.dumps(settings))
    if edit is not None:
        eq = json.loads((dst / "equivalence.json").read_text())
        edit(eq)
        (dst / "equivalence.json").write_text(json.dumps(eq))
    return dst


def _assert_refused(sp, args, out, capsys, needle):
    """``args`` exit 2 with one stderr line containing ``needle``, and ``out`` is not written."""
    assert sp.main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not out.exists()


def test_identical_values_give_zero_difference_and_correlation_one(tmp_path):
    sp = load_script("benchmarks/repro_seed_pair.py")
    a = [_copy(FIRST, tmp_path / "a1", seed=1), _copy(SECOND, tmp_path / "a2", seed=1)]
    data = sp.compare(a, [FIRST, SECOND], resamples=200)
    assert data["seeds"] == {"a": 1, "b": 0} and data["questions"] == 50
    for name, q in data["quantities"].items():
        assert q["a_minus_b"]["mean"] == pytest.approx(0.0), name
        assert q["a"]["mean"] == pytest.approx(q["b"]["mean"]), name
    recorded = json.loads((FIRST / "equivalence.json").read_text())["per_question"]["menu"]
    assert data["per_dataset"]["2wiki"]["questions"] == 50
    # the menu's N_eq varies over these questions, so a side equal to the other correlates perfectly
    assert len({r["n_eq"] for r in recorded}) > 1
    assert data["quantities"]["n_eq_menu"]["pearson"] == pytest.approx(1.0)


def test_a_changed_question_moves_the_paired_difference_by_its_share(tmp_path):
    sp = load_script("benchmarks/repro_seed_pair.py")

    def edit(eq):  # the first question's menu group: 2 classes more, 0.25 more of its rollouts empty
        eq["per_question"]["menu"][0]["n_eq"] += 2
        eq["per_question"]["menu"][0]["empty_evidence_frac"] += 0.25

    a = _copy(FIRST, tmp_path / "a", seed=3, edit=edit)
    out = tmp_path / "pair.json"
    assert sp.main(["--a", str(a), "--b", str(FIRST), "--out", str(out), "--resamples", "200"]) == 0
    q = json.loads(out.read_text())["quantities"]
    n = json.loads((FIRST / "equivalence.json").read_text())["rests_on"]["questions"]
    assert q["n_eq_menu"]["a_minus_b"]["mean"] == pytest.approx(2 / n)
    assert q["n_eq_menu_minus_free_query"]["a_minus_b"]["mean"] == pytest.approx(2 / n)
    assert q["n_eq_free_query"]["a_minus_b"]["mean"] == pytest.approx(0.0)
    assert q["empty_frac_menu"]["a_minus_b"]["mean"] == pytest.approx(0.25 / n)
    assert q["n_eq_menu"]["a_minus_b"]["lo"] <= 2 / n <= q["n_eq_menu"]["a_minus_b"]["hi"]
    assert q["n_eq_menu"]["pearson"] < 1.0


@pytest.mark.parametrize("case, needle", [
    ("same-seed", "both played with seed 0"),
    ("other-setting", "only the seed may differ"),
    ("missing-question", "is on --b only"),
])
def test_refusals_name_the_problem_and_write_nothing(tmp_path, capsys, case, needle):
    sp = load_script("benchmarks/repro_seed_pair.py")
    if case == "same-seed":
        a = _copy(FIRST, tmp_path / "a")
    elif case == "other-setting":
        a = _copy(FIRST, tmp_path / "a", seed=1)
        settings = json.loads((a / "settings.json").read_text())
        settings["group_size"] = 4
        (a / "settings.json").write_text(json.dumps(settings))
    else:
        def drop(eq):
            for arm in ("menu", "free-query"):
                eq["per_question"][arm].pop()
        a = _copy(FIRST, tmp_path / "a", seed=1, edit=drop)
    out = tmp_path / "pair.json"
    _assert_refused(sp, ["--a", str(a), "--b", str(FIRST), "--out", str(out), "--resamples", "200"], out, capsys,
                    needle)


def test_cli_prints_one_line_per_quantity_with_both_seeds(tmp_path, capsys):
    sp = load_script("benchmarks/repro_seed_pair.py")
    a = _copy(FIRST, tmp_path / "a", seed=1)
    assert sp.main(["--a", str(a), "--b", str(FIRST), "--out", str(tmp_path / "p.json"), "--resamples", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(sp.QUANTITIES)
    assert lines[0].startswith("n_eq_menu: seed 1 ") and ", seed 0 " in lines[0]
    assert "difference +0.000 [+0.000, +0.000] (r = 1.00, 25 questions)" in lines[0]
    # the free-query arm never retrieves nothing here: its empty share does not vary, so it has no correlation
    assert lines[-1].startswith("empty_frac_free_query:") and "(r = n/a," in lines[-1]


@pytest.mark.parametrize("case, needle", [
    ("resamples", "--resamples must be >= 100"),
    ("twice", "a question counts once"),
    ("no-equivalence", "no equivalence.json there"),
    ("arm-order", "lists its arms' questions in different orders"),
])
def test_more_refusals_name_the_problem_and_write_nothing(tmp_path, capsys, case, needle):
    sp = load_script("benchmarks/repro_seed_pair.py")
    a = [_copy(FIRST, tmp_path / "a", seed=1)]
    b = [FIRST]
    resamples = "200"
    if case == "resamples":
        resamples = "50"
    elif case == "twice":
        b = [FIRST, _copy(FIRST, tmp_path / "b2")]
    elif case == "no-equivalence":
        (a[0] / "equivalence.json").unlink()
    else:
        def swap(eq):
            rows = eq["per_question"]["free-query"]
            rows[0], rows[1] = rows[1], rows[0]
        a = [_copy(FIRST, tmp_path / "a2", seed=1, edit=swap)]
    out = tmp_path / "pair.json"
    args = ["--a", *map(str, a), "--b", *map(str, b), "--out", str(out), "--resamples", resamples]
    _assert_refused(sp, args, out, capsys, needle)


# -- --vary preset: the extended preset against the paper's on the same questions at the same seed (committed folders)
EXTENDED = [RESULTS / f"2wiki-extended-t6-seed0-q{w}" for w in ("1-5", "6-10", "11-15")]
PAPER = [RESULTS / f"2wiki-paper-t6-seed0-q{w}" for w in ("1-5", "6-10", "11-15")]


def _menu_n_eq(folders):
    rows = [r for f in folders for r in json.loads((f / "equivalence.json").read_text())["per_question"]["menu"]]
    return sum(r["n_eq"] for r in rows) / len(rows)


def test_vary_preset_pairs_the_two_graphs_questions_by_id():
    sp = load_script("benchmarks/repro_seed_pair.py")
    data = sp.compare(EXTENDED, PAPER, resamples=200, vary="preset")
    assert data["kind"] == "preset_pair" and data["presets"] == {"a": "extended", "b": "paper"}
    assert data["questions"] == 15 and data["per_dataset"]["2wiki"]["questions"] == 15
    q = data["quantities"]["n_eq_menu"]
    assert q["a"]["mean"] == pytest.approx(_menu_n_eq(EXTENDED))
    assert q["b"]["mean"] == pytest.approx(_menu_n_eq(PAPER))
    assert q["a_minus_b"]["mean"] == pytest.approx(_menu_n_eq(EXTENDED) - _menu_n_eq(PAPER))
    # the default (--vary seed) refuses the same pair: the preset is a setting, not the seed
    with pytest.raises(sp.ConfigError, match="only the seed may differ"):
        sp.compare(EXTENDED, PAPER, resamples=200)


def _with_settings(src, dst, edit):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("cache"))
    settings = json.loads((dst / "settings.json").read_text())
    edit(settings)
    (dst / "settings.json").write_text(json.dumps(settings))
    return dst


@pytest.mark.parametrize("case, needle", [
    ("same-preset", "both played with preset paper"),
    ("other-seed", "only the preset (and the menu settings it sets) may differ"),
    ("override", "answer_with_max: 3 -> 1"),
])
def test_vary_preset_refusals_name_the_problem_and_write_nothing(tmp_path, capsys, case, needle):
    sp = load_script("benchmarks/repro_seed_pair.py")
    a, b = EXTENDED[0], PAPER[0]
    if case == "same-preset":
        a = _with_settings(PAPER[0], tmp_path / "a", lambda s: s.update(content_hash="another graph"))
    elif case == "other-seed":
        a = _with_settings(EXTENDED[0], tmp_path / "a", lambda s: s.update(seed=1))
    else:  # the extended side's menu with answer_with_max 3: an override, not what its preset sets
        def override(s):
            s["arms"]["menu"]["env"]["answer_with_max"] = 3
        a = _with_settings(EXTENDED[0], tmp_path / "a", override)
    out = tmp_path / "pair.json"
    args = ["--a", str(a), "--b", str(b), "--out", str(out), "--resamples", "200", "--vary", "preset"]
    _assert_refused(sp, args, out, capsys, needle)


def test_vary_preset_cli_labels_its_lines_by_preset(tmp_path, capsys):
    sp = load_script("benchmarks/repro_seed_pair.py")
    out = tmp_path / "p.json"
    assert sp.main(["--a", str(EXTENDED[0]), "--b", str(PAPER[0]), "--out", str(out), "--resamples", "200",
                    "--vary", "preset"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(sp.QUANTITIES)
    assert lines[0].startswith("n_eq_menu: preset extended ") and ", preset paper " in lines[0]
    assert json.loads(out.read_text())["kind"] == "preset_pair"


def test_vary_preset_refuses_a_question_twice_within_a_side_and_an_unknown_vary(tmp_path):
    """Under --vary preset questions pair by dataset and id, so the same question on two graphs of one side (which
    pooling, keyed by graph, lets through) is refused here; ``compare`` refuses a ``vary`` it does not know."""
    sp = load_script("benchmarks/repro_seed_pair.py")
    twin = _with_settings(PAPER[0], tmp_path / "twin", lambda s: s.update(content_hash="another graph"))
    with pytest.raises(sp.ConfigError, match="is also in another folder of this side; a question counts once"):
        sp.compare([EXTENDED[0]], [PAPER[0], twin], resamples=200, vary="preset")
    with pytest.raises(sp.ConfigError, match="--vary must be one of seed, preset, got 'graph'"):
        sp.compare([EXTENDED[0]], [PAPER[0]], resamples=200, vary="graph")


def test_a_comparison_records_what_it_holds_fixed():
    """``rests_on`` names model, device, N_g, T and temperature, and the setting held fixed (seed under --vary preset,
    preset under --vary seed), all read from the sides' settings."""
    sp = load_script("benchmarks/repro_seed_pair.py")
    settings = json.loads((EXTENDED[0] / "settings.json").read_text())
    r = sp.compare(EXTENDED, PAPER, resamples=200, vary="preset")["rests_on"]
    assert r == {"model": settings["model"], "device": settings["device"], "group_size": settings["group_size"],
                 "max_turns": settings["arms"]["menu"]["max_turns"],
                 "temperature": settings["arms"]["menu"]["temperature"], "seed": settings["seed"]}
    assert r["max_turns"] == 6 and r["seed"] == 0


def test_the_page_shows_each_comparison_with_its_numbers_reading_and_basis(tmp_path):
    """``pair_sections`` renders a committed preset pair (written before ``rests_on`` was recorded, so its basis is
    read from its first --a folder's settings) with the JSON's numbers, and reads a difference as "differs" only
    where its interval excludes 0; the page (``repro_small.py page``) includes it."""
    sp = load_script("benchmarks/repro_seed_pair.py")
    src = RESULTS / "pooled-extended-t6-seed0-2wiki-q1-40" / "preset_pair_vs_paper.json"
    data = json.loads(src.read_text())
    assert "rests_on" not in data
    root = tmp_path / "results"
    (root / "pair").mkdir(parents=True)
    shutil.copy(src, root / "pair" / src.name)
    assert "what it held fixed is not recorded (2wiki-extended-t6-seed0-q1-5 has no settings.json here)" in \
        sp.pair_sections(root)
    first = root / data["folders"]["a"][0]  # the folder's settings.json is all the page reads of it
    first.mkdir()
    shutil.copy(EXTENDED[0] / "settings.json", first / "settings.json")
    html = sp.pair_sections(root)
    q = data["quantities"]
    empty, free = q["empty_frac_menu"]["a_minus_b"], q["n_eq_free_query"]["a_minus_b"]
    assert empty["lo"] > 0 and free["lo"] < 0 < free["hi"]  # the recorded result the readings below depend on
    row = html.split("menu rollouts that retrieve nothing (share)</td>")[1].split("</tr>")[0]
    assert f"{empty['mean']:+.3f} [{empty['lo']:+.3f}, {empty['hi']:+.3f}]" in row and ">differs<" in row
    row = html.split("N_eq, free-query</td>")[1].split("</tr>")[0]
    assert ">not shown to differ<" in row
    assert "preset extended against preset paper" in html and "pair/preset_pair_vs_paper.json" in html
    assert "smollm2, cpu, seed 0, N_g = 8 rollouts per question and arm, T = 6" in html
    assert f"the same {data['questions']} questions (2wiki 40)" in html
    page = load_script("benchmarks/repro_small.py").cmd_page(root).read_text()
    assert "Paired by question: preset extended against preset paper" in page


def test_the_page_passes_over_other_json_and_refuses_a_damaged_comparison(tmp_path):
    sp = load_script("benchmarks/repro_seed_pair.py")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "seed_pair.json").write_text("{broken")  # caches are not read
    (tmp_path / "pairs.json").write_text(json.dumps([1, 2]))  # not ours
    (tmp_path / "other_pair.json").write_text(json.dumps({"kind": "pooled"}))  # not ours
    assert sp.pair_files(tmp_path) == [] and sp.pair_sections(tmp_path) == ""
    (tmp_path / "seed_pair.json").write_text("{broken")
    with pytest.raises(sp.ConfigError, match="seed_pair.json: not valid JSON"):
        sp.pair_files(tmp_path)


def test_page_cli_refuses_a_damaged_comparison_in_one_line(tmp_path, capsys):
    """What the user sees: ``repro_small.py page`` exits 2 with one stderr line naming the damaged file, and writes
    no page."""
    (tmp_path / "seed_pair.json").write_text("{broken")
    assert load_script("benchmarks/repro_small.py").main(["page", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "seed_pair.json: not valid JSON" in err and err.count("\n") == 1
    assert not (tmp_path / "index.html").exists()
