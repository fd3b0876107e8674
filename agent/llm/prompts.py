"""The prompt stack (paper appendix "Environment Protocol and Prompts").

Five pieces, kept short so they fit a small model's context:

- :func:`policy_instruction`   what the agent does and how it must reply;
- :func:`tool_schema`          the model-visible description of the menu tool (JSON-schema-like text);
- :func:`environment_response` the event-conditioned wrapper around each rendered observation;
- :func:`answer_prompt` / :func:`scorer_prompt`  answer from committed evidence C_T only (the
  scorer prompt is the frozen answerer's, used by SNC; it never enters the policy context);
- :func:`free_query_header`    the free-query arm's opening instruction (no ids, a free search string).

No custom system prompt: the model's chat template supplies its default system message.
Prompts are returned as chat messages (``[{"role": "user", "content": ...}]``) where a backend
consumes them directly.
"""
from __future__ import annotations

import json
from typing import Sequence

Message = dict[str, str]
Evidence = Sequence[tuple[str, str]]  # [(title, sentence)] in commit order

#: the events an environment response reports (the same three as
#: :data:`harness_g.agent.env.observation.EVENTS`; llm/ imports nothing of env/, a unit test keeps them equal)
EVENTS = ("start", "ok", "invalid")


def policy_instruction() -> str:
    return (
        "You answer a multi-hop question by navigating an evidence menu. Each step shows the question, "
        "your committed evidence, visible sentences (S0, S1, ...), entities (E0, E1, ...) and a numbered "
        "action menu (A0, A1, ...). Action types:\n"
        "- SELECT S: commit a visible sentence as evidence (the final answer sees committed evidence only).\n"
        "- LOOKUP E: the environment retrieves new sentences about entity E.\n"
        "- ANSWER_WITH S ...: commit the listed sentence(s) and stop.\n"
        "- ANSWER: stop and answer from the committed evidence.\n"
        "Reply with exactly one action id from the menu, e.g. A0, and nothing else. Never write a search "
        "query. Do not invent entities or ask for dates, nationalities or values you already have."
    )


def tool_schema() -> str:
    """The menu tool as the model sees it; the call is the bare action id."""
    schema = {
        "name": "menu",
        "description": "Execute one action from the current menu. The environment builds every retrieval "
                       "query itself; free text after the id is rejected.",
        "parameters": {
            "type": "object",
            "properties": {"action_id": {"type": "string", "pattern": "^A[0-9]+$",
                                         "description": "an id listed under Actions"}},
            "required": ["action_id"],
        },
    }
    return "Tool:\n" + json.dumps(schema, separators=(",", ":")) + "\nCall it by replying with the id alone (A3)."


def environment_response(observation: str, event: str = "ok", error: str | None = None) -> str:
    """Wrap a rendered observation. ``event``: "start" (first menu), "ok" (the last action ran) or
    "invalid" (the last reply was rejected; ``error`` is the reason, the turn was still used)."""
    if event == "start":
        head = "Episode start."
    elif event == "ok":
        head = "Action executed."
    elif event == "invalid":
        head = f"Rejected: {error or 'invalid reply'}. The state is unchanged and the turn was used."
    else:
        raise ValueError(f"unknown event {event!r}; expected one of {', '.join(EVENTS)}")
    return f"{head}\n<observation>\n{observation}\n</observation>"


def format_evidence(evidence: Evidence) -> str:
    if not evidence:
        return "(none)"
    return "\n".join(f"{i + 1}. {title}: {text}" for i, (title, text) in enumerate(evidence))


def answer_prompt(question: str, evidence: Evidence) -> list[Message]:
    """The final answer, generated from the question and committed evidence C_T only."""
    return [{"role": "user", "content": (
        "Answer the question using only the evidence.\n"
        f"Evidence:\n{format_evidence(evidence)}\n"
        f"Question: {question}\n"
        "Reply with a short answer span only (a name, date, number, or yes/no), no explanation. "
        "Avoid 'unknown': give your best answer from the evidence."
    )}]


def scorer_prompt(question: str, evidence: Evidence) -> list[Message]:
    """The frozen answerer's prompt for SNC (teacher-forced gold-answer likelihood); same shape as
    :func:`answer_prompt` so the scorer and the policy's answer read evidence identically."""
    return answer_prompt(question, evidence)


def free_query_header() -> str:
    """The LLM policy's opening instruction for the free-query arm: the menu header
    (``prompts.policy_instruction`` + ``prompts.tool_schema``) with the action ids and LOOKUP entities
    replaced by a free search string. SELECT / ANSWER_WITH / ANSWER are the menu arm's, by sentence handle."""
    return (
        "You answer a multi-hop question by searching for evidence. Each step shows the question, your committed "
        "evidence and the sentences currently visible (S0, S1, ...). Moves:\n"
        "- SELECT S: commit visible sentence S as evidence (the final answer sees committed evidence only).\n"
        "- SEARCH: <text>: write a search request in your own words; the search engine retrieves new sentences "
        "about the closest matching entity.\n"
        "- ANSWER_WITH S ...: commit the listed visible sentence(s) and stop.\n"
        "- ANSWER: stop and answer from the committed evidence.\n"
        "Reply with exactly one move and nothing else, e.g. SELECT S0, SEARCH: <what to look up>, ANSWER_WITH S1 "
        "or ANSWER."
    )
