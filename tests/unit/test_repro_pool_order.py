"""The order pooled questions are resampled in (benchmarks/repro_pool.py ``in_question_order``): a pool, a seed pair and
the page's pooled claim-(a) row read the same questions by dataset name, then list position, whatever order the
folders are given in, so the page's row and the pool over the same folders show the same interval. Hand-built result
folders (settings.json and equivalence.json, no model), so every value is known; the bootstrap is the real one."""
from __future__ import annotations

import json
import random
from pathlib import Path

from helpers.paths import load_script

rs = load_script("benchmarks/repro_small.py")
rp = load_script("benchmarks/repro_pool.py")
sp = load_script("benchmarks/repro_seed_pair.py")

RESAMPLES = 500
SETTING = {"preset": "paper", "model": "smollm2", "group_size": 8, "device": "CPU (2-core)", "temperature": 1.0,
           "max_turns": 6, "context": "multi-turn", "env": {"visible_cap": 6, "lookup_cap": 8}, "overrides": []}
# (dataset, first list position, questions): three blocks given out of order below
BLOCKS = (("musique", 1, 4), ("2wiki", 5, 4), ("2wiki", 1, 4))


def _folder(root: Path, dataset: str, first: int, n: int, seed: int) -> Path:
    """A result folder as ``repro_small.py equivalence`` writes it, with per-question values drawn from ``seed``."""
    rng = random.Random(f"{dataset}:{first}:{seed}")
    rows = {arm: [] for arm in rs.ARMS}
    for i in range(n):
        qid = f"{dataset}-{first + i}"
        for arm in rs.ARMS:
            rows[arm].append({"question_id": qid, "n_eq": float(rng.randint(1, 8)), "d_ret": rng.random(),
                              "d_query": rng.random(), "aliasing": rng.random(),
                              "empty_evidence_frac": rng.choice([0.0, 0.25, 0.5])})
    folder = root / f"{dataset}-q{first}-seed{seed}"
    folder.mkdir(parents=True)
    settings = {"graph": f"/graphs/{dataset}", "content_hash": f"hash-{dataset}", "questions": f"{dataset}.json",
                "format": dataset, "skip_questions": first - 1, "seed": seed, "preset": "paper", "group_size": 8}
    (folder / "settings.json").write_text(json.dumps(settings))
    eq = {"rests_on": dict(SETTING, dataset=dataset, questions=n, first_question=first, seeds=[seed],
                           rollouts_per_arm=8 * n),
          "menu_minus_free_query": {"n_eq": rs.paired_difference([r["n_eq"] for r in rows["menu"]],
                                                                 [r["n_eq"] for r in rows["free-query"]])},
          "per_question": rows}
    (folder / "equivalence.json").write_text(json.dumps(eq))
    return folder


def test_pool_and_seed_pair_do_not_depend_on_the_order_of_their_folders(tmp_path: Path):
    seed0 = [_folder(tmp_path, d, f, n, 0) for d, f, n in BLOCKS]
    seed1 = [_folder(tmp_path, d, f, n, 1) for d, f, n in BLOCKS]
    given = rp.pool([rp.load_source(f) for f in seed0], resamples=RESAMPLES)
    backwards = rp.pool([rp.load_source(f) for f in reversed(seed0)], resamples=RESAMPLES)
    assert given["equivalence"] == backwards["equivalence"]
    assert [(s["dataset"], s["first_question"]) for s in given["rests_on"]["sources"]] == [
        ("2wiki", 1), ("2wiki", 5), ("musique", 1)]
    assert "list position" in given["rests_on"]["bootstrap"]["order"]
    # the resampled order is the sorted one: the same differences resampled in the --from order give another interval
    per_q = {arm: [v for f in seed0 for v in rp.load_source(f).equivalence["per_question"][arm]] for arm in rs.ARMS}
    _, as_given = rs.equivalence_means(per_q, resamples=RESAMPLES)
    assert as_given["n_eq"]["mean"] == given["equivalence"]["menu_minus_free_query"]["n_eq"]["mean"]
    assert (as_given["n_eq"]["lo"], as_given["n_eq"]["hi"]) != (
        given["equivalence"]["menu_minus_free_query"]["n_eq"]["lo"],
        given["equivalence"]["menu_minus_free_query"]["n_eq"]["hi"])
    one = sp.compare(seed0, seed1, resamples=RESAMPLES)
    other = sp.compare(list(reversed(seed0)), seed1[1:] + seed1[:1], resamples=RESAMPLES)
    assert one["quantities"] == other["quantities"] and one["per_dataset"] == other["per_dataset"]


def test_the_page_row_shows_the_pools_interval(tmp_path: Path):
    folders = [_folder(tmp_path, d, f, n, 0) for d, f, n in BLOCKS]
    pooled = rp.pool([rp.load_source(f) for f in folders], resamples=rs.BOOTSTRAP)["equivalence"]
    d = pooled["menu_minus_free_query"]["n_eq"]
    sets = [(f, json.loads((f / "equivalence.json").read_text()), {}) for f in folders]
    page = rs.summary_section(sets, tmp_path)
    row = next(line for line in page.split("<tr>") if " pooled (" in line)
    assert row.startswith("<td>2wiki q1-8, musique q1-4 pooled (") and "<td>12</td>" in row
    assert f">{rs.fmt_interval(d)}:" in row
