"""``benchmarks/repro_replay.py``'s window and cache copy on a committed result folder that starts later in its list
(2Wiki q26-50, ``--skip-questions 25``): the window's ids are counted from the list's start, not the folder's, a
window reaching outside the folder is refused, and the copy brings exactly the window's cache files (or nothing,
when one is missing). The replay end to end: tests/e2e/test_repro_replay.py."""
from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import REPO_ROOT, load_script

SRC = REPO_ROOT / "benchmarks" / "results" / "repro_small" / "2wiki-paper-t6-q26-50"


def _ids():
    return [r["question_id"] for r in json.loads((SRC / "equivalence.json").read_text())["per_question"]["menu"]]


def test_window_counts_from_the_list_start_and_refuses_outside_the_folder():
    rr = load_script("benchmarks/repro_replay.py")
    settings, ids, credit_ids = rr.window(SRC, 30, 5)
    assert settings["skip_questions"] == 25 and ids == _ids()[5:10]
    assert credit_ids == [q for q in json.loads((SRC / "credit.json").read_text())["question_ids"] if q in ids]
    assert rr.window(SRC, 25, 25)[1] == _ids()
    for skip, n in ((20, 5), (45, 6), (0, 1)):
        with pytest.raises(rr.ConfigError, match="holds questions 26-50 of its list"):
            rr.window(SRC, skip, n)


def test_copy_brings_exactly_the_window_or_nothing(tmp_path):
    rr = load_script("benchmarks/repro_replay.py")
    _, ids, credit_ids = rr.window(SRC, 45, 5)
    dest = tmp_path / "dest"
    assert rr.copy_caches(SRC, dest, ids, credit_ids) == 2 * len(ids) + len(credit_ids)
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*.json.gz"))
    want = sorted([f"cache/rollouts/{arm}/{rr._safe(q)}.json.gz" for arm in rr.ARMS for q in ids]
                  + [f"cache/credit/{rr._safe(q)}.json.gz" for q in credit_ids])
    assert got == want
    assert (dest / want[0]).read_bytes() == (SRC / want[0]).read_bytes()
    # one file missing in the source: refused, nothing copied
    broken = tmp_path / "broken"
    shutil.copytree(SRC, broken)
    (broken / "cache" / "credit" / f"{rr._safe(credit_ids[-1])}.json.gz").unlink()
    with pytest.raises(rr.ConfigError, match=r"credit/.* is missing \(1 cache file"):
        rr.copy_caches(broken, tmp_path / "none", ids, credit_ids)
    assert not (tmp_path / "none").exists()
