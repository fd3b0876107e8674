"""The README walk (scripts/readme_walk.py, run by CI after the suite) covers every command the README shows: each one
runs, shrunk only as the script's docstring documents, or is skipped with a stated reason. Pure: runs nothing."""
from __future__ import annotations

import shlex
from pathlib import Path

from helpers.paths import REPO_ROOT as ROOT
from helpers.readme_code import load_readme_walk


def _walk():
    return load_readme_walk()


def test_every_readme_command_is_walked_or_skipped_with_a_reason() -> None:
    walk = _walk()
    commands = walk.readme_commands(ROOT / "README.md")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(commands) >= 15 and text.count("harness-g ") >= sum("harness-g" in c for _, c in commands)
    steps = walk.plan(commands, shared_ok=False)
    assert len(steps) == len(commands)
    for step in steps:
        assert step.argv is not None or step.why, step.text
    run = [shlex.join(s.argv) for s in steps if s.argv is not None]
    skipped = {s.text.split()[0] for s in steps if s.argv is None}
    assert skipped <= {".", "bash", "docker", "ray", "harness-g"}  # only the documented skips
    # the documented shrinks: the shipped slice instead of ../shared, one question for LLM evals, one training step
    assert not any("../shared/" in r for r in run) and any(walk.SLICE in r for r in run)
    llm = [r for r in run if " eval " in f" {r} " and ("--policy transformers" in r or "--policy openai" in r)]
    assert llm and all("--limit 1" in r and "--max-turns 2" in r for r in llm)
    trains = [r for r in run if "harness_g.training" in r or r.startswith("harness-g train --config") and "--show-config" not in r]
    assert trains and all("optim.steps=1" in r for r in trains)
    # the held-out questions are kept (the run records them) and an eval of a shortened run plays its last checkpoint
    assert not any("data.eval_questions=0" in r for r in trains)
    heldout = [r for r in run if " eval " in f" {r} " and "--model runs/tiny/" in r]
    assert heldout and all("--model runs/tiny/checkpoint-1 " in r for r in heldout)
    # nothing of the checkout: packaged configs by name, the slice from the installed package
    assert not any("training/configs" in r or "tests/data" in r for r in run)
    assert Path(walk.SLICE).is_file() and Path(walk.SLICE).is_absolute()
    paper = [s for s in steps if s.argv and "qwen2.5-3b-paper" in shlex.join(s.argv)]
    assert paper and all(s.argv[-1] == "--show-config" and "data.graph_dir=graphs/2wiki" in shlex.join(s.argv)
                         for s in paper)
    # Cypher's $params reach the command as bash passes them (no backslash)
    assert any("{name: $n}" in r for r in run)
    # servers that run until stopped are started in the background and stopped by the walk, never waited on
    serve = [s for s in steps if s.argv and s.argv[:2] == ["harness-g", "serve-env"]]
    assert serve and all(s.background == "serve-env" and "&" not in s.argv for s in serve)


def test_readme_commands_join_continuations_and_drop_comments(tmp_path: Path) -> None:
    walk = _walk()
    readme = tmp_path / "README.md"
    readme.write_text('text\n```bash\n# a comment\nharness-g stats g   # trailing\nharness-g build --format x \\\n'
                      '    --out "a b"\n```\n```python\nnot = "a command"\n```\n', encoding="utf-8")
    assert walk.readme_commands(readme) == [(4, "harness-g stats g"), (5, "harness-g build --format x --out 'a b'")]


def test_a_2wiki_input_walks_with_the_packaged_2wiki_slice() -> None:
    """README "Adding documents" builds from 2Wiki, then appends HotpotQA: each ``../shared`` file becomes the packaged
    slice of its own dataset (the hotpot slice would not read as 2wiki)."""
    walk = _walk()
    commands = [(1, "harness-g build --format 2wiki --input ../shared/data/2wikimultihopqa/dev.subset.json --out g"),
                (2, "harness-g build --append --format hotpotqa --input ../shared/data/hotpotqa/x.json --out g")]
    first, second = walk.plan(commands, shared_ok=False)
    assert first.argv[first.argv.index("--input") + 1] == walk.SLICE_2WIKI and Path(walk.SLICE_2WIKI).is_file()
    assert second.argv[second.argv.index("--input") + 1] == walk.SLICE
    run = [shlex.join(s.argv) for s in walk.plan(walk.readme_commands(ROOT / "README.md"), shared_ok=False) if s.argv]
    assert any("--append" in r and walk.SLICE in r for r in run) and any(walk.SLICE_2WIKI in r for r in run)
