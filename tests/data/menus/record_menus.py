"""Write the menu fixtures tests/data/menus/hotpotqa-dev-slice.{paper,extended}.json (tests/helpers/menu_record.py).

Usage (from the repository root, with the code whose menus are the reference checked out):
``python tests/data/menus/record_menus.py [WORK_DIR]``: builds the packaged slice under each preset into WORK_DIR
(default: a temporary directory; a kept WORK_DIR makes a re-run a cache hit), loads it into an embedded FalkorDB,
plays the lookahead policy on every question and writes the fixture. Re-record only when a menu change is intended.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for helpers

from helpers.menu_record import PRESETS, build_slice, fixture_path, record_menus  # noqa: E402

from harness_g.agent.env.graph_view import GraphView  # noqa: E402
from harness_g.graph.artifact import Artifact  # noqa: E402
from harness_g.graph.load import load_graph  # noqa: E402


def main(work: Path) -> None:
    for preset in PRESETS:
        graph_dir = build_slice(work / preset, preset)
        store, _ = load_graph(graph_dir, progress=False)
        try:
            artifact = Artifact.open(graph_dir)
            record = record_menus(GraphView(store, artifact), artifact.questions(), preset)
        finally:
            store.close()
        out = fixture_path(preset)
        out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{out}: {len(record['episodes'])} episodes")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
