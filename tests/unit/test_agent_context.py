"""The one context builder (agent/llm/context.py) shared by evaluation and training: no graph, no model."""
from __future__ import annotations

import pytest

from harness_g.agent.llm.context import OMITTED, ContextOverflow, EpisodeContext, policy_header
from harness_g.agent.llm.prompts import environment_response
from harness_g.errors import ConfigError


def _play(ctx: EpisodeContext, observations: list[str], replies: list[str]) -> list[list[dict]]:
    sent = []
    for t, obs in enumerate(observations):
        ctx.observe(obs, "start" if t == 0 else "ok")
        sent.append(ctx.messages())
        if t < len(replies):
            ctx.reply(replies[t])
    return sent


def test_multi_turn_context_grows_by_the_reply_and_the_next_observation():
    ctx = EpisodeContext(policy_header("menu"))
    sent = _play(ctx, ["obs zero", "obs one", "obs two"], ["A1", "A0"])
    assert [m["role"] for m in sent[2]] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[0][0]["content"] == policy_header("menu") + "\n\n" + environment_response("obs zero", "start")
    for earlier, later, reply in zip(sent, sent[1:], ["A1", "A0"]):  # every turn extends the previous chat
        assert later[: len(earlier)] == earlier and later[len(earlier)] == {"role": "assistant", "content": reply}
    assert sent[2][-1]["content"] == environment_response("obs two", "ok")
    assert [t.messages for t in ctx.turns] == sent


def test_markov_context_is_the_header_and_the_current_observation_only():
    ctx = EpisodeContext(policy_header("menu"), mode="markov")
    sent = _play(ctx, ["obs zero", "obs one"], ["A1"])
    assert sent[1] == [{"role": "user", "content": policy_header("menu") + "\n\n" + environment_response("obs one", "ok")}]


def test_over_budget_drops_whole_older_turns_and_counts_them():
    ctx = EpisodeContext("HEADER")
    words = lambda msgs: sum(len(m["content"].split()) for m in msgs)  # noqa: E731 - a token counter for the test
    for t, obs in enumerate(["a " * 10, "b " * 10, "c " * 10, "d " * 10]):
        ctx.observe(obs, "start" if t == 0 else "ok")
        msgs = ctx.messages(words, budget=40)
        ctx.reply(f"A{t}")
        assert words(msgs) <= 40
        assert msgs[0]["content"].startswith("HEADER")  # the instruction always stays
        assert "d " * 3 in msgs[-1]["content"] or t < 3  # the latest observation always stays, whole
    assert OMITTED in ctx.turns[-1].messages[0]["content"] and ctx.dropped_turns >= 1
    # nothing is ever cut inside a message: every kept message is one of the full originals
    kept = {m["content"] for m in ctx.turns[-1].messages[1:]}
    assert kept <= {*ctx.responses, *(f"A{t}" for t in range(4))}


def test_a_latest_observation_over_budget_is_refused_not_cut():
    ctx = EpisodeContext("HEADER")
    ctx.observe("word " * 100, "start")
    with pytest.raises(ContextOverflow, match="over the prompt budget of 50"):
        ctx.messages(lambda m: sum(len(x["content"].split()) for x in m), budget=50)


def test_protocol_misuse_and_unknown_modes_are_errors():
    with pytest.raises(ConfigError, match="unknown context mode 'chain'"):
        EpisodeContext("H", mode="chain")
    ctx = EpisodeContext("H")
    with pytest.raises(ConfigError, match="call observe"):
        ctx.messages()
    with pytest.raises(ConfigError, match="reply\\(\\) without"):
        ctx.reply("A0")
    with pytest.raises(ConfigError, match="free-query"):
        policy_header("rag")
