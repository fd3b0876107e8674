"""The policy protocol: pick one action id per step, then answer from committed evidence only."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env import MenuEnv


class Policy(ABC):
    """``act`` returns the raw reply (normally an action id such as ``A3``); the environment
    parses it strictly. ``answer`` sees only the question and C_T as ``[(title, text)]``."""

    name: str = "policy"

    @abstractmethod
    def act(self, observation: str, env: "MenuEnv") -> str: ...

    @abstractmethod
    def answer(self, question: str, evidence: list[tuple[str, str]], env: "MenuEnv") -> str: ...
