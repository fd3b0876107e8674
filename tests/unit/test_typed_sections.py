"""Issue 33 item 5: a train config's ``rollout.env`` is a typed :class:`EnvConfig` section (its preset the top-level
``preset``, its T ``rollout.max_turns``), and an eval config's LLM policy settings are a typed section
(``eval.llm``, :class:`PolicyConfig`) that the CLI flags fill. Pure: no graph, no model, no database (the eval run
that writes config.json: tests/e2e/test_config_cli.py)."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import pytest
from helpers.paths import PAPER_CONFIG

from harness_g import config_loader as L
from harness_g.agent.config import EvalRunConfig, load_agent_config
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.config import EvalConfig, PolicyConfig
from harness_g.cli import main
from harness_g.config_diff import differences
from harness_g.errors import ConfigError
from harness_g.training.config import RolloutConfig, TrainConfig, load_config

BASE = {"data.graph_dir": "/graphs/g"}


def _show(argv: list[str], capsys) -> list[str]:
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


# -- rollout.env --------------------------------------------------------------------------------------------------
def test_rollout_env_is_an_env_config_under_the_run_s_preset_and_t() -> None:
    cfg = load_config(None, {**BASE, "preset": "extended", "rollout.max_turns": "3", "rollout.env.visible_cap": "4"})
    assert isinstance(cfg.rollout.env, EnvConfig)
    assert cfg.rollout.env == EnvConfig(preset="extended", max_turns=3, visible_cap=4) == cfg.env_config()
    # direct construction derives the same two keys
    assert TrainConfig(preset="extended").rollout.env == EnvConfig(preset="extended")
    assert TrainConfig(rollout=RolloutConfig(max_turns=2)).rollout.env == EnvConfig(max_turns=2)
    with pytest.raises(ConfigError, match=r"^rollout.env.preset 'paper' and preset 'extended' disagree \(rollout.env "
                                          r"sets visible_cap\)"):
        TrainConfig(preset="extended", rollout=RolloutConfig(env=EnvConfig(visible_cap=3)))


def test_an_unknown_or_derived_rollout_env_key_is_one_line_naming_it_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text("data: {graph_dir: g}\nrollout: {env: {visible_cap: 4, lookup_capp: 3}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: rollout.env: unknown env config field(s): lookup_capp; known: preset, ")
    for text, message in (("{max_turns: 4}", "rollout.env.max_turns: set rollout.max_turns instead"),
                          ("{preset: extended}", "rollout.env.preset: set the top-level preset instead")):
        path.write_text(f"data: {{graph_dir: g}}\nrollout: {{env: {text}}}\n")
        with pytest.raises(ConfigError, match=f"^{path}: {message}"):
            load_config(path)
    # the same values as derived are accepted
    path.write_text("preset: extended\ndata: {graph_dir: g}\nrollout: {max_turns: 4, env: {max_turns: 4, preset: extended}}\n")
    assert load_config(path).rollout.env == EnvConfig(preset="extended", max_turns=4)


def test_set_show_config_and_the_written_config_carry_rollout_env(tmp_path: Path, capsys) -> None:
    lines = _show(["train", "--config", str(PAPER_CONFIG), "--set", "rollout.env.lookup_cap=5", "--preset", "extended",
                   "--show-config"], capsys)
    env = lines[lines.index(next(line for line in lines if line.strip().startswith("env:  # "))) + 1:]
    assert env[0].startswith("    preset: 'extended'  # [from preset] ")
    assert env[1].startswith("    max_turns: 6  # [from rollout.max_turns] T: ")
    assert any(line.startswith("    lookup_cap: 5  # [set] K_e") for line in env)
    assert any(line.startswith("    article_pool: True  # [preset extended] ") for line in env)

    cfg = load_config(PAPER_CONFIG, {"rollout.env.lookup_cap": "5"}, preset="extended")
    cfg.save(tmp_path / "config.yaml")
    text = (tmp_path / "config.yaml").read_text()
    assert "#   rollout.env.max_turns: from rollout.max_turns\n" in text and "#   rollout.env.lookup_cap: set\n" in text
    written = L.read_yaml(tmp_path / "config.yaml")["rollout"]["env"]
    assert written["lookup_cap"] == 5 and written["article_pool"] is True
    assert "preset" not in written and "max_turns" not in written  # recorded at their sources
    assert load_config(tmp_path / "config.yaml") == cfg
    assert L.sources(cfg)["rollout.env.article_pool"] == "preset extended"
    # a written config runs again under another T and preset: the inherited keys follow their sources
    again = load_config(tmp_path / "config.yaml", {"rollout.max_turns": "2"}, preset="paper")
    assert (again.rollout.env.max_turns, again.rollout.env.preset, again.rollout.env.lookup_cap) == (2, "paper", 5)
    assert again.rollout.env.article_pool is True  # written into the file: now an explicit value


def test_a_resume_with_a_changed_rollout_env_value_is_refused(tmp_path: Path) -> None:
    from harness_g.training.resume import check_settings

    ckpt = tmp_path / "run" / "checkpoints" / "step-000001"
    ckpt.mkdir(parents=True)
    load_config(None, {**BASE, "rollout.env.visible_cap": 4}).save(tmp_path / "run" / "config.yaml")  # RUN_DIR's
    check_settings(ckpt, load_config(None, {**BASE, "rollout.env.visible_cap": 4}))  # the same settings: accepted
    with pytest.raises(ConfigError, match=r"rollout.env.answer_with_max: 1 -> 2.*rollout.env.visible_cap: 4 -> 6") as info:
        check_settings(ckpt, load_config(None, {**BASE, "rollout.env.answer_with_max": 2}))
    assert "\n" not in str(info.value)


def test_a_config_written_before_the_section_loads_to_the_same_environment(tmp_path: Path) -> None:
    """config.yaml of earlier runs: rollout.env held the preset-filled keys without preset and max_turns."""
    cfg = load_config(None, {**BASE, "rollout.max_turns": 2, "rollout.env.visible_cap": 3})
    old = cfg.to_dict()
    old["rollout"]["env"] = {k: v for k, v in old["rollout"]["env"].items() if k not in ("preset", "max_turns")}
    (tmp_path / "old.yaml").write_text(json.dumps(old))
    assert load_config(tmp_path / "old.yaml") == cfg
    assert differences(old, cfg.to_dict()) == []
    # a checkpoint of such a run resumes with the same settings (its config.yaml is read back through load_config)
    from harness_g.training.resume import check_settings

    ckpt = tmp_path / "run" / "checkpoints" / "step-000001"
    ckpt.mkdir(parents=True)
    (tmp_path / "run" / "config.yaml").write_text(json.dumps(old))
    check_settings(ckpt, cfg)


# -- eval.llm ------------------------------------------------------------------------------------------------------
def test_the_eval_config_holds_the_llm_settings_and_a_file_can_set_them(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text("eval: {policy: transformers, llm: {model: tiny-random, temperature: 0.5, max_new_tokens: 4}}\n")
    run = load_agent_config(EvalRunConfig, path, {"eval.llm.temperature": "0"})
    assert run.eval.llm == PolicyConfig(model="tiny-random", temperature=0.0, max_new_tokens=4)
    assert EvalConfig().llm == PolicyConfig() and PolicyConfig().model == "smollm2"
    for text, message in (("{api_key: sk-1}", r"eval.llm: unknown policy config field\(s\): api_key; known: model, "),
                          ("{temperature: -1}", r"eval.llm.temperature: must be >= 0.0, got -1.0"),
                          ("{max_new_tokens: 0}", r"eval.llm.max_new_tokens: must be >= 1, got 0")):
        path.write_text(f"eval: {{llm: {text}}}\n")
        with pytest.raises(ConfigError, match=f"^{path}: {message}") as info:
            load_agent_config(EvalRunConfig, path)
        assert "\n" not in str(info.value)


def test_the_llm_flags_fill_the_section_and_set_wins(tmp_path: Path, capsys) -> None:
    lines = _show(["eval", "--policy", "transformers", "--model", "tiny-random", "--temperature", "0.3", "--seed", "5",
                   "--constrain-actions", "--set", "eval.llm.temperature=0.1", "--show-config"], capsys)
    shown = {line.strip().split("  # ")[0]: line for line in lines if line.startswith("    ")}
    for key in ("model: 'tiny-random'", "temperature: 0.1", "seed: 5", "constrain_actions: True", "max_new_tokens: None",
                "api_key_env: 'OPENAI_API_KEY'"):
        assert key in shown, (key, lines)
    # no flag: the section's defaults, the same policy settings as before the section existed
    lines = _show(["eval", "--show-config"], capsys)
    assert any(line.startswith("    model: 'smollm2'  # [default] ") for line in lines)
    assert any(line.startswith("    constrain_actions: False  # [default] ") for line in lines)


def test_the_policy_factory_gets_the_section_and_only_the_key_s_variable_name(monkeypatch, request) -> None:
    """The eval section reaches the policy factory (a stand-in records its keyword arguments: the openai factory would
    ask a server first); the API key stays in the environment, config.json gets the variable's name."""
    from harness_g.agent import cli as agent_cli
    from harness_g.agent.policies import POLICIES, is_llm_policy

    seen: dict[str, dict] = {}

    def factory(**kwargs):
        seen["openai"] = kwargs
        return object()

    factory.llm = is_llm_policy(POLICIES.get("openai"))
    previous = POLICIES.replace("openai", factory)
    request.addfinalizer(lambda: POLICIES.replace("openai", previous))
    monkeypatch.setenv("HG_TEST_KEY", "sk-secret-value")
    run = load_agent_config(EvalRunConfig, None, {"eval.policy": "openai", "eval.llm.base_url": "http://127.0.0.1:9/v1",
                                                  "eval.llm.api_key_env": "HG_TEST_KEY", "eval.llm.seed": "3"})
    args = agent_cli._with_eval_settings(argparse.Namespace(policy=None, interface=None), run)
    agent_cli._make_policy(args)
    assert seen["openai"] == {"model": "smollm2", "base_url": "http://127.0.0.1:9/v1", "seed": 3,
                              "api_key_env": "HG_TEST_KEY"}
    recorded = json.dumps(asdict(run.eval))
    assert "HG_TEST_KEY" in recorded and "sk-secret-value" not in recorded
