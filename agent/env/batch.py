"""Step many environments at once (a GRPO group is N_g rollouts of one question).

All environments share one :class:`GraphView`, so sentence records, entity lists, LOOKUP pools,
vector top-k results and query encodings are fetched once and reused by every rollout (cache
keyed by graph version — one view per graph — and query parameters). Before each batched step the
next lookup queries m_{t+1} of all environments are encoded in one encoder call, and the sentence records, entities
and LOOKUP pools their next menus read are fetched in one store call each.
"""
from __future__ import annotations

from typing import Sequence

from harness_g.agent.env.actions import ActionType, parse_action
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.menu import index_tried, lookup_pools, store_ranked
from harness_g.agent.env.menu_env import MenuEnv, StepResult, committed_query
from harness_g.agent.env.observation import Observation
from harness_g.agent.env.trajectory import Trajectory
from harness_g.agent.env.transition import MenuState, transition
from harness_g.errors import HarnessError
from harness_g.graph.types import QAItem


class BatchedMenuEnv:
    """``reset(items)`` then ``step(replies)`` until ``all_done``; finished environments are skipped."""

    def __init__(self, view: GraphView, size: int, config: EnvConfig | None = None, *, record_previews: bool = False):
        if size < 1:
            raise HarnessError(f"batch size must be >= 1 (got {size})")
        self.view = view
        self.config = config or EnvConfig()
        self.envs = [MenuEnv(view, self.config, record_previews=record_previews) for _ in range(size)]

    def __len__(self) -> int:
        return len(self.envs)

    @property
    def dones(self) -> list[bool]:
        return [e.done for e in self.envs]

    @property
    def all_done(self) -> bool:
        return all(self.dones)

    def reset(self, items: Sequence[QAItem]) -> list[str]:
        """One item per environment (repeat an item N_g times for a GRPO group)."""
        if len(items) != len(self.envs):
            raise HarnessError(f"reset got {len(items)} items for {len(self.envs)} environments")
        self.view.encode(list(dict.fromkeys(i.question for i in items)))  # one encoder call for the batch
        return [env.reset(item) for env, item in zip(self.envs, items)]

    def _prefetch(self, replies: Sequence[str | None]) -> None:
        """Fetch what the next menus of all environments will read, one call per kind instead of one per environment:
        the m_{t+1} encodings (SELECT changes C_t), the sentence records and the entities of every next (C, U), and
        the LOOKUP pools of those entities. Each environment's own menu build then finds them in the view's caches."""
        texts: list[str] = []
        ids: list[str] = []
        for env, reply in zip(self.envs, replies):
            nxt = None if reply is None else self._next_state(env, reply)
            if nxt is None:
                continue
            assert env.state is not None
            if nxt.committed != tuple(env.state.committed):
                texts.append(committed_query(self.view, env.state.question.question, nxt.committed,
                                             self.config.query_max_words)[0])
            ids.extend(nxt.committed)
            ids.extend(nxt.visible)
        if texts:
            self.view.encode(list(dict.fromkeys(texts)))
        if ids:
            ids = list(dict.fromkeys(ids))
            self.view.sentences(ids)
            entities = self.view.entities_of(ids)
            lookupable = list(dict.fromkeys(e.id for found in entities.values() for e in found if e.lookupable))
            tried = set(index_tried(self.view, lookupable, self.config))  # their pools are read on fallback only
            tried |= set(store_ranked(self.view, lookupable, self.config))  # the store ranks their pools
            lookupable = [e for e in lookupable if e not in tried]
            if lookupable:
                lookup_pools(self.view, lookupable, self.config)

    def _next_state(self, env: MenuEnv, reply: str) -> MenuState | None:
        """The state ``reply`` leads ``env`` to (:func:`~harness_g.agent.env.transition.transition`, as ``env.step``
        will apply it) when a new menu follows it; None when none does: the episode is over or ends with this step,
        or the reply names no action of the current menu (the menu stays)."""
        if env.done or env.menu is None or env.state is None:
            return None
        action = parse_action(reply, env.menu.by_id).action
        if action is None:
            return None
        result = env.menu.lookup_results[action.targets[0]] if action.type is ActionType.LOOKUP else None
        nxt = transition(env.state.z, action, result, max_turns=self.config.max_turns)
        return None if nxt.done else nxt

    def step(self, replies: Sequence[str | None]) -> list[StepResult | None]:
        """Step every unfinished environment with its reply; finished ones (or a None reply) give None."""
        if len(replies) != len(self.envs):
            raise HarnessError(f"step got {len(replies)} replies for {len(self.envs)} environments")
        self._prefetch(replies)
        out: list[StepResult | None] = []
        for env, reply in zip(self.envs, replies):
            out.append(None if env.done or reply is None else env.step(reply))
        return out

    def observations(self) -> list[str | None]:
        return [None if e.done else e.observation() for e in self.envs]

    def observe(self) -> list[Observation | None]:
        """Every environment's :class:`~harness_g.agent.env.observation.Observation`; None for finished ones
        (what :meth:`harness_g.agent.policies.llm.LLMPolicy.act_batch` takes)."""
        return [None if e.done else e.observe() for e in self.envs]

    def trajectories(self) -> list[Trajectory | None]:
        return [e.trajectory for e in self.envs]
