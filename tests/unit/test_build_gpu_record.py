"""The committed H200 build record (``benchmarks/results/build_gpu.json``, issue 35 item 7) renders with the spaCy
that built its graphs. That record predates ``bench_build_gpu.py`` keeping the version under ``build``: it has it at
the top level, and ``machine.spacy_version`` is None there (spaCy travelled on ``--extra-site``, then put on the
path only after the machine was read)."""
from __future__ import annotations

import json

from helpers.paths import REPO_ROOT, load_script

bbg = load_script("benchmarks/bench_build_gpu.py")
RECORD = REPO_ROOT / "benchmarks" / "results" / "build_gpu.json"


def test_the_committed_record_names_its_spacy() -> None:
    data = json.loads(RECORD.read_text(encoding="utf-8"))
    assert data["machine"]["spacy_version"] is None and "spacy_version" not in data["build"]
    assert bbg.spacy_version(data) == data["spacy_version"] == "3.8.18"
    assert "spaCy 3.8.18." in bbg.markdown(data)


def test_the_build_part_s_version_wins_over_an_old_top_level_key() -> None:
    assert bbg.spacy_version({"build": {"spacy_version": "3.9.0"}, "spacy_version": "3.8.18"}) == "3.9.0"
    assert bbg.spacy_version({"encode": {}}) is None  # an encode-only run built nothing
