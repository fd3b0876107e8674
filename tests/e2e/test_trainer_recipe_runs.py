"""The paper's training recipe with the tiny test tokenizer, a tiny random model and a real trainer.

- batch / mini-batch count questions: 128 questions per step, updates of all the sequences of 32 questions;
- ``--set optim.lr=1e-6`` (the CLI help's example) is a float and trains;
- a reply cut at its token limit trains no end-of-turn token;
- ``credit.answerer`` picks the frozen answerer.

The config semantics and the paper's table, with no model: tests/unit/test_trainer_recipe.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.paths import PAPER_CONFIG
from helpers.paths import REPO_ROOT as ROOT

from harness_g.training.config import ModelConfig, load_config


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
    lengths = [100 + (i * 37) % 900 for i in range(len(questions))]
    plan = trainer._plan(questions, lengths)
    assert len(plan) == 4
    covered = []
    for passes in plan:
        assert len(passes) == 1  # no micro-batch cap: one pass per update
        rows = passes[0]
        covered.extend(rows)
        assert len({questions[i] for i in rows}) == 32
        assert [lengths[i] for i in rows] == sorted((lengths[i] for i in rows), reverse=True)
    assert sorted(covered) == list(range(len(questions)))
    # the memory knob splits an update into passes without changing what the update holds
    micro = _trainer(tmp_path / "micro", **{"optim.micro_batch_sequences": 64})._plan(questions, lengths)
    assert [sorted(i for mb in mini for i in mb) for mini in micro] == [sorted(mini[0]) for mini in plan]
    assert all(len(mb) <= 64 for mini in micro for mb in mini)


def test_set_lr_from_the_help_example_is_a_float_and_trains(tmp_path, capsys):
    """``--set optim.lr=1e-6`` (the CLI help's own example) used to stay the string '1e-6' and crash AdamW."""
    from harness_g.cli import main
    from harness_g.config_loader import parse_set

    assert main(["train", "--config", str(ROOT / "training/configs/tiny-cpu.yaml"), "--set", "optim.lr=1e-6",
                 "--show-config"]) == 0
    assert "  lr: 1e-06  # [set] learning rate" in capsys.readouterr().out
    key, value = parse_set("optim.lr=1e-6")
    trainer = _trainer(tmp_path, **{key: value})
    assert trainer.optimizer.param_groups[0]["lr"] == 1e-6


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
    from harness_g.agent.llm.context import Turn
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
    # prefill accounting (the generate_pad_ratio metric): real prompt tokens vs rows x the call's longest prompt
    widths = [[g.prompt_tokens for g in call] for call in (cut, full)]
    assert gen.prompt_tokens == sum(map(sum, widths)) and widths[0][0] > widths[0][1]
    assert gen.padded_prompt_tokens == sum(len(w) * max(w) for w in widths) > gen.prompt_tokens


def test_rollout_path_masks_no_end_token_after_a_cut_reply(falkordb_hotpot_view, hotpot_questions, tokenizer):
    """collect_rollouts with the real Generator: action ids cut at 1 token (ids are 2+ tokens) are recorded as cut,
    and their sequences train the one sampled token only."""
    from harness_g.agent.env.config import EnvConfig
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
    assert stats["generate_pad_ratio"] == pytest.approx(gen.padded_prompt_tokens / gen.prompt_tokens) and \
        stats["generate_pad_ratio"] >= 1.0
    # the group's 2 first-turn prompts are one prompt, prefilled once: fewer positions computed than padded
    assert stats["generate_prefill_ratio"] == pytest.approx(gen.prefilled_prompt_positions / gen.prompt_tokens) and \
        stats["generate_prefill_ratio"] < stats["generate_pad_ratio"]
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
