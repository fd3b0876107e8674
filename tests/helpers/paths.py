"""Where the tests find the repository and their data, wherever the test module sits (tests/unit, tests/e2e)."""
from __future__ import annotations

from pathlib import Path

#: the repository root (holds README.md, pyproject.toml, training/configs, scripts)
REPO_ROOT = Path(__file__).resolve().parents[2]
#: tests/data: the small dataset slices the tests read
TEST_DATA = REPO_ROOT / "tests" / "data"
#: the training config of the paper's recipe (Table tab:hyper of harness-g.tex)
PAPER_CONFIG = REPO_ROOT / "training" / "configs" / "qwen2.5-3b-paper.yaml"
