"""Typed trajectory records, saved as JSONL (one episode per line).

Records are always writable and the files are always valid UTF-8. A reply is untrusted text and may
hold lone surrogates (U+D800-U+DFFF), which UTF-8 cannot encode: an undecodable byte piped into
``harness-g menu`` (Python reads b"\\xff" from stdin as "\\udcff"), a lone "\\ud800" escape in a model
server's JSON. Such a step is written with ``reply`` holding the text with every lone surrogate replaced
by U+FFFD (clean for any reader: reports, jq, other languages) plus ``reply_escaped``, the exact reply
in Python's ASCII ``unicode_escape`` form; ``reply_escaped`` is present only for such replies.
:meth:`Trajectory.from_json` (so :func:`load_jsonl`) restores the exact reply from it, and
:func:`decode_reply` does so for a raw step dict (e.g. from ``records.jsonl``). For a reply read from
stdin, ``reply.encode("utf-8", "surrogateescape")`` then gives back the bytes that were typed. Any other
string of a record holding lone surrogates (question, answer, meta, ...) is written by :func:`json_line`
as ``\\uXXXX`` JSON escapes, which ``json.loads`` restores (a high surrogate written right before a low
one reads back as the one character the pair encodes).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_reply(reply: str) -> dict[str, str]:
    """``{"reply": reply}``, or for a reply holding lone surrogates ``{"reply": <U+FFFD for each>,
    "reply_escaped": <exact reply, unicode_escape>}`` (see the module docstring)."""
    reply = str(reply)
    if _SURROGATE.search(reply) is None:
        return {"reply": reply}
    return {"reply": _SURROGATE.sub("\ufffd", reply), "reply_escaped": reply.encode("unicode_escape").decode("ascii")}


def decode_reply(step: dict[str, Any]) -> str:
    """The exact reply of a step as written by :meth:`Trajectory.to_json` (inverse of :func:`encode_reply`)."""
    escaped = step.get("reply_escaped")
    if escaped is None:
        return step.get("reply", "")
    return str(escaped).encode("ascii").decode("unicode_escape")


def json_line(obj: Any) -> str:
    """``obj`` as one JSON line (no newline) that always encodes as UTF-8: non-ASCII text stays readable,
    lone surrogates (which only occur inside JSON strings) become ``\\uXXXX`` escapes."""
    line = json.dumps(obj, ensure_ascii=False)
    if _SURROGATE.search(line) is None:
        return line
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def record_field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` of a record object or ``obj[name]`` of its JSON dict (readers of both stored and live records)."""
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def lookup_evidence(trajectory: Any) -> list[str]:
    """Sentence ids every executed LOOKUP of an episode brought into view (``introduced``), a last-step LOOKUP
    included, first-seen order, deduplicated. Accepts a :class:`Trajectory` or its JSON dict."""
    ids: list[str] = []
    for step in record_field(trajectory, "steps") or []:
        if record_field(step, "action_type") == "LOOKUP":
            ids.extend(record_field(step, "introduced") or ())
    return list(dict.fromkeys(ids))


@dataclass
class StepRecord:
    """One turn. ``menu`` lists every offered action (id, type, targets, label); ``chosen`` is the
    executed action id or None for an invalid reply. ``produced``/``consumed`` are sentence and
    entity ids; ``producers`` are the earlier steps (−1 = InitRetrieve) whose output this step consumed."""

    turn: int
    menu: list[dict[str, Any]]
    reply: str
    chosen: str | None
    action_type: str | None
    targets: list[str] = field(default_factory=list)
    error: str | None = None
    introduced: list[str] = field(default_factory=list)  # sentences the action surfaced or committed
    produced: list[str] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)
    committed_after: list[str] = field(default_factory=list)
    visible_after: list[str] = field(default_factory=list)
    observed_before: list[str] = field(default_factory=list)  # scorer context O_t (first-seen order)
    previews: dict[str, list[str]] | None = None  # action id -> introduced sentences, when asked
    seconds: float = 0.0

    @property
    def rejected(self) -> list[str]:
        return [a["id"] for a in self.menu if a["id"] != self.chosen]


@dataclass
class Trajectory:
    question_id: str
    question: str
    answers: list[str]
    graph_version: str
    env_config: dict[str, Any]
    initial_visible: list[str]
    steps: list[StepRecord] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    answer: str | None = None
    terminated_by: str = ""  # "ANSWER", "ANSWER_WITH", "max_turns"
    seconds: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def turns(self) -> int:
        return len(self.steps)

    @property
    def invalid_turns(self) -> int:
        return sum(1 for s in self.steps if s.chosen is None)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict; a step's reply with lone surrogates is split into ``reply`` (U+FFFD) and
        ``reply_escaped`` (exact), see the module docstring."""
        data = asdict(self)
        for step in data["steps"]:
            step.update(encode_reply(step["reply"]))
        return data

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Trajectory":
        steps = [StepRecord(**{**{k: v for k, v in s.items() if k != "reply_escaped"}, "reply": decode_reply(s)})
                 for s in obj.get("steps", [])]
        data = {k: v for k, v in obj.items() if k != "steps"}
        return cls(**data, steps=steps)


def save_jsonl(path: str | Path, trajectories: Iterable[Trajectory], append: bool = False) -> None:
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(json_line(t.to_json()) + "\n")


def load_jsonl(path: str | Path) -> Iterator[Trajectory]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield Trajectory.from_json(json.loads(line))
