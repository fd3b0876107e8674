"""The frozen answerer g(O) with a tiny random Llama (no download): the batched, left-padded, tail-only
computation equals a plain per-sequence forward; every normalised alias is maximised over; the cache is keyed
on the question (id) and context, serves repeats (across calls and inside one batch) without new forwards and
stays bounded; the policy-belief scorer for IGPO uses the live weights."""
import math

import pytest
import torch

from harness_g.agent.eval.metrics import normalize_answer
from harness_g.training.answerer import FrozenAnswerer, PolicyBelief, ScoreRequest, gold_aliases
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
    requests = [("q1", "What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"]),
                ("q2", "What river flows through Paris?", ("s1", "s2"), EVIDENCE, ["the Seine river", "Seine"]),
                ("q3", "Who?", (), [], ["a much longer answer with many more tokens"])]
    got = ans.score_many(requests)
    for (_, q, _, ev, aliases), g in zip(requests, got):
        want = max(_direct_g(model_and_tokenizer, q, ev, normalize_answer(a)) for a in aliases)
        assert 0.0 < g <= 1.0 and g == pytest.approx(want, rel=1e-4)


def test_cache_serves_repeats_without_forwards_and_is_bounded(model_and_tokenizer):
    ans = _answerer(model_and_tokenizer, cache_size=2)
    req = ("q1", "What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"])
    other = ("q2", "What river?", ("s2",), EVIDENCE[1:], ["Seine"])
    a, b, c = ans.score_many([req, req, req])  # in-batch duplicates: scored once
    assert a == b == c and ans.calls == 1
    assert ans.score_many([req]) == [a] and ans.calls == 1  # across calls: cached
    ans.score_many([other, ("q3", "Q3", ("s3",), EVIDENCE, ["x"])])
    assert len(ans._cache) == 2 and ans.cache_key(req) not in ans._cache  # least recently used went first
    calls = ans.calls
    assert ans.score_many([req]) == [pytest.approx(a)] and ans.calls == calls + 1


def test_gold_aliases_are_the_normalised_deduplicated_set():
    """harness-g.tex l.1177 (max over the *normalised* alias set) with norm() of l.861."""
    assert gold_aliases(["The Beatles", "Beatles", "the beatles!", "Fab Four", "", "  "]) == ("beatles", "fab four")
    assert gold_aliases(["The"]) == ("The",)  # normalises to nothing: keep the raw alias rather than score none
    assert gold_aliases([f"alias {i}" for i in range(100)]) == tuple(f"alias {i}" for i in range(100))  # no cap by default
    assert gold_aliases(["a b", "c", "d"], max_aliases=2) == ("b", "c")


def test_every_normalised_alias_is_scored_not_only_the_first_three(model_and_tokenizer):
    """The old answerer scored only the first 3 raw aliases. Order the aliases so the best one comes last (after
    raw duplicates of the first that only differ before normalisation): the score must still be its g."""
    ans = _answerer(model_and_tokenizer)
    q, ev = "Which river flows through Paris?", EVIDENCE
    distinct = ["seine", "river seine", "la seine", "sequana", "paris river"]
    direct = {a: _direct_g(model_and_tokenizer, q, ev, a) for a in distinct}
    ranked = sorted(distinct, key=direct.get)  # best last
    assert direct[ranked[-1]] > direct[ranked[0]]
    aliases = [ranked[0], ranked[0].upper(), "The " + ranked[0] + "."] + ranked[1:]  # 3 raw spellings of one alias first
    (g,) = ans.score_many([("q1", q, ("s1", "s2"), ev, aliases)])
    assert g == pytest.approx(direct[ranked[-1]], rel=1e-4)


def test_cache_is_keyed_on_the_question_not_its_text(model_and_tokenizer):
    """Two questions with the same text and the same context but different gold answers (e.g. "Who directed
    it?" in two datasets): the old cache key (question text, context) gave the second the first's score."""
    ans = _answerer(model_and_tokenizer)
    q, ctx, ev = "Who directed it?", ("s1",), EVIDENCE[:1]
    a = ("2wiki-1", q, ctx, ev, ["Steven Spielberg"])
    b = ("2wiki-2", q, ctx, ev, ["Paris"])
    want_a = _direct_g(model_and_tokenizer, q, ev, "steven spielberg")
    want_b = _direct_g(model_and_tokenizer, q, ev, "paris")
    assert want_a != pytest.approx(want_b, rel=1e-3)
    assert ans.score_many([a]) == [pytest.approx(want_a, rel=1e-4)]
    assert ans.score_many([b]) == [pytest.approx(want_b, rel=1e-4)]  # across calls: not served from a's entry
    fresh = _answerer(model_and_tokenizer)
    assert fresh.score_many([a, b]) == [pytest.approx(want_a, rel=1e-4), pytest.approx(want_b, rel=1e-4)]  # inside one call


def test_log_scores_are_the_log_of_g(model_and_tokenizer):
    ans = _answerer(model_and_tokenizer)
    req = ScoreRequest("q1", "What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"])
    (lp,) = ans.log_scores_many([req])
    assert lp == pytest.approx(math.log(_direct_g(model_and_tokenizer, req.question, req.evidence, "paris")), rel=1e-4)


def test_policy_belief_scores_the_live_weights_without_a_stale_cache():
    """IGPO's belief is the *current* policy's (harness-g.tex l.1061): after a weight change the same request
    scores differently (nothing cached across calls), and the policy's train/eval mode is restored."""
    from harness_g.training.modeling import load_policy, load_tokenizer

    cfg = ModelConfig(name="tiny-random")
    tok = load_tokenizer(cfg)
    policy = load_policy(cfg, tok, seed=0).train()
    belief = PolicyBelief(policy, tok, scorer_user_text)
    req = ("q1", "What is the capital of France?", ("s1",), EVIDENCE[:1], ["Paris"])
    (before,) = belief.log_scores_many([req])
    assert policy.training  # restored
    assert before == pytest.approx(math.log(_direct_g((policy.eval(), tok), req[1], req[3], "paris")), rel=1e-4)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.randn_like(p))
    (after,) = belief.log_scores_many([req])
    assert after != pytest.approx(before, rel=1e-4)
    assert after == pytest.approx(math.log(_direct_g((policy, tok), req[1], req[3], "paris")), rel=1e-4)
