"""Presets on real graphs: the session's HotpotQA test graph is built under the paper preset (the default); an
environment of the extended preset refuses it with a one-line error naming the differing rule (``MenuEnv``, and so
``eval``/``ask``/training), while the extensions set explicitly run on it; a build under ``--preset extended``
records its preset and each value's source in the manifest and reproduces the content hash the code had before
presets. The preset tables themselves: tests/unit/test_presets.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.presets import extended_env

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.config import EnvConfig, check_graph_preset
from harness_g.errors import ConfigError
from harness_g.graph.artifact import Artifact
from harness_g.graph.build import CorpusSpec, build_graph

from graph_fixtures import HOTPOT_FILE


def test_an_extended_environment_refuses_the_paper_graph_naming_the_rule(hotpot_view, hotpot_questions) -> None:
    manifest = hotpot_view.artifact.manifest
    assert manifest["config"]["preset"] == "paper" and manifest["config_sources"]["title_mentions"] == "preset paper"
    with pytest.raises(ConfigError) as info:
        MenuEnv(hotpot_view, EnvConfig(preset="extended"))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{hotpot_view.artifact.path}: graph built under preset paper")
    assert "(title_mentions=false), environment preset extended (title_mentions=true)" in message
    assert "rebuild the graph with --preset extended, or run with --preset paper" in message
    # every menu extension set explicitly runs on the paper graph (none needs a build rule of its own)
    env = MenuEnv(hotpot_view, extended_env())
    env.reset(hotpot_questions[0])
    assert env.config.article_pool and env.config.answer_with_max == 2 and env.menu.actions


def test_eval_under_the_other_preset_is_a_one_line_error_and_writes_no_records(hotpot_dir: Path, tmp_path: Path,
                                                                                 capsys) -> None:
    out = tmp_path / "run"
    rc, _, err = run(capsys, "eval", hotpot_dir, "--out", out, "--preset", "extended", "-q")
    assert_one_line_error(rc, err, "graph built under preset paper (title_mentions=false)", "--preset paper")
    assert not (out / "records.jsonl").exists()
    rc, stdout, err = run(capsys, "eval", hotpot_dir, "--out", out, "--limit", "1", "-q")  # the default preset runs
    assert rc == 0, err
    written = json.loads((out / "config.json").read_text())
    assert written["env"]["preset"] == "paper" and written["config_sources"]["env.article_pool"] == "preset paper"


def test_a_build_records_its_preset_and_an_environment_of_the_other_preset_refuses_it(tmp_path: Path, capsys) -> None:
    out = {}
    for preset in ("paper", "extended"):
        out[preset] = tmp_path / preset
        rc, _, err = run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", out[preset],
                         "--limit", "2", "--no-load", "-q", "--preset", preset)
        assert rc == 0, err
    paper, extended = (Artifact.open(out[p]).manifest for p in ("paper", "extended"))
    assert paper["config"]["preset"] == "paper" and extended["config"]["preset"] == "extended"
    assert extended["config_sources"]["join_fragments"] == "preset extended" and extended["config"]["join_fragments"]
    assert paper["content_hash"] != extended["content_hash"]
    check_graph_preset(extended, EnvConfig(preset="extended"))
    with pytest.raises(ConfigError, match="graph built under preset extended \\(title_mentions=true\\)"):
        check_graph_preset(extended, EnvConfig())
    # the paper build keeps the datasets' own sentences: more (unjoined) sentences, no 'alias' links
    assert paper["counts"]["sentences"] >= extended["counts"]["sentences"]
    assert "alias" not in paper["synonym_kinds"]
    # a rule set explicitly is the builder's choice: accepted by an environment of either preset
    from harness_g.graph.config import BuildConfig

    build_graph([CorpusSpec("hotpotqa", HOTPOT_FILE)], tmp_path / "mixed",
                BuildConfig(title_mentions=True), limit=2, progress=False)
    mixed = Artifact.open(tmp_path / "mixed").manifest
    assert mixed["config_sources"]["title_mentions"] == "set"
    check_graph_preset(mixed, EnvConfig())
