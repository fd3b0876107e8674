"""The package's layering, as DESIGN.md states it, checked on the source (pure: no database, no model).

One-way flow: ``graph`` (readers, build, artifact, stores) <- ``agent`` (environment, policies, eval) <-
``training``; the CLI modules are the top and nothing imports ``harness_g.cli``. Inside ``agent/`` (DESIGN.md
"Inside agent/"): ``env`` <- ``policies`` <- ``eval``, ``llm`` <- ``policies``, ``eval``; the CLI, the config files and
the integrations on top. Also: the wheel carries the package data the commands need (the demo slice, the Cypher
files, the browse assets, the training configs).
"""
from __future__ import annotations

import ast
import os
import shutil
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

#: agent/'s top: modules that assemble the layers below (nothing under agent/env, llm, policies or eval imports them)
AGENT_TOP = ("harness_g.agent.cli", "harness_g.agent.config", "harness_g.agent.demo", "harness_g.agent.integrations")
#: agent/ sub-package folder -> what its modules must never import (TYPE_CHECKING and function-level imports included)
AGENT_FORBIDDEN = {
    "env": ("harness_g.agent.policies", "harness_g.agent.llm", "harness_g.agent.eval", *AGENT_TOP),
    "llm": ("harness_g.agent.env", "harness_g.agent.policies", "harness_g.agent.eval", *AGENT_TOP),
    "policies": ("harness_g.agent.eval", *AGENT_TOP),
    "eval": AGENT_TOP,
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


def _banned(names: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == b or n.startswith(b + ".") for b in banned))


@pytest.mark.parametrize("layer", sorted(AGENT_FORBIDDEN))
def test_agent_layers_import_only_downwards(layer: str) -> None:
    bad = [f"{p.relative_to(ROOT)}: {name}" for p in _modules(f"agent/{layer}")
           for name in _banned(_imports(p), AGENT_FORBIDDEN[layer])]
    assert not bad, "imports against DESIGN.md's agent/ layers:\n" + "\n".join(bad)


def test_agent_has_no_module_outside_a_layer() -> None:
    """A new module goes into env/, llm/, policies/ or eval/ (or is one of the top's): agent/ is not flat again."""
    loose = sorted(p.name for p in (ROOT / "agent").glob("*.py"))
    assert loose == ["__init__.py", "cli.py", "config.py", "demo.py"], loose


def test_importing_the_environment_loads_nothing_above_it() -> None:
    """At run time too (lazy imports and the config registries' string targets): the env package and an EnvConfig
    load no module of llm/, policies/, eval/ or the top; an EvalConfig's name checks load no module of the top."""
    code = ("import sys\nfrom harness_g.agent.env import EnvConfig, MenuEnv\nEnvConfig(preset='extended')\n"
            "env = sorted(m for m in sys.modules if m.startswith('harness_g.agent.'))\n"
            "from harness_g.agent.eval.config import EvalConfig\nEvalConfig(policy='lookahead', interface='free_query')\n"
            "ev = sorted(m for m in sys.modules if m.startswith('harness_g.agent.'))\nprint(repr((env, ev)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env, ev = eval(proc.stdout.strip().splitlines()[-1])
    assert env and all(m.startswith("harness_g.agent.env") for m in env), env
    assert "harness_g.agent.eval.interfaces" in ev and not _banned(set(ev), AGENT_TOP), ev


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


def _clean_copy(dst: Path) -> Path:
    """The checkout's files as a fresh clone holds them (tracked and untracked-not-ignored, no ``build/``: setuptools
    reuses a stale ``build/lib`` and would ship files the tree no longer has)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
        elif src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            (dst / rel).symlink_to(os.readlink(src))
    return dst


def test_the_wheel_carries_the_package_data(tmp_path: Path) -> None:
    src = _clean_copy(tmp_path / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(tmp_path), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("harness_g-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("harness_g/examples/hotpotqa-dev-slice/hotpot_dev_distractor_v1.slice.json",
                   "harness_g/cypher/lookup_candidates_multi.cypher", "harness_g/cypher/entities_of_sentences.cypher",
                   "harness_g/agent/eval/browse_assets/vis-network.min.js", "harness_g/training/configs/tiny-cpu.yaml",
                   "harness_g/graph/stores/neo4j_launcher/pom.xml", "harness_g/registry.py", "harness_g/cli_args.py",
                   "harness_g/agent/integrations/openenv_server.py"):
        assert needed in names, f"{needed} missing from {wheel.name}"
    shipped = {n for n in names if n.endswith(".cypher")}
    assert shipped and not [n for n in shipped if n.rsplit("/", 1)[1] in {
        "lookup_candidates.cypher", "sentence_neighbours.cypher", "sentences_mentioning.cypher", "synonyms_of.cypher"}]
    # the demo finds its slice next to the installed package, not through the repository
    from harness_g import cli

    assert cli.EXAMPLE_DIR.parent.parent == Path(cli.__file__).resolve().parent
