"""The policy protocol: pick one action per step from an :class:`Observation`, then answer from C_T only.

A policy never sees the environment: it gets an :class:`~harness_g.agent.env.observation.Observation` (rendered
text, the menu, a read-only state summary and read-only ``tools``), so it can be tested without a graph and the
trainer and ``harness-g eval`` drive the same policy object (issue 11 §1). This is the paper's
a_t ~ pi_theta(. | o_t, M_t) (Harness-G §3.1 "Retrieval as Menu Navigation").
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.observation import Observation


class Policy(ABC):
    """``act`` returns the raw reply (normally an action id such as ``A3``); the environment parses it strictly.
    ``answer`` sees the question and C_T as ``[(title, text)]``; its ``observation`` is the episode's final one
    (``done``, empty ``menu``, ``committed`` = C_T)."""

    name: str = "policy"

    @abstractmethod
    def act(self, observation: "Observation") -> str: ...

    @abstractmethod
    def answer(self, question: str, evidence: list[tuple[str, str]], observation: "Observation") -> str: ...

    def settings(self) -> dict[str, Any]:
        """Every option that changes what this policy does (JSON values), recorded in an eval run's ``config.json``:
        resuming a run with other settings is refused (``harness_g.agent.eval.run``). Override when a policy has any."""
        return {}

    def for_interface(self, name: str) -> "Policy":
        """This policy adapted to the knowledge interface ``name`` (menu, free-query, rag, naive): same model and
        settings, acting on that interface's observations. Default: ``self`` -- an interface's observation already
        carries what it shows (the free-query one: no menu, text ending in the free-query instruction). Override
        when the policy's own prompt or plan depends on the interface (HeuristicPolicy, LLMPolicy)."""
        return self

    def trajectory_meta(self, observation: "Observation") -> dict[str, Any]:
        """What this policy records in ``trajectory.meta`` for the episode of ``observation`` (after ``answer``);
        none by default (LLM policies: ``{"llm": token counts and seconds}``)."""
        return {}
