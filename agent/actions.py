"""Menu actions and strict action parsing.

A policy answers with exactly one available action id (``A3``). Anything else — an
unknown id, several ids, no id, or a free-text rider such as ``A1 || some query`` — is
rejected with a reason; the turn still counts and the state does not change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class ActionType(str, Enum):
    SELECT = "SELECT"
    LOOKUP = "LOOKUP"
    ANSWER_WITH = "ANSWER_WITH"
    ANSWER = "ANSWER"

    @property
    def acquires_information(self) -> bool:
        """LOOKUP brings new sentences into view; SELECT/ANSWER_WITH commit, ANSWER stops."""
        return self is ActionType.LOOKUP


@dataclass(frozen=True)
class Action:
    """One menu entry. ``targets`` are sentence ids (SELECT/ANSWER_WITH) or one entity id (LOOKUP)."""

    id: str  # "A0", "A1", ...
    type: ActionType
    targets: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"id": self.id, "type": self.type.value, "targets": list(self.targets)}


@dataclass(frozen=True)
class ParseResult:
    action: Action | None
    error: str | None = None


_ID = re.compile(r"\bA(\d+)\b")
# Accept light wrappers models add around the id: "A3", "Action: A3", "<action>A3</action>", "**A3**", "A3."
_WRAPPER = re.compile(r"^\s*(?:<action>\s*)?(?:action\s*[:=]?\s*)?[\*`\"'\[\(]*\s*(A\d+)\s*[\*`\"'\]\)]*\s*\.?\s*(?:</action>)?\s*$", re.I)


def parse_action(text: str, menu: dict[str, Action]) -> ParseResult:
    """Strictly parse a policy's reply into one available action.

    ``menu`` maps action id -> Action. Returns ``ParseResult(action)`` or ``ParseResult(None, reason)``.
    """
    if text is None or not str(text).strip():
        return ParseResult(None, "no action id given; reply with exactly one id such as A0")
    text = str(text).strip()
    if "||" in text:
        return ParseResult(None, "free-text riders are not allowed ('||' found); reply with one action id only")
    ids = _ID.findall(text)
    m = _WRAPPER.match(text)
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
