"""Menu actions and strict action parsing.

A policy answers with exactly one available action id (``A3``). Anything else — an
unknown id, several ids, no id, or a free-text rider such as ``A1 || some query`` — is
rejected with a reason; the turn still counts and the state does not change.

Parsing is linear in the reply's length and bounded: after trimming surrounding whitespace, a reply
longer than :data:`MAX_REPLY_CHARS` is rejected unexamined ("reply too long"), whatever it holds.
The only whole-reply operation before that check is ``str.strip()`` (one C-level pass). The wrapper
grammar is matched by a deterministic left-to-right scan of small anchored patterns whose adjacent
parts cannot match the same characters, so no input makes the regex engine backtrack.
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


#: Longest reply (after trimming surrounding whitespace) that is parsed at all; a longer reply is
#: rejected unexamined. A valid reply is one id in light wrappers (a few dozen characters), so
#: this only bounds the work spent on a runaway generation or a pasted blob.
MAX_REPLY_CHARS = 10_000
#: at most this many distinct ids are named in a "several action ids" rejection
MAX_IDS_IN_ERROR = 10

_ID = re.compile(r"\bA(\d+)\b")
# Accept light wrappers models add around the id: "A3", "Action: A3", "<action>A3</action>", "**A3**", "A3."
# The grammar, case-insensitive, on the stripped reply:
#   (<action>\s*)? (action\s*[:=]?\s*)? [*`"'[(]* \s* (A\d+) \s* [*`"')\]]* \s* \.? \s* (</action>)? \s*
# A single regex for it backtracks catastrophically (adjacent \s* runs: "A1" + 300 spaces + "x" took
# seconds, 1 MB hung), so it is matched piecewise, in order, each piece taken greedily (see _wrapped_id).
# Within a piece no two quantified parts share a character and each optional part starts with a
# character its successors cannot, so the greedy scan accepts exactly the grammar's language.
_W_TAG_OPEN = re.compile(r"<action>\s*", re.I)
_W_PREFIX = re.compile(r"action\s*(?:[:=]\s*)?", re.I)
_W_OPENERS = re.compile(r"[\*`\"'\[\(]*\s*")
_W_ID = re.compile(r"(A\d+)\s*", re.I)
_W_CLOSERS = re.compile(r"[\*`\"'\]\)]*\s*(?:\.\s*)?(?:</action>\s*)?", re.I)


def _wrapped_id(text: str) -> str | None:
    """The id of a reply that is one id in light wrappers (``text`` already stripped), else None. Linear time."""
    pos = 0
    for optional in (_W_TAG_OPEN, _W_PREFIX):
        m = optional.match(text, pos)
        if m:
            pos = m.end()
    pos = _W_OPENERS.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string
    m = _W_ID.match(text, pos)
    if m is None:
        return None
    action_id = m.group(1)
    pos = _W_CLOSERS.match(text, m.end()).end()  # type: ignore[union-attr]
    return action_id if pos == len(text) else None


def parse_action(text: str, menu: dict[str, Action]) -> ParseResult:
    """Strictly parse a policy's reply into one available action.

    ``menu`` maps action id -> Action. Returns ``ParseResult(action)`` or ``ParseResult(None, reason)``.
    Linear in ``len(text)``; a reply longer than :data:`MAX_REPLY_CHARS` once stripped is rejected unexamined.
    """
    text = "" if text is None else str(text).strip()
    if not text:
        return ParseResult(None, "no action id given; reply with exactly one id such as A0")
    if len(text) > MAX_REPLY_CHARS:
        return ParseResult(None, f"reply too long ({len(text)} characters; at most {MAX_REPLY_CHARS} are read); "
                                 "reply with exactly one action id such as A0")
    if "||" in text:
        return ParseResult(None, "free-text riders are not allowed ('||' found); reply with one action id only")
    wrapped = _wrapped_id(text)
    if wrapped is None:
        ids = list(dict.fromkeys(_ID.findall(text)))
        if not ids:
            return ParseResult(None, "no action id found; reply with exactly one id such as A0")
        if len(ids) > 1:
            named = ", ".join("A" + i for i in ids[:MAX_IDS_IN_ERROR]) + (", ..." if len(ids) > MAX_IDS_IN_ERROR else "")
            return ParseResult(None, f"several action ids given ({named}); choose exactly one")
        return ParseResult(None, "free text around the action id is not allowed; reply with the id only (e.g. A0)")
    action_id = wrapped.upper()
    action = menu.get(action_id)
    if action is None:
        available = ", ".join(menu) if menu else "none"
        return ParseResult(None, f"unknown action id {action_id}; available: {available}")
    return ParseResult(action)
