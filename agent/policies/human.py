"""A person plays the menu in the terminal (``harness-g menu``): reads one line per step."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from harness_g.agent.policies.base import Policy

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.observation import Observation


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

    def act(self, observation: "Observation") -> str:
        self.stdout.write("\n" + observation.text + "\n")
        try:
            return self._read("action> ")
        except EOFError:  # ANSWER: the menu's last action (the free-query arm has no ids: its ANSWER move)
            return observation.menu[-1].id if observation.menu else "ANSWER"

    def answer(self, question: str, evidence: list[tuple[str, str]], observation: "Observation") -> str:
        self.stdout.write("\nCommitted evidence:\n" + "\n".join(f"  {i + 1}. {t}: {s}" for i, (t, s) in enumerate(evidence)) + "\n")
        try:
            return self._read("answer> ")
        except EOFError:
            return ""
