"""harness-g: graph-structured menu environment for RL search agents.

Subpackages: ``harness_g.graph`` (readers, text processing, artifact, stores),
``harness_g.cypher`` (named queries), ``harness_g.agent`` (menu environment, policies,
evaluation), ``harness_g.training`` (GRPO + SNC).

For notebooks: ``harness_g.load_run(RUN_DIR)``, ``harness_g.load_training(RUN_DIR)`` and
``harness_g.open_graph(GRAPH_DIR)`` hand eval runs, training runs and graph artifacts over as pandas DataFrames
(:mod:`harness_g.notebook`, imported on first use: ``import harness_g`` stays light).
"""
__version__ = "0.1.0"

#: names served lazily from :mod:`harness_g.notebook` (which imports pandas)
_NOTEBOOK = ("load_run", "load_training", "open_graph")


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute hook
    if name in _NOTEBOOK:
        from harness_g import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'harness_g' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_NOTEBOOK])
