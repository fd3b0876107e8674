"""The paper's multi-turn training sequence (harness-g.tex l.443, l.911) and one agent protocol for eval and training.

- a hand-built 3-turn trajectory: every environment token masked, every action token (and only those) carrying
  A_out + λ·A_SNC of its own step, the answer A_out;
- for the same state, the token ids the evaluation policy feeds its model equal the training rollout's;
- a trainer checkpoint (full or LoRA) reloads as a Hugging Face one and generates exactly like the live policy.
"""
from __future__ import annotations

import pytest
import torch
from helpers.paths import REPO_ROOT

from harness_g.agent.llm.context import EpisodeContext, Turn, policy_header
from harness_g.training.config import CreditConfig, ModelConfig

END = "<|im_end|>"


@pytest.fixture(scope="module")
def tokenizer():
    from harness_g.training.modeling import load_tokenizer

    return load_tokenizer(ModelConfig(name="tiny-random"))


def _three_turn_rollout():
    from harness_g.training.rollout import Rollout

    ctx = EpisodeContext(policy_header("menu"))
    observations = ["[Step 1/3]\nA0 = SELECT S0\nA1 = LOOKUP E0 | entity: Paris\nA2 = ANSWER",
                    "[Step 2/3]\nS0 | France: Paris is the capital.\nA0 = SELECT S0\nA1 = ANSWER",
                    "[Step 3/3]\nCommitted evidence:\n  1. France: Paris is the capital.\nA0 = ANSWER"]
    for t, (obs, reply) in enumerate(zip(observations, ["A1", "A0", "A0"])):
        ctx.observe(obs, "start" if t == 0 else "ok")
        ctx.messages()
        ctx.reply(reply)
    answer = Turn([{"role": "user", "content": "Answer the question using only the evidence.\nQuestion: capital?"}], "Paris")
    return Rollout(item=None, group=0, trajectory=None, turns=ctx.turns, answer_turn=answer, answer="Paris")  # type: ignore[arg-type]


def test_three_turn_sequence_masks_the_environment_and_gives_each_action_its_own_step_advantage(tokenizer):
    from harness_g.training.batch import build_batch
    from harness_g.training.chat import ANSWER_TURN

    ro = _three_turn_rollout()
    seqs = ro.sequences(tokenizer)
    assert len(seqs) == 2  # the whole trajectory is one sequence, the answer another
    traj = seqs[0]
    assert traj.input_ids == tokenizer(tokenizer.apply_chat_template(
        [*ro.turns[-1].messages, {"role": "assistant", "content": "A0"}], tokenize=False), add_special_tokens=False)["input_ids"]
    for t, reply in enumerate(["A1", "A0", "A0"]):  # each turn's policy tokens are exactly its reply + end-of-turn
        assert tokenizer.decode([i for i, m, k in zip(traj.input_ids, traj.loss_mask, traj.turn_of) if m and k == t]) == reply + END
    env_text = tokenizer.decode([i for i, m in zip(traj.input_ids, traj.loss_mask) if not m])
    for obs in ("LOOKUP E0 | entity: Paris", "Paris is the capital.", "[Step 3/3]", "You answer a multi-hop question"):
        assert obs in env_text  # every observation (and the instruction) is environment text, masked

    credits, a_out, lam = [0.5, -1.0, 2.0], 0.7, 0.2
    batch, stats = build_batch([ro], tokenizer, torch.tensor([a_out]), [credits], lam, CreditConfig(clip=1e6, scale_floor=1e-9))
    adv, mask = batch["advantages"], batch["loss_mask"]
    assert adv.shape[0] == 2 and (adv[mask == 0] == 0).all()  # environment (and padding) tokens: nothing
    row = adv[0, adv.shape[1] - len(traj.input_ids):]
    for t, c in enumerate(credits):
        on_t = torch.tensor([m == 1 and k == t for m, k in zip(traj.loss_mask, traj.turn_of)])
        assert torch.allclose(row[on_t], torch.tensor(a_out + lam * c / stats["snc_scale"]), atol=1e-6)
    answer = seqs[1]
    assert set(k for k, m in zip(answer.turn_of, answer.loss_mask) if m) == {ANSWER_TURN}
    assert torch.allclose(adv[1][mask[1] > 0], torch.tensor(a_out))  # the answer carries A_out only
    # the scale is the std of every action token's credit (the reply's tokens + its end-of-turn token, per step)
    n_tok = [len(tokenizer(r, add_special_tokens=False)["input_ids"]) + 1 for r in ["A1", "A0", "A0"]]
    per_token = torch.tensor([c for c, n in zip(credits, n_tok) for _ in range(n)])
    assert stats["snc_scale"] == pytest.approx(float(per_token.std(unbiased=False)))


def test_dropped_turns_start_a_new_sequence_and_no_reply_is_trained_twice(tokenizer):
    from harness_g.training.rollout import turn_sequences

    ctx = EpisodeContext("HEADER")
    words = lambda msgs: sum(len(m["content"].split()) for m in msgs)  # noqa: E731
    for t in range(4):
        ctx.observe("obs " * 12, "start" if t == 0 else "ok")
        ctx.messages(words, budget=45)
        ctx.reply(f"A{t}")
    assert ctx.dropped_turns >= 1
    seqs = turn_sequences(tokenizer, ctx.turns)
    trained = [k for s in seqs for k, m in zip(s.turn_of, s.loss_mask) if m]
    assert len(seqs) > 1 and sorted(set(trained)) == [0, 1, 2, 3]
    for t in range(4):  # each reply + its end token, in exactly one sequence
        assert trained.count(t) == len(tokenizer(f"A{t}", add_special_tokens=False)["input_ids"]) + 1


def _spy_generate(model, seen: list):
    real = type(model).generate  # the class's method: spies never wrap each other

    def generate(*args, **kwargs):
        ids, attn = kwargs["input_ids"], kwargs["attention_mask"]
        seen.extend(row[mask.bool()].tolist() for row, mask in zip(ids, attn))  # the unpadded prompt ids
        return real(model, *args, **kwargs)

    return generate


def test_eval_and_training_feed_the_model_the_same_token_ids(falkordb_hotpot_view, hotpot_questions, tokenizer, monkeypatch):
    """Same weights, same question, greedy: the training rollout and the evaluation policy (``harness-g eval``'s
    LLMPolicy + TransformersBackend) play the same episode and feed the model identical prompts, turn by turn."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.llm.transformers_backend import TransformersBackend
    from harness_g.agent.policies.llm import LLMPolicy
    from harness_g.training.modeling import load_policy
    from harness_g.training.rollout import Generator, collect_rollouts

    env_cfg = EnvConfig(max_turns=3, visible_cap=3, lookup_cap=3)
    item = hotpot_questions[0]
    for seed in range(32):  # a random model whose greedy episode has several turns (most seeds ANSWER at once)
        model = load_policy(ModelConfig(name="tiny-random"), tokenizer, seed=seed)
        train_ids: list = []
        monkeypatch.setattr(model, "generate", _spy_generate(model, train_ids))
        gen = Generator(model, tokenizer, temperature=1.0, top_p=1.0, max_prompt_tokens=4000)
        (ro,), _ = collect_rollouts(falkordb_hotpot_view, gen, [item], 1, env_cfg, max_action_tokens=4, max_answer_tokens=6,
                                    greedy=True, constrain_actions=True)
        if len(ro.turns) >= 2:
            break
    eval_ids: list = []
    monkeypatch.setattr(model, "generate", _spy_generate(model, eval_ids))
    policy = LLMPolicy(TransformersBackend.from_loaded(model, tokenizer), max_new_tokens=4, max_answer_tokens=6,
                       max_context_tokens=4000, constrain_actions=True)
    traj = run_episode(MenuEnv(falkordb_hotpot_view, env_cfg), policy, item)
    assert len(ro.turns) >= 2, "the episode must have several turns for this test to mean anything"
    assert [s.reply for s in traj.steps] == ro.step_replies and traj.answer == ro.answer
    assert eval_ids == train_ids and len(eval_ids) == len(ro.turns) + 1  # every turn, then the answer
    for earlier, later in zip(train_ids, train_ids[1:-1]):  # multi-turn: each prompt extends the previous one
        assert later[: len(earlier)] == earlier


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_a_trainer_checkpoint_reloads_like_a_hugging_face_one(tmp_path, lora):
    """``RUN_DIR/checkpoint-N`` (full weights or a LoRA adapter) loads through the eval backend with the trainer's
    policy settings and generates exactly what the live policy generates."""
    from harness_g.agent.llm.checkpoint import policy_settings
    from harness_g.agent.llm.transformers_backend import TransformersBackend
    from helpers.tiny_checkpoint import saved_tiny_checkpoint

    trainer, ckpt = saved_tiny_checkpoint(tmp_path, lora)
    settings = policy_settings(ckpt)
    assert settings["policy"]["max_new_tokens"] == 5 and settings["policy"]["context"] == "markov"
    assert (ckpt / ("adapter_config.json" if lora else "config.json")).is_file()
    live = TransformersBackend.from_loaded(trainer.accelerator.unwrap_model(trainer.model), trainer.tokenizer)
    loaded = TransformersBackend(str(ckpt))
    chats = [[{"role": "user", "content": "Question: who wrote it?\nA0 = SELECT S0\nA1 = ANSWER"}]]
    want = live.generate(chats, max_new_tokens=12)[0].text
    assert loaded.generate(chats, max_new_tokens=12)[0].text == want
    ids = trainer.tokenizer(live.render(chats[0]), return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        assert torch.equal(loaded.model(input_ids=ids).logits, live.model(input_ids=ids).logits)


@pytest.mark.slow
def test_tiny_cpu_config_trains_multi_turn_and_eval_of_its_checkpoint_reproduces_the_final_f1(tmp_path, capsys):
    """The done-when of the one-protocol work: ``training/configs/tiny-cpu.yaml`` trains in multi-turn mode, and
    ``harness-g eval --policy transformers --model RUN_DIR/checkpoint-N`` reproduces the trainer's own final greedy
    evaluation exactly: the same answer to every held-out question, hence the same F1."""
    import json

    from helpers.cli_checks import run

    root = REPO_ROOT
    graph, out, ev = tmp_path / "graph", tmp_path / "run", tmp_path / "eval"
    rc, train_out, err = run(capsys, "train", "--config", root / "training/configs/tiny-cpu.yaml", "--out", out, "--quiet",
                     "--set", f"data.graph_dir={graph}",
                     "--set", f"data.build_input={root / 'tests/data/2wikimultihopqa/dev.subset.json'}")
    assert rc == 0, err
    # TensorBoard curves are grouped by kind, and the run ends by saying how to look at them
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert f"curves: tensorboard --logdir {out / 'tensorboard'}" in train_out
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/reward_f1", "train/loss", "time/time_total_s", "credit/snc_scale"} <= tags
    assert not any("/" not in t for t in tags)
    config = (out / "config.yaml").read_text()
    assert "context: multi-turn" in config
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["sequences"] <= 2 * 2 * 4 for r in rows)  # <= 2 per rollout: trajectory + answer
    final = [r for r in map(json.loads, (out / "eval.jsonl").read_text().splitlines()) if r["tag"] == "after"]
    (heldout,) = [r for r in final if r["split"] == "heldout"]
    assert heldout["questions"] == 2 and heldout["checkpoint"] == str(out / "checkpoint-4")

    rc, stdout, err = run(capsys, "eval", graph, "--policy", "transformers", "--model", out / "checkpoint-4", "--out", ev, "-q")
    assert rc == 0, err
    records = {r["id"]: r for r in map(json.loads, (ev / "records.jsonl").read_text().splitlines())}
    trained = {qid: answer for _, answer, _, qid in heldout["answers"]}
    assert {qid: records[qid]["prediction"] for qid in trained} == trained
    f1 = sum(records[qid]["metrics"]["f1"] for qid in trained) / len(trained)
    assert f1 == heldout["f1"]
    turns = sum(len(records[qid]["trajectory"]["steps"]) for qid in trained) / len(trained)
    assert turns == heldout["turns"]
