"""A person plays the menu in the terminal (``harness-g menu``): reads one line per step.

A person is not a policy under training, so typing mistakes are forgiven (issue 15 §5): an empty line, ``help``
(or ``?``), an unknown id or anything that is not one action id is explained and asked again without spending a
turn; ``quit`` (or ``q``, ``exit``, end of input) ends the episode with the menu's ANSWER. Only a reply that names an
offered action reaches the environment, which still parses it strictly: policies keep the strict rule (an invalid
reply costs its turn, see :mod:`harness_g.agent.env.actions`).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from harness_g.agent.env.actions import parse_action
from harness_g.agent.policies.base import Policy

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.observation import Observation

QUIT = ("quit", "q", "exit")
HELP = ("help", "?", "h")

MENU_HELP = (
    "Type one action id from the Actions list and press Enter, e.g. A0.\n"
    "  SELECT S<i>        commit visible sentence S<i> as evidence\n"
    "  LOOKUP E<j>        retrieve new sentences about entity E<j>\n"
    "  ANSWER_WITH S ...  commit the listed sentence(s) and stop\n"
    "  ANSWER             stop and answer from the committed evidence\n"
    "'help' shows this again; 'quit' ends the episode (ANSWER). Nothing but an action id spends a turn."
)
FREE_HELP = (
    "Type one move: SELECT S<i>, ANSWER_WITH S<i> [S<j>], ANSWER, or a free search text (SEARCH: <text>).\n"
    "'help' shows this again; 'quit' ends the episode (ANSWER)."
)


class HumanPolicy(Policy):
    name = "human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def _read(self, prompt: str) -> str:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:  # EOF: end the episode cleanly instead of looping on empty input
            raise EOFError("no more input")
        return line.rstrip("\n")

    @staticmethod
    def _answer_id(observation: "Observation") -> str:
        """The menu's ANSWER (its last action); the free-query arm has no ids: its ANSWER move."""
        return observation.menu[-1].id if observation.menu else "ANSWER"

    def _problem(self, reply: str, observation: "Observation") -> str | None:
        """Why ``reply`` would be rejected (a reason to show), or None when it names an offered action."""
        if not observation.menu:  # free-query arm: any non-empty text is a move or a search
            return None
        return parse_action(reply, {a.id: a for a in observation.menu}).error  # type: ignore[misc]

    def act(self, observation: "Observation") -> str:
        self.stdout.write("\n" + observation.text + "\n")
        helptext = MENU_HELP if observation.menu else FREE_HELP
        while True:
            try:
                reply = self._read("action> ").strip()
            except EOFError:
                return self._answer_id(observation)
            word = reply.lower()
            if word in QUIT:
                return self._answer_id(observation)
            if not reply or word in HELP:
                self.stdout.write(helptext + "\n")
                continue
            problem = self._problem(reply, observation)
            if problem is None:
                return reply
            self.stdout.write(f"Not an action: {problem}. No turn was used; try again ('help' for help).\n")

    def answer(self, question: str, evidence: list[tuple[str, str]], observation: "Observation") -> str:
        self.stdout.write("\nCommitted evidence:\n" + "\n".join(f"  {i + 1}. {t}: {s}" for i, (t, s) in enumerate(evidence)) + "\n")
        try:
            return self._read("answer> ")
        except EOFError:
            return ""
