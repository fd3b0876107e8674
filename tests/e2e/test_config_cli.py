"""``--config`` / ``--set`` / ``--show-config`` on `harness-g build` and `harness-g eval` (in-process), and the
resolved config each run writes (build: the manifest; eval: the run directory's config.json)."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli_checks import assert_one_line_error, run

from harness_g.agent.config import EvalRunConfig
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.config import EvalConfig
from harness_g.graph.artifact import Artifact
from harness_g.graph.config import BuildConfig

from graph_fixtures import HOTPOT_FILE


def test_build_set_wins_over_the_file_and_the_manifest_holds_the_resolved_config(tmp_path: Path, capsys) -> None:
    config = tmp_path / "build.yaml"
    config.write_text("link_top_k: 4\nlink_min_cosine: 0.9\n")
    common = ["--config", config, "--set", "link_top_k=2", "--device", "cpu"]
    rc, stdout, err = run(capsys, "build", *common, "--show-config")
    assert rc == 0, err
    assert "link_top_k: 2  # " in stdout and "link_min_cosine: 0.9  # " in stdout and "device: 'cpu'  # " in stdout

    out = tmp_path / "g"
    rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--limit", "1",
                          "--no-load", "-q", *common)
    assert rc == 0, err
    expected = BuildConfig(link_top_k=2, link_min_cosine=0.9, device="cpu")
    assert BuildConfig.from_dict(Artifact.open(out).manifest["config"]) == expected  # every field, as resolved

    rc, _, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out, "--set", "link_top_k=many")
    assert_one_line_error(rc, err, "link_top_k: expected int, got 'many'")
    rc, _, err = run(capsys, "build", "--out", out, "--set", "chunks=3")
    assert_one_line_error(rc, err, "unknown build config field(s): chunks; known: preset, embedding_model")


def test_eval_set_wins_over_the_file_and_config_json_loads_back(falkordb_hotpot_view, hotpot_graph_dir: Path,
                                                                  hotpot_questions, tmp_path: Path, capsys) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("eval: {limit: 3}\nenv: {max_turns: 4, visible_cap: 5}\n")
    common = ["--config", config, "--set", "eval.limit=1", "--set", "env.max_turns=2"]
    rc, stdout, err = run(capsys, "eval", *common, "--show-config")
    assert rc == 0, err
    assert "  limit: 1  # " in stdout and "  max_turns: 2  # " in stdout and "  visible_cap: 5  # " in stdout

    out = tmp_path / "run"
    rc, stdout, err = run(capsys, "eval", hotpot_graph_dir, "--out", out, "-q", *common)
    assert rc == 0, err
    written = json.loads((out / "config.json").read_text())
    resolved = EvalRunConfig.from_dict({"eval": written["eval"], "env": written["env"]})
    assert resolved == EvalRunConfig(eval=EvalConfig(limit=1), env=EnvConfig(max_turns=2, visible_cap=5))
    [record] = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert record["id"] == hotpot_questions[0].id and record["metrics"]["turns"] <= 2

    flat = tmp_path / "env.yaml"  # --env-config: the same flag, an env file is the env section
    flat.write_text("visible_cap: 0\n")
    rc, _, err = run(capsys, "eval", hotpot_graph_dir, "--out", tmp_path / "bad", "--env-config", flat)
    assert_one_line_error(rc, err, f"{flat}: env.visible_cap: must be >= 1, got 0")
    rc, _, err = run(capsys, "eval", hotpot_graph_dir, "--out", tmp_path / "bad", "--set", "eval.limit=all")
    assert_one_line_error(rc, err, "eval.limit: expected int or null, got 'all'")
    assert not (tmp_path / "bad").exists()


def test_eval_records_the_llm_section_without_secrets_and_a_changed_setting_refuses_the_resume(
        falkordb_hotpot_view, hotpot_graph_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    """``eval.llm`` (the LLM flags' section) is in config.json; the API key is not, only its variable's name."""
    monkeypatch.setenv("HG_TEST_KEY", "sk-secret-value-123")
    out = tmp_path / "run"
    common = [hotpot_graph_dir, "--out", out, "-q", "--limit", "1", "--set", "eval.llm.api_key_env=HG_TEST_KEY"]
    rc, _, err = run(capsys, "eval", *common, "--model", "m1", "--temperature", "0.2")
    assert rc == 0, err
    text = (out / "config.json").read_text()
    assert "sk-secret-value-123" not in text
    written = json.loads(text)
    assert written["eval"]["llm"] == {"model": "m1", "base_url": None, "api_key_env": "HG_TEST_KEY", "temperature": 0.2,
                                      "seed": None, "max_new_tokens": None, "constrain_actions": False,
                                      "prefix_cache": True}
    assert EvalRunConfig.from_dict({"eval": written["eval"], "env": written["env"]}).eval.llm.model == "m1"
    rc, _, err = run(capsys, "eval", *common, "--model", "m1", "--temperature", "0.7")
    assert_one_line_error(rc, err, "eval.llm.temperature: 0.2 -> 0.7")
