"""The IGPO arm (paper appendix "Factorial credit control", harness-g.tex l.1061; IGPO, arXiv:2510.14967) with the
tiny test tokenizer and model: beliefs scored by the live policy, each turn's advantage on every policy token of
its turn without SNC's batch-global scale, and a trainer step that scores the current policy and trains on IGPO
advantages. Its maths and belief contexts: tests/unit/test_igpo.py."""
import json

import pytest
import torch
from helpers.hand_rollouts import rollout as _rollout
from helpers.hand_rollouts import step as _step
from helpers.paths import TEST_DATA

from harness_g.training.credit import igpo_advantages, igpo_step_advantage, information_gains

SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"


# -- contexts and beliefs from trajectory records -------------------------------------------------------------
class _Info:
    def __init__(self, sid: str):
        self.title, self.text = f"T{sid}", f"Sentence {sid} says Paris is the capital of France."


class _View:
    def sentences(self, ids):
        return {s: _Info(s) for s in ids}


def test_score_beliefs_uses_the_given_policy_and_unchanged_contexts_gain_exactly_zero():
    from harness_g.training.answerer import PolicyBelief
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.rollout import scorer_user_text
    from harness_g.training.snc_scoring import score_beliefs

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    policy = load_policy(ModelConfig(name="tiny-random"), tok, seed=0)
    rollouts = [_rollout([_step(0, "LOOKUP", ["s1"], ["s2"]), _step(1, "SELECT", ["s1", "s2"], ["s2"]),
                          _step(2, "ANSWER", ["s1", "s2"], [])]),
                _rollout([_step(0, "LOOKUP", ["s1"], ["s3"])], qid="q2", answers=("Lyon",), group=1)]
    beliefs, stats = score_beliefs(_View(), PolicyBelief(policy, tok, scorer_user_text), rollouts)
    assert [len(b) for b in beliefs] == [3, 2] and stats["igpo_turns"] == 3.0
    assert information_gains(beliefs[0])[1] == 0.0  # SELECT surfaces nothing new
    assert beliefs[0][0] != beliefs[1][0]  # same text and context, different question/answers: not shared
    with torch.no_grad():
        for p in policy.parameters():
            p.mul_(1.5)
    moved, _ = score_beliefs(_View(), PolicyBelief(policy, tok, scorer_user_text), rollouts)
    assert moved[0][0] != pytest.approx(beliefs[0][0], rel=1e-4)  # the live weights, not a frozen copy


def test_the_belief_is_the_policys_answer_chat_probability_of_the_gold_answer():
    """What IGPO's π_θ(a | q, o_≤t) is here (training/answerer.py ``PolicyBelief``): the live policy's mean log-prob of
    the gold answer teacher-forced after the very chat it answers from (``LLMPolicy.answer_batch``: a fresh chat of
    the question and the evidence, rendered by the eval backend), with the evidence surfaced so far; its exp is the
    belief whose rise is the turn's information gain."""
    import math

    from harness_g.agent.llm.context import answer_messages
    from harness_g.agent.llm.transformers_backend import TransformersBackend
    from harness_g.training.answerer import PolicyBelief, ScoreRequest
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.rollout import scorer_user_text

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    policy = load_policy(ModelConfig(name="tiny-random"), tok, seed=3)
    question, gold = "What is the capital of France?", "paris"
    contexts = [[], [("France", "Paris is the capital of France.")],
                [("France", "Paris is the capital of France."), ("Lyon", "Lyon is a city in France.")]]
    requests = [ScoreRequest("q1", question, tuple(t for t, _ in ev), ev, [gold]) for ev in contexts]
    beliefs = PolicyBelief(policy, tok, scorer_user_text).log_scores_many(requests)
    backend = TransformersBackend.from_loaded(policy, tok)
    for ev, belief in zip(contexts, beliefs):
        prompt = tok(backend.render(answer_messages(question, ev)), add_special_tokens=False)["input_ids"]
        answer = tok(gold, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = policy(input_ids=torch.tensor([prompt + answer])).logits[0].float()
        logp = torch.log_softmax(logits[len(prompt) - 1:-1], -1).gather(-1, torch.tensor(answer)[:, None]).squeeze(-1)
        assert belief == pytest.approx(float(logp.mean()), abs=1e-5)
    assert information_gains(beliefs) == pytest.approx([math.exp(b) - math.exp(a) for a, b in zip(beliefs, beliefs[1:])])


def test_build_batch_puts_each_turn_advantage_on_its_tokens_without_snc_scale():
    from harness_g.training.batch import build_batch
    from harness_g.training.config import CreditConfig, ModelConfig
    from harness_g.training.modeling import load_tokenizer

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    from harness_g.agent.llm.context import Turn

    ro = _rollout([])
    ro.turns = [Turn([{"role": "user", "content": "turn 0 prompt"}], "A3"), Turn([{"role": "user", "content": "turn 1 prompt"}], "A0")]
    ro.answer_turn, ro.answer = Turn([{"role": "user", "content": "answer prompt"}], "Paris"), "Paris"
    # [LOOKUP, ANSWER]: one information turn; the terminal step and the answer sequence form the answer turn
    # [LOOKUP, LOOKUP] (out of turns): two information turns, then the answer sequence
    for turn_adv, wants in (([0.75, 2.0], [0.75, 2.0, 2.0]), ([0.75, -0.5, 2.0], [0.75, -0.5, 2.0])):
        batch, stats = build_batch([ro], tok, torch.tensor([9.0]), [[0.3, 0.0]], 0.2, CreditConfig(), turn_advantages=[turn_adv])
        mask = batch["loss_mask"]
        for row, want in enumerate(wants):
            assert torch.allclose(batch["advantages"][row][mask[row] > 0], torch.tensor(want))  # every policy token
            assert (batch["advantages"][row][mask[row] == 0] == 0).all()  # environment tokens: nothing
        assert stats["snc_scale"] == 1.0  # A_out (9.0), λ and the SNC scale play no part


@pytest.mark.slow
def test_trainer_igpo_step_scores_the_current_policy_and_uses_igpo_advantages(tmp_path, monkeypatch):
    """One real step of the IGPO arm on the menu and on the free-query interface: beliefs come from the trainer's
    own (unwrapped, current) policy, the frozen answerer is never called, and the optimised token advantages are
    exactly igpo_advantages of those beliefs and the outcome rewards."""
    from harness_g.training import trainer as trainer_mod
    from harness_g.training.config import load_config

    for interface in ("menu", "free-query"):
        seen: dict = {}
        real_score = trainer_mod.score_beliefs

        def spy(view, belief, rollouts):
            beliefs, stats = real_score(view, belief, rollouts)
            seen.update(policy=belief.policy, beliefs=beliefs, rollouts=rollouts)
            return beliefs, stats

        def capture(self, batch):
            seen["batch"] = batch
            return {"loss": 0.0, "pg_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "dual_clip_frac": 0.0, "grad_norm": 0.0,
                    "skipped_batches": 0.0, "optimizer_steps": 0.0}

        monkeypatch.setattr(trainer_mod, "score_beliefs", spy)
        monkeypatch.setattr(trainer_mod.Trainer, "_update", capture)
        cfg = load_config(None, {
            "model.name": "tiny-random", "data.graph_dir": str(tmp_path / "graph"), "data.build_format": "2wiki",
            "data.build_input": str(SLICE), "data.limit": 4, "rollout.group_size": 3, "rollout.questions_per_step": 1,
            "rollout.max_turns": 3, "rollout.constrain_actions": interface == "menu", "rollout.interface": interface,
            "rollout.env": {"visible_cap": 3, "lookup_cap": 3}, "rollout.max_answer_tokens": 4, "rollout.max_action_tokens": 8,
            "credit.scheme": "igpo", "optim.steps": 1, "log.save_every": 0, "log.tensorboard": False})
        run = tmp_path / f"run-{interface}"
        from harness_g.training.data import build_training_graph

        build_training_graph(cfg)  # `harness-g train` builds before training; Python callers do it themselves
        tr = trainer_mod.Trainer(cfg, run, progress=False)
        tr.train()
        assert seen["policy"] is tr.accelerator.unwrap_model(tr.model)
        row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
        assert row["answerer_calls"] == 0.0  # no frozen-reference scoring in the IGPO arm
        rollouts = seen["rollouts"]
        assert any(len(b) > 1 for b in seen["beliefs"])  # some information turns were scored
        want = igpo_advantages(seen["beliefs"], [r.reward for r in rollouts], [r.group for r in rollouts])
        rows = []  # per training row: the IGPO advantage of every policy token, turn by turn (answer: None)
        for r_i, ro in enumerate(rollouts):
            rows += [[igpo_step_advantage(want[r_i], t if t >= 0 else None) for t, m in zip(seq.turn_of, seq.loss_mask) if m]
                     for seq in ro.sequences(tr.tokenizer)]
        adv, mask = seen["batch"]["advantages"], seen["batch"]["loss_mask"]
        assert adv.shape[0] == len(rows)
        for row_i, values in enumerate(rows):
            assert torch.allclose(adv[row_i][mask[row_i] > 0], torch.tensor(values, dtype=adv.dtype), atol=1e-6)
        monkeypatch.undo()
