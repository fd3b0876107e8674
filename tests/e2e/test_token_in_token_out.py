"""Token-in, token-out: rollouts are trained on the ids the policy was prompted with and sampled, not on a
re-tokenisation of the decoded chat. A tiny random Llama samples at temperature 1 with SmolLM2's tokenizer, so its
replies are arbitrary token strings: decoding, stripping and tokenising them again gives other ids (checked below),
which is exactly what the trainer must not train on."""
from __future__ import annotations

import pytest
import torch

from harness_g.agent.llm.context import Turn
from harness_g.training.chat import build_chat_sequence, Reply
from harness_g.training.config import ModelConfig
from harness_g.training.rollout import Generator, turn_sequences


@pytest.fixture(scope="module")
def generator():
    from harness_g.training.modeling import load_policy, load_tokenizer

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    model = load_policy(ModelConfig(name="tiny-random"), tok, seed=3)
    return Generator(model, tok, temperature=1.0, top_p=1.0, max_prompt_tokens=4096)


def _two_turns(generator, seed: int) -> list[Turn]:
    """Two decision turns of one episode, played through the generator as LLMPolicy plays them."""
    torch.manual_seed(seed)
    conv1 = [{"role": "user", "content": "Question: who directed it?\nA0 = SELECT S0\nA1 = ANSWER"}]
    g1 = generator.generate([conv1], max_new_tokens=6, temperature=1.0)[0]
    conv2 = [*conv1, {"role": "assistant", "content": g1.text}, {"role": "user", "content": "[ok] S0 committed.\nA1 = ANSWER"}]
    g2 = generator.generate([conv2], max_new_tokens=6, temperature=1.0)[0]
    return [Turn(conv1, g1.text, g1.finish_reason != "length", g1.prompt_ids, g1.token_ids),
            Turn(conv2, g2.text, g2.finish_reason != "length", g2.prompt_ids, g2.token_ids)]


def test_the_next_prompt_continues_the_sampled_ids_and_training_uses_exactly_them(generator):
    t1, t2 = _two_turns(generator, seed=0)
    p1, r1, p2, r2 = t1.prompt_ids, t1.reply_ids, t2.prompt_ids, t2.reply_ids
    assert r1 and r2
    assert list(p2[: len(p1) + len(r1)]) == [*p1, *r1]  # token-in: turn 2 was prompted with turn 1's sampled ids
    assert generator.continuations.continued >= 1
    [seq] = turn_sequences(generator.tokenizer, [t1, t2])  # one growing sequence
    assert seq.input_ids == [*p2, *r2]
    trained = [t for t, m in zip(seq.input_ids, seq.loss_mask) if m]
    assert trained == [*r1, *r2]  # token-out: exactly the sampled ids, nothing re-tokenised
    assert [k for k, m in zip(seq.turn_of, seq.loss_mask) if m] == [0] * len(r1) + [1] * len(r2)


def test_re_tokenised_text_differs_from_the_sampled_ids(generator):
    """What the old path trained (the chat rendered from text and tokenised again) is not what was sampled, for
    some of these random replies: the id path above is what makes training token-exact."""
    differs = 0
    for seed in range(8):
        t1, _ = _two_turns(generator, seed)
        old = build_chat_sequence(generator.tokenizer, [*t1.messages, {"role": "assistant", "content": t1.reply}],
                                  [Reply(1, 0, t1.stopped)])
        differs += [t for t, m in zip(old.input_ids, old.loss_mask) if m] != list(t1.reply_ids)
    assert differs > 0


def test_a_broken_continuation_splits_the_sequence_and_still_trains_only_sampled_ids(generator):
    t1, t2 = _two_turns(generator, seed=1)
    fresh = generator.tokenizer(generator.tokenizer.apply_chat_template(t2.messages, tokenize=False,
                                                                        add_generation_prompt=True),
                                add_special_tokens=False)["input_ids"]
    t2b = Turn(t2.messages, t2.reply, t2.stopped, tuple(fresh) + (0,), t2.reply_ids)  # not p1 + r1 + ...
    seqs = turn_sequences(generator.tokenizer, [t1, t2b])
    assert len(seqs) == 2
    assert [t for t, m in zip(seqs[0].input_ids, seqs[0].loss_mask) if m] == list(t1.reply_ids)
    assert [t for t, m in zip(seqs[1].input_ids, seqs[1].loss_mask) if m] == list(t2.reply_ids)
