"""parse_action is linear and bounded (regression: catastrophic backtracking on "id, whitespace, text").

The old parser matched replies with one regex whose adjacent ``\\s*`` runs backtracked: ``"A1" + " " * 300 + "x"``
took seconds, 1,000 spaces minutes, a 1 MB reply hung -- exposing ``harness-g menu``, every LLM eval and every
training rollout to one bad reply. These tests time every parse; they hang or fail on the old parser.

The reference for the strict semantics is the old parser itself (copied verbatim below), run on the reply with
every whitespace run collapsed to one space: the wrapper grammar only ever allows ``\\s*`` (any amount of
whitespace) and no other part of it matches whitespace, so the collapse changes no verdict -- and on collapsed
replies the old regex is fast.
"""
from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers.sample_menu import MENU

from harness_g.agent.env.actions import MAX_IDS_IN_ERROR, MAX_REPLY_CHARS, ParseResult, parse_action

pytestmark = pytest.mark.timeout(300)  # the old parser hung here: fail instead of blocking the suite


#: a parse must finish within this many seconds (best of 3 runs, so a scheduler hiccup on a loaded
#: 2-core machine cannot fail it). The fixed parser takes well under 5 ms on any input; the old one
#: took 3-4 s on 300 spaces.
BOUND_S = 0.05


def timed_parse(reply, menu=MENU) -> tuple[ParseResult, float]:
    best, result = float("inf"), None
    for _ in range(3):
        t0 = time.perf_counter()
        result = parse_action(reply, menu)
        best = min(best, time.perf_counter() - t0)
        if best < BOUND_S:
            break
    assert result is not None
    return result, best


# -- the old parser, verbatim: the reference for the strict semantics (on whitespace-collapsed replies) --
_OLD_ID = re.compile(r"\bA(\d+)\b")
_OLD_WRAPPER = re.compile(r"^\s*(?:<action>\s*)?(?:action\s*[:=]?\s*)?[\*`\"'\[\(]*\s*(A\d+)\s*[\*`\"'\]\)]*\s*\.?\s*(?:</action>)?\s*$", re.I)


def old_parse_action(text, menu):
    if text is None or not str(text).strip():
        return ParseResult(None, "no action id given; reply with exactly one id such as A0")
    text = str(text).strip()
    if "||" in text:
        return ParseResult(None, "free-text riders are not allowed ('||' found); reply with one action id only")
    ids = _OLD_ID.findall(text)
    m = _OLD_WRAPPER.match(text)
    if m is None:
        if not ids:
            return ParseResult(None, "no action id found; reply with exactly one id such as A0")
        if len(set(ids)) > 1:
            return ParseResult(None, f"several action ids given ({', '.join('A' + i for i in dict.fromkeys(ids))}); choose exactly one")
        return ParseResult(None, "free text around the action id is not allowed; reply with the id only (e.g. A0)")
    action_id = m.group(1).upper()
    action = menu.get(action_id)
    if action is None:
        available = ", ".join(menu) if menu else "none"
        return ParseResult(None, f"unknown action id {action_id}; available: {available}")
    return ParseResult(action)


def reference(reply: str) -> ParseResult:
    """What the strict rule says about ``reply`` (the old verdict, plus the documented length cap)."""
    if reply.strip() and len(reply.strip()) > MAX_REPLY_CHARS:
        return ParseResult(None, "reply too long")
    return old_parse_action(re.sub(r"\s+", " ", reply), MENU)


def assert_consistent(reply: str, got: ParseResult) -> None:
    want = reference(reply)
    assert got.action is want.action, (reply[:80], got, want)
    if got.action is not None:  # the rule itself, independently of the reference
        assert got.error is None and "||" not in reply and len(reply.strip()) <= MAX_REPLY_CHARS
        # the grammar lets the id touch an "action" prefix ("actionA0"), where \b sees no boundary
        unprefixed = re.sub("action", " ", reply, flags=re.I)
        assert {i.upper() for i in re.findall(r"\bA\d+\b", unprefixed, re.I)} == {got.action.id}
        return
    assert got.error is not None
    if want.error == "reply too long":
        assert got.error.startswith(f"reply too long ({len(reply.strip())} characters; at most {MAX_REPLY_CHARS}")
    elif want.error.startswith("several action ids given ("):
        ids = list(dict.fromkeys(_OLD_ID.findall(reply)))
        named = ", ".join("A" + i for i in ids[:MAX_IDS_IN_ERROR]) + (", ..." if len(ids) > MAX_IDS_IN_ERROR else "")
        assert got.error == f"several action ids given ({named}); choose exactly one"
    else:
        assert got.error == want.error


# -- explicit attacks ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply, expected",
    [
        ("A1" + " " * 300 + "x", "free text around the action id"),  # 3-4 s on the old parser
        ("A1" + " " * 1_000 + "x", "free text around the action id"),  # minutes
        ("A1" + " " * 9_000 + "x", "free text around the action id"),  # just under the cap: still examined
        ("A1" + " " * 100_000 + "x", "reply too long (100003 characters; at most 10000 are read)"),
        ("A1" + " " * 1_000_000 + "x", "reply too long"),  # 1 MB: hung
        ("A1 " * 350_000, "reply too long"),  # 1 MB of ids
        ("x" * 1_000_000, "reply too long"),
        ("A1" + "\n" * 10_000 + "A1", "reply too long"),
        ("A1" + "\n" * 5_000 + "A1", "free text around the action id"),  # same id twice, under the cap
        ("A1" + "\n" * 5_000 + "A3", "several action ids given (A1, A3)"),
        ("<action>" + " " * 4_000 + "action" + " " * 3_000 + "A1" + " " * 2_000 + "x", "free text around the action id"),
        ("(" * 5_000 + " " * 4_000 + "A1 x", "free text around the action id"),
        ("A1 || " + " " * 9_000 + "x", "free-text riders"),
        (" ".join(f"A{i}" for i in range(20)), "several action ids given (A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, ...)"),
    ],
)
def test_attack_replies_are_rejected_in_bounded_time(reply: str, expected: str) -> None:
    result, seconds = timed_parse(reply)
    assert seconds < BOUND_S, f"parse took {seconds:.3f}s on a {len(reply)}-character reply"
    assert result.action is None and expected in result.error
    assert "\n" not in result.error and len(result.error) < 300
    assert_consistent(reply, result)


@pytest.mark.parametrize(
    "reply, expected",
    [
        (" " * 1_000_000 + "A3" + "\n" * 1_000_000, "A3"),  # surrounding whitespace does not count toward the cap
        ("<action>" + " " * 4_000 + "A3" + " " * 4_000 + "</action>", "A3"),
        ("Action:" + "\t" * 9_000 + "**A10**.", "A10"),
    ],
)
def test_long_but_valid_replies_parse_in_bounded_time(reply: str, expected: str) -> None:
    result, seconds = timed_parse(reply)
    assert seconds < BOUND_S
    assert result.error is None and result.action is MENU[expected]
    assert_consistent(reply, result)


def test_unknown_id_still_lists_available_ids() -> None:
    result, seconds = timed_parse("  **A99**  " + " " * 50_000)
    assert seconds < BOUND_S
    assert result.error == "unknown action id A99; available: A0, A1, A2, A3, A10"


# -- property tests -----------------------------------------------------------------------------------------------
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u2028\u3000"
FRAGMENTS = ["A0", "A1", "a3", "A10", "A99", "A", "1", "<action>", "</action>", "action", "Action:", "=", "**", "`", "'",
             '"', "(", ")", "[", "]", ".", "|", "||", "x", "choose", "é", "\u0663", "😀", "\u200b"]

piece = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.text(alphabet=WHITESPACE, min_size=1, max_size=4),
    st.text(max_size=12),  # arbitrary unicode
    # long runs: the shapes that backtracked (up to 50k characters each)
    st.builds(lambda s, n: s * n, st.sampled_from([" ", "\n", "\t", " x", "A1 ", "(", "*", "\u3000", "é"]), st.integers(1, 50_000)),
)
replies = st.lists(piece, max_size=8).map("".join).filter(lambda r: len(r) <= 200_000)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(replies)
@example("actionA0")  # found by this test on a random draw: the id touching the prefix is accepted, as the old parser did
def test_any_reply_parses_in_bounded_time_and_strictly(reply: str) -> None:
    result, seconds = timed_parse(reply)
    assert seconds < BOUND_S, f"parse took {seconds:.3f}s on a {len(reply)}-character reply"
    assert_consistent(reply, result)


short_replies = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet=WHITESPACE, min_size=1, max_size=3),
                                   st.text(max_size=4)), max_size=8).map("".join)


@settings(max_examples=500, deadline=None, database=None)
@given(short_replies)
def test_short_replies_match_the_old_parser_exactly(reply: str) -> None:
    """Uncollapsed and short (where the old regex is fast): the verdicts and messages are unchanged."""
    assert parse_action(reply, MENU) == old_parse_action(reply, MENU)
