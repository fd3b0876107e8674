"""The README's Python examples, as the tests run them: the ```python block that holds a marker line."""
from __future__ import annotations

from helpers.paths import REPO_ROOT, load_script


def python_block(marker: str, readme: str = "README.md") -> str:
    """The text of the one ```python block of ``REPO_ROOT/readme`` that contains ``marker`` (a comment line the
    block starts with), so a test runs exactly the code a reader copies. Fails when none or several hold it."""
    blocks, current = [], None
    for line in (REPO_ROOT / readme).read_text(encoding="utf-8").splitlines():
        if current is None and line.strip() == "```python":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{readme}: {len(found)} ```python blocks hold {marker!r}"
    return found[0]


def load_readme_walk():
    """``scripts/readme_walk.py`` (not a package module) imported as ``readme_walk``."""
    return load_script("scripts/readme_walk.py")
