"""`harness-g demo` (what the README's first command runs after setup): builds the shipped HotpotQA slice into the
embedded store, prints stats and one menu, and runs the heuristic policy on it."""
import pytest

from harness_g.cli import main


@pytest.mark.slow
def test_demo_builds_shows_stats_and_a_menu(tmp_path, capsys):
    out_dir = tmp_path / "demo-graph"
    assert main(["demo", "--out", str(out_dir), "-q"]) == 0
    out = capsys.readouterr().out
    assert "== 2. stats" in out and "Sentence" in out and "sentence_embedding" in out
    assert "[Step 1/6]" in out and "A0 = SELECT S0" in out and "= ANSWER" in out
    assert "heuristic policy" in out and (out_dir / "manifest.json").exists()
