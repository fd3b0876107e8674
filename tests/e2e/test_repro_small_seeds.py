"""``benchmarks/repro_small_seeds.sh``: the three-seed comparison re-made from committed per-window folders (issue 31
items 1-2 at T = 6). Run on copies of two committed windows of each seed (2Wiki and HotpotQA q1-5, 10 questions)
beside a seed-2 folder still running (no credit.json, left out): the seed-2 pool, seeds 0 and 1 on the same
questions, empty-class checks and both seed pairs are written and rest on those 10 questions; a seed-2 window without
its seed-1 folder is refused in one line and nothing is written. Real committed caches, no model."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "repro_small_seeds.sh"
COMMITTED = REPO_ROOT / "benchmarks" / "results" / "repro_small"
WINDOWS = [f"{s}-paper-t6-seed{seed}-q1-5" for s in ("2wiki", "hotpotqa") for seed in (0, 1, 2)]


def _run(results):
    # PYTHON relative to the caller's directory, as `PYTHON=.venv/bin/python bash benchmarks/...` gives it
    python = Path(sys.executable)
    env = {**os.environ, "PYTHON": f"{python.parent.name}/{python.name}", "PAGE": "0"}
    return subprocess.run(["bash", str(SCRIPT), str(results)], cwd=python.parent.parent, env=env, capture_output=True,
                          text=True, timeout=900)


def test_three_seed_pools_and_pairs_rest_on_the_same_questions(tmp_path):
    for name in WINDOWS:
        shutil.copytree(COMMITTED / name, tmp_path / name)
    running = tmp_path / "musique-paper-t6-seed2-q96-100"  # a block still running: no credit.json yet, left out
    running.mkdir()
    shutil.copy(COMMITTED / WINDOWS[0] / "settings.json", running / "settings.json")
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 folders: 2wiki-paper-t6-seed2-q1-5 hotpotqa-paper-t6-seed2-q1-5" in done.stdout
    for seed, pool in ((2, "pooled-paper-t6-seed2-all"), (0, "pooled-paper-t6-seed0-same2-all"),
                       (1, "pooled-paper-t6-seed1-same2-all")):
        pooled = json.loads((tmp_path / pool / "pooled.json").read_text())
        assert pooled["equivalence"]["questions"] == 10 and pooled["rests_on"]["seeds"] == [seed]
        assert sorted(src["folder"] for src in pooled["rests_on"]["sources"]) == [
            f"{s}-paper-t6-seed{seed}-q1-5" for s in ("2wiki", "hotpotqa")]
        assert (tmp_path / pool / "empty_class.json").is_file()
    for other in (0, 1):
        pair = json.loads((tmp_path / "pooled-paper-t6-seed2-all" / f"seed_pair_vs_seed{other}.json").read_text())
        assert pair["seeds"] == {"a": 2, "b": other} and pair["questions"] == 10 and pair["quantities"]
    assert not (tmp_path / "index.html").exists()  # PAGE=0


def test_a_window_without_its_seed_1_folder_is_refused_and_nothing_written(tmp_path):
    for name in WINDOWS:
        if name != "hotpotqa-paper-t6-seed1-q1-5":
            shutil.copytree(COMMITTED / name, tmp_path / name)
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = _run(tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "hotpotqa-paper-t6-seed2-q1-5 has no seed-1 counterpart" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
