"""`harness-g demo` (what the README's first command runs after setup): builds the shipped HotpotQA slice into the
embedded store, prints stats and one menu, and runs the heuristic policy on it."""
import re

import pytest
from helpers.paths import REPO_ROOT

from harness_g.cli import main


@pytest.mark.slow
def test_demo_builds_shows_stats_and_a_menu(tmp_path, capsys):
    out_dir = tmp_path / "demo-graph"
    assert main(["demo", "--out", str(out_dir), "-q"]) == 0
    out = capsys.readouterr().out
    assert "== 2. stats" in out and "Sentence" in out and "sentence_embedding" in out
    assert "[Step 1/6]" in out and "A0 = SELECT S0" in out and "= ANSWER" in out
    assert "heuristic policy" in out and (out_dir / "manifest.json").exists()
    # step 4 shows what each action did in words: sentence texts and entity names, not raw ids
    step4 = out.split("== 4.")[1]
    assert "   1. SELECT [" in step4 and "LOOKUP entity: " in step4 and "answer '" in step4
    assert not re.search(r"\b[pe]_[0-9a-f]{16}", step4)


def test_the_wheel_ships_the_demo_slice_the_queries_and_the_neo4j_launcher(tmp_path):
    """`harness-g demo` must work from a wheel install: the example slice is package data, found next to the CLI
    module (not through the repository layout), as are every Cypher file and the Neo4j launcher's sources."""
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    from harness_g import cli

    root = REPO_ROOT
    assert cli.EXAMPLE_DIR.is_relative_to(Path(cli.__file__).resolve().parent)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
                    str(root)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("harness_g-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "harness_g/examples/hotpotqa-dev-slice/hotpot_dev_distractor_v1.slice.json" in names
    cypher = {f"harness_g/cypher/{p.relative_to(root / 'cypher')}" for p in (root / "cypher").rglob("*.cypher")}
    assert cypher and cypher <= names
    assert "harness_g/graph/stores/neo4j_launcher/pom.xml" in names
    assert {f"harness_g/agent/eval/browse_assets/{f}" for f in ("vis-network.min.js", "page.js", "page.css", "LICENSE-MIT")} <= names
    requires = [line for line in zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("METADATA"))).decode().splitlines() if line.startswith("Requires-Dist:")]
    assert any(line.startswith("Requires-Dist: transformers") for line in requires)  # imported by the policies
