"""The reply grammar of the transition-matched free-query arm (paper appendix "Transition-matched interface
comparison", harness-g.tex l.1050-1057): moves by sentence handle, free search strings, malformed replies, and
parsing in bounded time. No graph; the arm itself runs on the real graph in tests/e2e/test_free_query_arm.py.
"""
from __future__ import annotations

import pytest

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.free_query import parse_free_reply


# -- reply grammar (no graph) ----------------------------------------------------------------------------
@pytest.mark.parametrize("reply, kind, move, query", [
    ("SELECT S1", "move", (ActionType.SELECT, "S1"), ""),
    ("**select s12**", "move", (ActionType.SELECT, "S12"), ""),
    ("ANSWER_WITH S0", "move", (ActionType.ANSWER_WITH, "S0"), ""),
    ("ANSWER_WITH S2 S0", "move", (ActionType.ANSWER_WITH, "S2 S0"), ""),  # multi-sentence ANSWER_WITH
    ("answer_with s1, s3", "move", (ActionType.ANSWER_WITH, "S1 S3"), ""),
    ("SELECT S1 S2", "invalid", None, ""),  # SELECT commits one sentence
    ("ANSWER.", "move", (ActionType.ANSWER, None), ""),
    ("answer", "move", (ActionType.ANSWER, None), ""),
    ("SEARCH: who directed Jaws", "search", None, "who directed Jaws"),
    ("<search>  Jaws   director </search>", "search", None, "Jaws director"),
    ("Steven Spielberg birth date", "search", None, "Steven Spielberg birth date"),  # an arbitrary string u_t
    ("A3", "search", None, "A3"),  # there are no ids in this arm: just text
    ("SELECT the second sentence", "invalid", None, ""),  # a malformed move is never a search
    ("ANSWER: Paris", "invalid", None, ""),
    ("", "invalid", None, ""),
    ("SEARCH:", "invalid", None, ""),
])
def test_reply_grammar(reply: str, kind: str, move, query: str) -> None:
    parsed = parse_free_reply(reply)
    assert (parsed.kind, parsed.move, parsed.query) == (kind, move, query)
    assert (parsed.error is None) == (kind != "invalid")


def test_reply_parsing_is_bounded() -> None:
    assert parse_free_reply("x" * 20_000).kind == "invalid"
    assert parse_free_reply("*" * 9_000 + "SELECT S1" + "*" * 900).move == (ActionType.SELECT, "S1")
