"""harness-g: graph-structured menu environment for RL search agents.

Subpackages: ``harness_g.graph`` (readers, text processing, artifact, stores),
``harness_g.cypher`` (named queries), ``harness_g.agent`` (menu environment, policies,
evaluation), ``harness_g.training`` (GRPO + SNC).

For notebooks: ``harness_g.load_run(RUN_DIR)``, ``harness_g.load_training(RUN_DIR)`` and
``harness_g.open_graph(GRAPH_DIR)`` hand eval runs, training runs and graph artifacts over as pandas DataFrames
(:mod:`harness_g.notebook`, imported on first use: ``import harness_g`` stays light).
"""
import os as _os

__version__ = "0.1.0"


def _checkout_subpackages() -> None:
    """In a source checkout the subpackages live beside this folder, not in it (pyproject's ``package-dir``:
    ``agent/``, ``graph/``, ``training/``, ``cypher/``). Imported from the checkout's root (``python -m harness_g``
    there, where the current directory comes first on ``sys.path``), this folder shadows an installed copy and would
    lack them; so the root joins ``__path__`` and ``harness_g.agent`` resolves to ``agent/``. An installed package
    (its subpackages inside) and an editable install (its finder maps them) are left as they are."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    root = _os.path.dirname(here)
    if (not _os.path.isdir(_os.path.join(here, "agent"))
            and _os.path.isfile(_os.path.join(root, "agent", "__init__.py"))
            and _os.path.isfile(_os.path.join(root, "pyproject.toml"))):
        __path__.append(root)  # noqa: F821 - a package's own __path__


_checkout_subpackages()

#: names served lazily from :mod:`harness_g.notebook` (which imports pandas)
_NOTEBOOK = ("load_run", "load_training", "open_graph")


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute hook
    if name in _NOTEBOOK:
        from harness_g import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'harness_g' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_NOTEBOOK])
