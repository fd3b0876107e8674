"""Where the tests find the repository and their data, wherever the test module sits (tests/unit, tests/e2e)."""
from __future__ import annotations

from pathlib import Path

#: the repository root (holds README.md, pyproject.toml, training/configs, scripts)
REPO_ROOT = Path(__file__).resolve().parents[2]
#: tests/data: the small dataset slices the tests read
TEST_DATA = REPO_ROOT / "tests" / "data"
#: the training config of the paper's recipe (Table tab:hyper of harness-g.tex)
PAPER_CONFIG = REPO_ROOT / "training" / "configs" / "qwen2.5-3b-paper.yaml"


def load_script(relative: str, name: str | None = None):
    """A script of the repository that is not a package module (``benchmarks/repro_small.py``,
    ``scripts/readme_walk.py``) imported under ``name`` (default: its file stem) and registered in ``sys.modules``
    (dataclasses look their module up there); its folder goes on ``sys.path`` first, as the benchmarks import their
    sibling ``common.py``."""
    import importlib.util
    import sys

    path = REPO_ROOT / relative
    name = name or path.stem
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module
