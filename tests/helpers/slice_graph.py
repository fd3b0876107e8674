"""The packaged 2Wiki dev slice built as a training graph (the benchmark scripts' end-to-end tests run on it)."""
from __future__ import annotations

from pathlib import Path

from helpers.paths import REPO_ROOT

#: the 2Wiki dev slice shipped in the package (harness_g/examples)
SLICE_2WIKI = REPO_ROOT / "harness_g" / "examples" / "2wiki-dev-slice" / "dev.subset.json"


def build_2wiki_slice(graph: Path, store: str | None) -> None:
    """Build the slice into ``graph`` (paper preset) and load it into ``store`` (None: the embedded FalkorDB)."""
    from harness_g.training.config import load_config
    from harness_g.training.data import build_training_graph

    build_training_graph(load_config(None, {"data.graph_dir": str(graph), "data.store": store, "data.build_format": "2wiki",
                                            "data.build_input": str(SLICE_2WIKI), "model.name": "tiny-random"}))
