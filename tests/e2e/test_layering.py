"""The package's layering, as DESIGN.md states it, checked on the source (pure: no database, no model).

One-way flow: ``graph`` (readers, build, artifact, stores) <- ``agent`` (environment, policies, eval) <-
``training``; the CLI modules are the top and nothing imports ``harness_g.cli``. Also: the wheel carries the
package data the commands need (the demo slice, the Cypher files, the browse assets, the training configs).
"""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers.paths import REPO_ROOT as ROOT

#: folder -> the harness_g subpackage it holds (pyproject.toml's package-dir)
FOLDERS = {"harness_g": "harness_g", "graph": "harness_g.graph", "agent": "harness_g.agent",
           "training": "harness_g.training"}
#: subpackage -> subpackages it must never import
FORBIDDEN = {
    "harness_g.graph": ("harness_g.agent", "harness_g.training", "harness_g.cli"),
    "harness_g.agent": ("harness_g.training", "harness_g.cli"),
    "harness_g.training": ("harness_g.cli",),
}


def _imports(path: Path) -> set[str]:
    """Every module name an ``import``/``from ... import`` in ``path`` names (module-level or inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("folder", ["graph", "agent", "training"])
def test_no_layer_imports_upwards(folder: str) -> None:
    banned = FORBIDDEN[FOLDERS[folder]]
    bad = [f"{p.relative_to(ROOT)}: {name}" for p in _modules(folder) for name in sorted(_imports(p))
           if any(name == b or name.startswith(b + ".") for b in banned)]
    assert not bad, "imports against DESIGN.md's one-way flow:\n" + "\n".join(bad)


def test_nothing_imports_the_top_level_cli() -> None:
    users = [str(p.relative_to(ROOT)) for folder in FOLDERS for p in _modules(folder)
             if "harness_g.cli" in _imports(p) and p.name != "__main__.py"]
    assert users == [], f"harness_g.cli is the program's top; shared CLI helpers live in harness_g.cli_args: {users}"


def test_every_subpackage_folder_is_packaged() -> None:
    """A folder with an ``__init__.py`` under graph/, agent/ or training/ that pyproject.toml does not list would be
    importable from a checkout and missing from a fresh install (the wheel)."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = {setuptools["package-dir"].get(name, name.replace(".", "/")): name for name in setuptools["packages"]}
    folders = sorted(str(p.parent.relative_to(ROOT)) for folder in ("graph", "agent", "training")
                     for p in (ROOT / folder).rglob("__init__.py") if "__pycache__" not in p.parts)
    missing = [f for f in folders if f not in listed]
    assert not missing, f"packages missing from pyproject.toml's [tool.setuptools] packages/package-dir: {missing}"


def test_the_wheel_carries_the_package_data(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("harness_g-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("harness_g/examples/hotpotqa-dev-slice/hotpot_dev_distractor_v1.slice.json",
                   "harness_g/cypher/lookup_candidates_multi.cypher", "harness_g/cypher/entities_of_sentences.cypher",
                   "harness_g/agent/browse_assets/vis-network.min.js", "harness_g/training/configs/tiny-cpu.yaml",
                   "harness_g/graph/stores/neo4j_launcher/pom.xml", "harness_g/registry.py", "harness_g/cli_args.py",
                   "harness_g/agent/integrations/openenv_server.py"):
        assert needed in names, f"{needed} missing from {wheel.name}"
    # the demo finds its slice next to the installed package, not through the repository
    from harness_g import cli

    assert cli.EXAMPLE_DIR.parent.parent == Path(cli.__file__).resolve().parent
