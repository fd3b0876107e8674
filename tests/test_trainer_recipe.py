"""The paper's training recipe and the trainer's config semantics.

- the paper config resolves to every row of the hyper-parameter table (harness-g.tex Table tab:hyper);
- batch / mini-batch count questions: 128 questions per step, updates of all the sequences of 32 questions;
- every config value is parsed by its field's type and range-checked (``--set optim.lr=1e-6`` is a float);
- ``drop_zero_advantage_groups`` drops whole zero-advantage groups, never single rollouts of a live group;
- a reply cut at its token limit trains no end-of-turn token;
- ``credit.answerer`` picks the frozen answerer.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

from harness_g.errors import ConfigError
from harness_g.training.config import ModelConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
PAPER_CONFIG = ROOT / "training" / "configs" / "qwen2.5-3b-paper.yaml"
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
    assert "kl_estimator: 'k3'  # KL estimator: k3 = the low-variance KL" in capsys.readouterr().out


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


def _trainer(tmp_path: Path, **overrides):
    from harness_g.training.trainer import Trainer

    cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": str(tmp_path / "unused"),
                             "log.tensorboard": False, **overrides})
    return Trainer(cfg, tmp_path / "run", progress=False)


def test_paper_batch_is_128_questions_in_4_updates_of_32(tmp_path):
    """Batch size / mini-batch 128 / 32 (harness-g.tex l.953): 128 questions x 8 rollouts per step, and each
    optimiser update takes all the sequences of 32 questions (4 updates), however many turns the rollouts took."""
    paper = load_config(PAPER_CONFIG)
    assert (paper.rollout.questions_per_step, paper.rollout.group_size, paper.optim.mini_batch_questions) == (128, 8, 32)
    trainer = _trainer(tmp_path)  # the defaults are the paper's batch too
    assert trainer.config.rollout.questions_per_step == 128 and trainer.config.optim.mini_batch_questions == 32
    # row -> question: 8 rollouts per question, 1..7 sequences each (turns + the answer)
    questions = [q for q in range(128) for r in range(8) for _ in range(1 + (q + r) % 7)]
    plan = trainer._plan(questions)
    assert len(plan) == 4
    covered = []
    for slices in plan:
        assert len(slices) == 1  # micro_batch_sequences 0: one pass per update
        rows = range(slices[0].start, slices[0].stop)
        covered.extend(rows)
        assert len({questions[i] for i in rows}) == 32
    assert covered == list(range(len(questions)))
    # the memory knob splits an update into passes without changing what the update holds
    micro = _trainer(tmp_path / "micro", **{"optim.micro_batch_sequences": 64})._plan(questions)
    assert [(s[0].start, s[-1].stop) for s in micro] == [(s[0].start, s[0].stop) for s in plan]
    assert all(sl.stop - sl.start <= 64 for s in micro for sl in s)


def test_paper_config_update_count_is_independent_of_sequence_count():
    """Old semantics counted per-turn sequences (32 sequences per update, ~19 updates for 16 questions)."""
    with pytest.raises(ConfigError, match="optim.mini_batch_sequences was renamed: use optim.mini_batch_questions"):
        load_config(None, {"data.graph_dir": "x", "optim.mini_batch_sequences": 32})


def test_set_lr_from_the_help_example_is_a_float_and_trains(tmp_path, capsys):
    """``--set optim.lr=1e-6`` (the CLI help's own example) used to stay the string '1e-6' and crash AdamW."""
    from harness_g.cli import main
    from harness_g.config_loader import parse_set

    assert main(["train", "--config", str(ROOT / "training/configs/tiny-cpu.yaml"), "--set", "optim.lr=1e-6",
                 "--show-config"]) == 0
    assert "  lr: 1e-06  # learning rate" in capsys.readouterr().out
    key, value = parse_set("optim.lr=1e-6")
    trainer = _trainer(tmp_path, **{key: value})
    assert trainer.optimizer.param_groups[0]["lr"] == 1e-6


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
    ("rollout.env", {"bogus": 1}, "rollout.env: unknown field.*bogus"),
    ("optim.drop_zero_advantage_groups", "maybe", "optim.drop_zero_advantage_groups: expected bool"),
    ("optim.lr", "nan", "optim.lr: expected float, got 'nan'"),
    ("optim.lr", 0, "optim.lr: must be > 0.0, got 0.0"),
    ("rollout.top_p", 1.5, r"rollout.top_p: must be <= 1.0, got 1.5"),
    ("optim.dual_clip", 0.5, "optim.dual_clip: must be > 1.0, got 0.5"),
    ("torch_threads", 0, "torch_threads: must be >= 1, got 0"),
    ("model.dtype", "fp8", "model.dtype 'fp8' unknown; available: float32, bfloat16, float16"),
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
    assert cfg.rollout.env == {"answer_with": False, "visible_cap": 3}  # "no" is false, not a truthy string
    assert cfg.log.tensorboard is False and cfg.rollout.constrain_actions is True
    assert cfg.model.lora_targets == ["q_proj", "v_proj"]
    for text, flag in (("true", True), ("False", False), ("YES", True), ("no", False), ("1", True), ("0", False)):
        assert load_config(None, {**base, "optim.drop_zero_advantage_groups": text}).optim.drop_zero_advantage_groups is flag
    # YAML files go through the same parser: a quoted "no" and an exponent without a dot
    path = tmp_path / "c.yaml"
    path.write_text('data: {graph_dir: x}\noptim: {lr: 1e-6}\nrollout: {env: {answer_with: "no"}, max_turns: "3"}\n')
    cfg = load_config(path)
    assert cfg.optim.lr == 1e-6 and cfg.rollout.env == {"answer_with": False} and cfg.rollout.max_turns == 3
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


# -- end-of-turn tokens of cut replies ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tokenizer():
    from harness_g.training.modeling import load_tokenizer

    return load_tokenizer(ModelConfig(name="tiny-random"))


def _masked(tokenizer, seq):
    return [t for t, m in zip(seq.input_ids, seq.loss_mask) if m]


def _user(text):
    return [{"role": "user", "content": text}]


def test_a_cut_reply_trains_no_end_of_turn_token(tokenizer):
    from harness_g.agent.context import Turn
    from harness_g.training.chat import ANSWER_TURN, build_sequence
    from harness_g.training.rollout import Rollout

    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompt = "[Step 1/6]\nQuestion: who?\nA0 = SELECT S0\nA12 = LOOKUP E1"
    stopped = build_sequence(tokenizer, prompt, "A12", stopped=True)
    assert _masked(tokenizer, stopped)[-1] == end
    cut = build_sequence(tokenizer, prompt, "A1", stopped=False)  # the policy wrote "A1" and hit max_action_tokens
    assert cut.input_ids == build_sequence(tokenizer, prompt, "A1").input_ids
    assert tokenizer.decode(_masked(tokenizer, cut)) == "A1" and end not in _masked(tokenizer, cut)
    start, stop = cut.reply_span
    assert sum(cut.loss_mask) == stop - start == len(tokenizer("A1", add_special_tokens=False)["input_ids"])

    # markov turns (each chat is a fresh user turn): one sequence per turn, then the answer
    ro = Rollout(item=None, group=0, trajectory=None,  # type: ignore[arg-type]
                 turns=[Turn(_user(prompt), "A1", stopped=False), Turn(_user(prompt + " "), "A0", stopped=True)],
                 answer_turn=Turn(_user("Question: who?\nAnswer:"), "Paris is the cap", stopped=False))
    first, second, answer = ro.sequences(tokenizer)
    assert {t for t, m in zip(first.turn_of, first.loss_mask) if m} == {0}
    assert {t for t, m in zip(second.turn_of, second.loss_mask) if m} == {1}
    assert {t for t, m in zip(answer.turn_of, answer.loss_mask) if m} == {ANSWER_TURN}
    assert end not in _masked(tokenizer, first) and _masked(tokenizer, second)[-1] == end
    assert end not in _masked(tokenizer, answer) and tokenizer.decode(_masked(tokenizer, answer)) == "Paris is the cap"


def test_generator_reports_whether_each_reply_stopped(tokenizer):
    from harness_g.training.modeling import load_policy
    from harness_g.training.rollout import Generator

    model = load_policy(ModelConfig(name="tiny-random"), tokenizer)
    gen = Generator(model, tokenizer, temperature=1.0, top_p=1.0, max_prompt_tokens=512)
    # constrained decoding: the id, then the end-of-turn token; "A12" is 3 tokens
    cut = gen.generate([_user("pick one"), _user("pick")], max_new_tokens=2, temperature=1.0, allowed=[["A12"], ["A12"]])
    assert [g.text for g in cut] == ["A1", "A1"] and [g.finish_reason for g in cut] == ["length", "length"]
    full = gen.generate([_user("pick one"), _user("pick")], max_new_tokens=8, temperature=1.0, allowed=[["A12"], ["A0"]])
    assert [g.text for g in full] == ["A12", "A0"] and [g.finish_reason for g in full] == ["stop", "stop"]


def test_rollout_path_masks_no_end_token_after_a_cut_reply(falkordb_hotpot_view, hotpot_questions, tokenizer):
    """collect_rollouts with the real Generator: action ids cut at 1 token (ids are 2+ tokens) are recorded as cut,
    and their sequences train the one sampled token only."""
    from harness_g.agent.config import EnvConfig
    from harness_g.training.chat import ANSWER_TURN
    from harness_g.training.modeling import load_policy
    from harness_g.training.rollout import Generator, collect_rollouts

    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model = load_policy(ModelConfig(name="tiny-random"), tokenizer)
    gen = Generator(model, tokenizer, temperature=1.0, top_p=1.0, max_prompt_tokens=4096)
    rollouts, stats = collect_rollouts(falkordb_hotpot_view, gen, hotpot_questions[:1], 2, EnvConfig(max_turns=2),
                                       max_action_tokens=1, max_answer_tokens=3, constrain_actions=True,
                                       max_observation_tokens=4096)
    assert stats["observation_tokens_max"] > 0 and stats["observations_over_budget"] == 0
    for ro in rollouts:
        assert ro.turns and not any(t.stopped for t in ro.turns)
        *turn_seqs, answer = ro.sequences(tokenizer)
        assert len(turn_seqs) == 1  # multi-turn: the whole trajectory is one sequence
        masked = _masked(tokenizer, turn_seqs[0])
        assert end not in masked and len(masked) == len(ro.turns)  # the one token each turn sampled before the limit
        assert (end in _masked(tokenizer, answer)) == ro.answer_turn.stopped
        assert set(answer.turn_of) == {ANSWER_TURN}


def test_credit_answerer_names_the_frozen_scorer(tmp_path):
    """credit.answerer: 'reference' = the initial reference checkpoint (harness-g.tex l.912); a model name loads
    that model frozen, with its own tokenizer."""
    trainer = _trainer(tmp_path)
    forward, tok = trainer._answerer_model()
    assert forward is trainer.reference and tok is trainer.tokenizer
    other = _trainer(tmp_path / "other", **{"credit.answerer": "tiny-random", "model.tiny_layers": 1})
    forward, tok = other._answerer_model()
    assert forward is not other.reference
    assert all(not p.requires_grad for p in forward.model.parameters())
    assert forward.model.config.num_hidden_layers == 1
    ids = torch.tensor([tok("hello", add_special_tokens=False)["input_ids"]])
    assert forward(input_ids=ids).logits.shape[:2] == ids.shape


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
    shipped = load_config(Path(__file__).resolve().parents[1] / "training/configs/tiny-cpu.yaml")
    root = Path(__file__).resolve().parents[1]
    assert shipped.data.graph_dir == str(root / "graphs" / "2wiki-slice")
    assert Path(shipped.data.build_input).is_file()  # the shipped slice, found from any working directory
