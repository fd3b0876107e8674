"""Commands that work from any directory (issue 32 items 2 and 4): the packaged training configs are addressed by name
from a directory outside the checkout, write only under the run's ``--out`` (their graph is built in RUN_DIR/graph,
their input is package data), and ``eval --model RUN_DIR/checkpoint-N --out DIR`` without GRAPH_DIR reproduces the
trainer's own final evaluation: the run's graph and its held-out questions. Real runs of the tiny random model on the
embedded FalkorDB (the packaged config's store)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.paths import REPO_ROOT


def _checkout_changes() -> set[str]:
    """Files git sees as new or changed in the checkout (ignored ones included: a graph written into ``graphs/``
    would be ignored, not absent), caches aside."""
    out = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout
    return {line[3:] for line in out.splitlines()
            if "__pycache__" not in line and ".pytest_cache" not in line and not line[3:].startswith(".venv/")}


def test_configs_lists_the_packaged_ones_and_refuses_an_unknown_name(capsys) -> None:
    rc, out, _ = run(capsys, "configs")
    assert rc == 0
    names = {line.split()[0]: Path(line.split()[1]) for line in out.splitlines()}
    assert {"tiny-cpu", "smollm2-lora-cpu", "qwen2.5-3b-paper", "accelerate/ddp"} <= set(names)
    assert all(p.is_file() and p.suffix == ".yaml" for p in names.values())
    rc, out, _ = run(capsys, "configs", "--path", "accelerate/ddp")
    assert rc == 0 and Path(out.strip()) == names["accelerate/ddp"]
    rc, _, err = run(capsys, "train", "--config", "tiny-gpu", "--out", "run")
    assert_one_line_error(rc, err, "--config tiny-gpu: no such file, and no packaged config of that name", "tiny-cpu")
    rc, _, err = run(capsys, "configs", "--path", "tiny-gpu")
    assert_one_line_error(rc, err, "--path tiny-gpu: no such file, and no packaged config of that name")


def test_the_readme_walk_expands_a_command_substitution_as_the_shell_does(tmp_path) -> None:
    """The README's ``--config_file "$(harness-g configs --path accelerate/ddp)"``: the walk runs the inner command."""
    from helpers.readme_code import load_readme_walk

    argv = load_readme_walk().Walk(tmp_path)._rewrite(["accelerate", "--config_file", "$(harness-g configs --path accelerate/ddp)"])
    assert argv[:2] == ["accelerate", "--config_file"]
    assert Path(argv[2]).name == "ddp.yaml" and Path(argv[2]).is_file()


def test_a_python_caller_is_told_to_name_the_run_graph(tmp_path) -> None:
    from harness_g.errors import ConfigError
    from harness_g.training.config import load_config
    from harness_g.training.data import build_training_graph

    config = load_config(None, {"data.build_format": "2wiki", "data.build_input": str(tmp_path / "q.json")})
    with pytest.raises(ConfigError, match="data.graph_dir is empty.*with_run_graph"):
        build_training_graph(config)


def test_the_paper_recipe_without_a_graph_names_what_to_give(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(capsys, "train", "--config", "qwen2.5-3b-paper", "--show-config")
    assert rc == 0 and "preset: 'paper'" in out
    rc, _, err = run(capsys, "train", "--config", "qwen2.5-3b-paper", "--out", "runs/qwen")
    assert_one_line_error(rc, err, "data.graph_dir is empty", "--set data.graph_dir=DIR")
    assert not (tmp_path / "runs").exists()  # refused before the run directory is written


@pytest.mark.slow
def test_a_packaged_config_trains_from_any_directory_and_eval_finds_the_run_split(tmp_path, capsys, monkeypatch) -> None:
    before = _checkout_changes()
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(capsys, "train", "--config", "tiny-cpu", "--out", "runs/tiny", "-q", "--set", "optim.steps=1",
                     "--set", "log.eval_train_questions=0")
    assert rc == 0, err
    run_dir = tmp_path / "runs" / "tiny"
    assert (run_dir / "graph" / "manifest.json").is_file()  # the graph is built under --out ...
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # ... nothing else in the working directory ...
    assert _checkout_changes() == before  # ... and nothing in the checkout (the installed package)

    rc, _, err = run(capsys, "eval", "--policy", "transformers", "--model", "runs/tiny/checkpoint-1", "--out", "ev", "-q")
    assert rc == 0, err
    assert "held-out questions" in err and str(run_dir / "heldout_ids.txt") in err
    records = [json.loads(line) for line in (tmp_path / "ev" / "records.jsonl").read_text().splitlines()]
    held_out = (run_dir / "heldout_ids.txt").read_text().split()
    assert [r["id"] for r in records] == held_out and len(held_out) == 2
    (after,) = [r for r in map(json.loads, (run_dir / "eval.jsonl").read_text().splitlines())
                if r["tag"] == "after" and r["split"] == "heldout"]
    assert {r["id"]: r["prediction"] for r in records} == {qid: answer for _, answer, _, qid in after["answers"]}

    # GRAPH_DIR given: every question of that graph, as before
    rc, _, err = run(capsys, "eval", str(run_dir / "graph"), "--policy", "transformers", "--model",
                     "runs/tiny/checkpoint-1", "--out", "ev-all", "-q")
    assert rc == 0, err
    n_all = len((tmp_path / "ev-all" / "records.jsonl").read_text().splitlines())
    assert n_all > len(held_out)
