"""``python -m harness_g`` from the checkout's root imports the root's ``harness_g/`` folder first (the current
directory leads ``sys.path``), which holds only the CLI: the subpackages live beside it (pyproject's
``package-dir``). On the GPU machine (a non-editable install, 2026-12-04) that failed with "No module named
'harness_g.agent'". Checked with ``python -S`` (no site-packages, so no editable install's finder to mask it)."""
from __future__ import annotations

import subprocess
import sys

from helpers.paths import REPO_ROOT


def test_subpackages_resolve_from_the_checkout_root_without_an_install() -> None:
    code = ("import importlib.util as u, sys; sys.path.insert(0, '');"
            "print(*(u.find_spec('harness_g.' + n).origin for n in ('agent', 'graph', 'training', 'cypher')), sep='\\n')")
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.split() == [str(REPO_ROOT / n / "__init__.py") for n in ("agent", "graph", "training", "cypher")]


def test_the_installed_layout_is_left_alone(tmp_path) -> None:
    """A folder that holds its subpackages (a wheel's layout) gets nothing added to ``__path__``."""
    pkg = tmp_path / "site" / "harness_g"
    (pkg / "agent").mkdir(parents=True)
    (pkg / "__init__.py").write_text((REPO_ROOT / "harness_g" / "__init__.py").read_text())
    (pkg / "agent" / "__init__.py").write_text("")
    (tmp_path / "site" / "pyproject.toml").write_text("")  # even beside a pyproject.toml
    proc = subprocess.run([sys.executable, "-S", "-c", "import harness_g; print(list(harness_g.__path__))"],
                          cwd=tmp_path / "site", capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(tmp_path / "site")})
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.strip() == str([str(pkg)])
