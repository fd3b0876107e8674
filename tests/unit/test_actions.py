"""Strict action parsing: exactly one available id, light wrappers allowed, anything else rejected."""
from __future__ import annotations

import pytest

from helpers.sample_menu import MENU

from harness_g.agent.env.actions import parse_action



@pytest.mark.parametrize(
    "reply, expected",
    [
        ("A3", "A3"),
        ("  A3\n", "A3"),
        ("a3", "A3"),
        ("<action>A3</action>", "A3"),
        ("<action> A1 </action>", "A1"),
        ("Action: A2", "A2"),
        ("**A0**", "A0"),
        ("`A3`", "A3"),
        ("A3.", "A3"),
        ("A10", "A10"),  # not confused with A1
    ],
)
def test_valid_replies(reply: str, expected: str) -> None:
    result = parse_action(reply, MENU)
    assert result.error is None
    assert result.action is MENU[expected]


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("A1 || some query", "free-text riders"),
        ("A1||Paris", "free-text riders"),
        ("<action>A1</action> || who directed it", "free-text riders"),
        ("A1 A2", "several action ids given (A1, A2)"),
        ("A1, A3", "several action ids given (A1, A3)"),
        ("", "no action id given"),
        ("   ", "no action id given"),
        (None, "no action id given"),
        ("hello", "no action id found"),
        ("SELECT S0", "no action id found"),
        ("I choose A3", "free text around the action id"),
        ("A3 because it answers", "free text around the action id"),
        ("<action>A3</action> done", "free text around the action id"),
    ],
)
def test_rejected_replies(reply, reason: str) -> None:
    result = parse_action(reply, MENU)
    assert result.action is None
    assert result.error is not None and reason in result.error


def test_unknown_id_lists_available() -> None:
    result = parse_action("A99", MENU)
    assert result.action is None
    assert result.error == "unknown action id A99; available: A0, A1, A2, A3, A10"
    assert parse_action("A4", {}).error == "unknown action id A4; available: none"
