"""The frozen answerer g(O) with a tiny random Llama (no download): the batched, left-padded, tail-only
computation equals a plain per-sequence forward; aliases are maximised over; the cache serves repeats
(across calls and inside one batch) without new forwards and stays bounded."""
import math

import pytest
import torch

from harness_g.training.answerer import FrozenAnswerer
from harness_g.training.chat import render_prompt
from harness_g.training.config import ModelConfig
from harness_g.training.rollout import scorer_user_text

EVIDENCE = [("Paris", "Paris is the capital and largest city of France."), ("Seine", "The Seine flows through Paris.")]


@pytest.fixture(scope="module")
def model_and_tokenizer():
    from harness_g.training.modeling import load_policy, load_tokenizer

    cfg = ModelConfig(name="tiny-random")
    tok = load_tokenizer(cfg)
    return load_policy(cfg, tok, seed=0).eval(), tok


def _answerer(model_and_tokenizer, **kw):
    model, tok = model_and_tokenizer
    return FrozenAnswerer(lambda **inputs: model(**inputs), tok, scorer_user_text, batch_size=3, **kw)


def _direct_g(model_and_tokenizer, question, evidence, answer) -> float:
    model, tok = model_and_tokenizer
    p = tok(render_prompt(tok, scorer_user_text(question, evidence)), add_special_tokens=False)["input_ids"]
    a = tok(answer, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([p + a])).logits[0].float()
    logp = torch.log_softmax(logits[len(p) - 1 : -1], -1).gather(-1, torch.tensor(a).unsqueeze(-1)).squeeze(-1)
    return math.exp(float(logp.mean()))


def test_batched_scores_equal_a_plain_forward_and_max_over_aliases(model_and_tokenizer):
    ans = _answerer(model_and_tokenizer)
    requests = [("What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"]),
                ("What river flows through Paris?", ("s1", "s2"), EVIDENCE, ["the Seine river", "Seine"]),
                ("Who?", (), [], ["a much longer answer with many more tokens"])]
    got = ans.score_many(requests)
    for (q, _, ev, aliases), g in zip(requests, got):
        want = max(_direct_g(model_and_tokenizer, q, ev, a) for a in aliases)
        assert 0.0 < g <= 1.0 and g == pytest.approx(want, rel=1e-4)


def test_cache_serves_repeats_without_forwards_and_is_bounded(model_and_tokenizer):
    ans = _answerer(model_and_tokenizer, cache_size=2)
    req = ("What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"])
    other = ("What river?", ("s2",), EVIDENCE[1:], ["Seine"])
    a, b, c = ans.score_many([req, req, req])  # in-batch duplicates: scored once
    assert a == b == c and ans.calls == 1
    assert ans.score_many([req]) == [a] and ans.calls == 1  # across calls: cached
    ans.score_many([other, ("Q3", ("s3",), EVIDENCE, ["x"])])
    assert len(ans._cache) == 2 and (req[0], req[1]) not in ans._cache  # least recently used went first
    calls = ans.calls
    assert ans.score_many([req]) == [pytest.approx(a)] and ans.calls == calls + 1
