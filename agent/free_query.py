"""The matched free-query arm (paper appendix "Additional Evaluation Protocols", *Transition-matched
interface comparison*).

At each state the menu environment builds its feasible-target set A_t exactly as for the menu arm.
The free-query policy sees the same evidence state (question, committed evidence, visible sentences)
but **no executable ids** and writes an arbitrary string u_t. A frozen resolver ρ encodes u_t with
the graph's shared encoder, ranks the textual representation of every target in A_t by cosine and
deterministically picks the best (ties: lowest action number). The chosen target is executed by the
very same :meth:`MenuEnv.step`, so initial retrieval, filtering, caps, turn budget and transitions
are identical between the arms; only the string-to-target mapping differs.

Textual representations of targets (what u_t is matched against):

==============  ==========================================
SELECT s        the sentence text
LOOKUP e        the entity's surface form
ANSWER_WITH s   ``"answer with: " + sentence text``
ANSWER          ``"answer"``
==============  ==========================================

Every free-text string is kept: ``StepRecord.reply`` holds u_t and ``trajectory.meta["free_query"]``
lists ``{turn, query, resolved, type, targets, score, runner_up}`` per step (for D_query diagnostics).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from harness_g.agent.actions import Action, ActionType
from harness_g.agent.config import EnvConfig
from harness_g.agent.env import EnvState, MenuEnv, StepResult
from harness_g.agent.graph_view import GraphView
from harness_g.agent.policies.base import Policy
from harness_g.agent.retrieval import lookup_query
from harness_g.errors import HarnessError
from harness_g.graph.types import QAItem

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.menu import Menu
    from harness_g.agent.trajectory import Trajectory

ANSWER_TEXT = "answer"
ANSWER_WITH_PREFIX = "answer with: "
#: cosines closer than this count as a tie (broken by action number), so resolution does not
#: depend on last-bit BLAS noise
TIE_DECIMALS = 6

_FREE_QUERY_INSTRUCTION = (
    "Reply with one line of free text: a search request for the evidence you need next (an entity name, "
    "a fact to look up, or the wording of a visible sentence to keep as evidence), or ANSWER when the "
    "committed evidence is enough. There are no action ids; your text is matched to the closest "
    "available move."
)


def free_query_instruction() -> str:
    """The policy instruction for the free-query arm (the menu arm's counterpart is
    :data:`harness_g.agent.render.INSTRUCTION`)."""
    return _FREE_QUERY_INSTRUCTION


#: free-text replies need more room than an action id (LLM policies default to 8 new tokens)
FREE_QUERY_MAX_NEW_TOKENS = 48


def free_query_header() -> str:
    """The LLM policy's opening instruction for the free-query arm: the menu header
    (``prompts.policy_instruction`` + ``prompts.tool_schema``) with ids and the tool replaced by free text.
    Same move semantics as the menu arm, so the arms differ only in how a target is named."""
    return (
        "You answer a multi-hop question by searching for evidence. Each step shows the question, your committed "
        "evidence and the sentences currently visible. Moves:\n"
        "- keep a visible sentence as evidence (the final answer sees committed evidence only);\n"
        "- look up an entity: the search engine retrieves new sentences about it;\n"
        "- answer with a visible sentence: keep it and stop;\n"
        "- ANSWER: stop and answer from the committed evidence.\n"
        "Reply with one line of free text naming the move you want: the wording of a sentence to keep, the name of "
        "what to look up, 'answer with: ' plus a sentence, or ANSWER. Your text is matched to the closest available move."
    )


def render_free_observation(turn: int, max_turns: int, question: str, committed: Sequence[tuple[str, str]],
                            visible: Sequence[tuple[str, str]], error: str | None = None) -> str:
    """The menu observation minus every executable id: no S*/E*/A* labels, no entity list, no actions."""
    lines = [f"[Step {turn + 1}/{max_turns}]", f"Question: {question}", "Committed evidence:"]
    lines += [f"  {i + 1}. {t}: {s}" for i, (t, s) in enumerate(committed)] or ["  (none)"]
    lines.append("Visible sentences:")
    lines += [f"  - {t}: {s}" for t, s in visible] or ["  (none)"]
    if error:
        lines.append(f"Note: {error}")
    lines.append(free_query_instruction())
    return "\n".join(lines)


def target_text(action: Action, menu: "Menu") -> str:
    """The textual representation of one feasible target (see the module table)."""
    if action.type is ActionType.ANSWER:
        return ANSWER_TEXT
    if action.type is ActionType.LOOKUP:
        return menu._entity[action.targets[0]].surface
    by_id = {s.id: s.text for s in menu.sentences}
    text = " ".join(by_id.get(t, "") for t in action.targets)
    return ANSWER_WITH_PREFIX + text if action.type is ActionType.ANSWER_WITH else text


def _action_number(action_id: str) -> int:
    m = re.fullmatch(r"A(\d+)", action_id)
    return int(m.group(1)) if m else 1 << 30


@dataclass(frozen=True)
class Resolution:
    """ρ(z_t, u_t): the chosen target and how it won."""

    query: str
    action_id: str
    type: str
    targets: tuple[str, ...]
    score: float
    ranked: tuple[tuple[str, float], ...] = field(default=())  # every target, best first

    @property
    def runner_up(self) -> tuple[str, float] | None:
        return self.ranked[1] if len(self.ranked) > 1 else None


class Resolver:
    """Frozen string-to-target resolver over the shared encoder (``view.encode``, cached per text)."""

    def __init__(self, view: GraphView):
        self.view = view

    def resolve(self, query: str, menu: "Menu") -> Resolution:
        if not menu.actions:
            raise HarnessError("the menu has no actions to resolve a free query against")
        query = "" if query is None else str(query).strip()
        texts = [target_text(a, menu) for a in menu.actions]
        vecs = self.view.encode([query] + texts).astype(np.float64)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-12
        sims = vecs[1:] @ vecs[0]
        order = sorted(range(len(texts)), key=lambda i: (-round(float(sims[i]), TIE_DECIMALS), _action_number(menu.actions[i].id)))
        best = menu.actions[order[0]]
        ranked = tuple((menu.actions[i].id, round(float(sims[i]), TIE_DECIMALS)) for i in order)
        return Resolution(query, best.id, best.type.value, best.targets, ranked[0][1], ranked)


class FreeQueryEnv:
    """A :class:`MenuEnv` seen through free text. Same ``reset/step/done/committed_texts/finish``
    protocol, so :func:`harness_g.agent.runner.run_episode` drives it unchanged.

    Deliberately exposes no ``menu``: policies get ``observation`` (ids removed), ``state``
    (question, committed, visible, turn), ``view`` and ``config``. ``inner`` is the wrapped
    MenuEnv, for the harness and tests only.
    """

    interface = "free-query"

    def __init__(self, env: MenuEnv | GraphView, config: EnvConfig | None = None, *, resolver: Resolver | None = None):
        self.inner = env if isinstance(env, MenuEnv) else MenuEnv(env, config)
        self.resolver = resolver or Resolver(self.inner.view)
        self.resolutions: list[Resolution] = []

    # -- what policies may read -----------------------------------------------------------
    @property
    def view(self) -> GraphView:
        return self.inner.view

    @property
    def config(self) -> EnvConfig:
        return self.inner.config

    @property
    def state(self) -> EnvState | None:
        return self.inner.state

    @property
    def trajectory(self) -> "Trajectory | None":
        return self.inner.trajectory

    @property
    def done(self) -> bool:
        return self.inner.done

    def committed_texts(self) -> list[tuple[str, str]]:
        return self.inner.committed_texts()

    def visible_texts(self) -> list[tuple[str, str]]:
        """``[(title, text)]`` of U_t as the menu shows it (text-deduplicated, committed removed)."""
        menu = self.inner.menu
        return [] if menu is None else [(s.title, s.text) for s in menu.sentences]

    def observation(self, error: str | None = None) -> str:
        st = self.inner._require_state()
        return render_free_observation(st.turn, self.config.max_turns, st.question.question, self.committed_texts(),
                                       self.visible_texts(), error)

    # -- episode --------------------------------------------------------------------------
    def reset(self, question: QAItem | str) -> str:
        self.inner.reset(question)
        self.resolutions = []
        assert self.inner.trajectory is not None
        self.inner.trajectory.meta["interface"] = self.interface
        self.inner.trajectory.meta["free_query"] = []
        return self.observation()

    def resolve(self, query: str) -> Resolution:
        """ρ(z_t, u_t) for the current state, without executing it."""
        self.inner._require_state()
        assert self.inner.menu is not None
        return self.resolver.resolve(query, self.inner.menu)

    def step(self, query: str) -> StepResult:
        """Resolve ``query`` to one feasible target and execute it through ``MenuEnv.step``."""
        st = self.inner._require_state()
        turn = st.turn
        res = self.resolve(query)
        self.resolutions.append(res)
        result = self.inner.step(res.action_id)
        traj = self.inner.trajectory
        assert traj is not None
        traj.steps[-1].reply = res.query  # the policy's own words, not the resolved id
        runner = res.runner_up
        traj.meta["free_query"].append({
            "turn": turn, "query": res.query, "resolved": res.action_id, "type": res.type, "targets": list(res.targets),
            "score": res.score, "runner_up": list(runner) if runner else None,
        })
        info = dict(result.info) | {"resolution": asdict(res) | {"ranked": [list(r) for r in res.ranked[:5]]}}
        return StepResult(self.observation() if not result.done else "", result.done, result.valid, result.error, info)

    def finish(self, answer: str, **meta: Any) -> "Trajectory":
        traj = self.inner.finish(answer, **meta)
        traj.meta["queries"] = [r.query for r in self.resolutions]
        return traj


# -- policies for the free-query arm ---------------------------------------------------------------
class HeuristicFreeQueryPolicy(Policy):
    """LLM-free free-query counterpart of :class:`HeuristicPolicy` (same plan, written as text).

    It writes search-style text, never an id and never a copied sentence: turn 1 is the question
    itself (the resolver maps it to the closest target — a question-like string often lands on
    ANSWER_WITH of the most similar sentence, which is the arm's aliasing, not a bug). After the
    first commit: the name of the best entity mentioned in the committed evidence but not in the
    question (the bridge hop, Search-R1 style "<entity>" query). Then ``"answer with: " +
    concat(q, C_t)``, and ``ANSWER`` once ``max_commits`` sentences are committed or on the last turn.
    The answer is the heuristic's extractive answer from C_T.
    """

    name = "heuristic"

    def __init__(self, max_commits: int = 2, base: Policy | None = None):
        from harness_g.agent.policies.heuristic import HeuristicPolicy

        self.base = base or HeuristicPolicy(max_commits=max_commits)
        self.max_commits = getattr(self.base, "max_commits", max_commits)

    def _bridge_entity(self, env: FreeQueryEnv) -> str | None:
        from harness_g.graph.text.canonical import canonicalize

        st = env.state
        assert st is not None
        q_canon = f" {canonicalize(st.question.question)} "
        ents = env.view.entities_of(st.committed)
        seen: dict[str, Any] = {}
        for sid in st.committed:
            for e in ents.get(sid, ()):
                if e.lookupable and f" {e.name} " not in q_canon:
                    seen.setdefault(e.id, e)
        if not seen:
            return None
        cands = list(seen.values())
        sims = env.view.encode([e.surface for e in cands]) @ st.question_vec
        best = sorted(range(len(cands)), key=lambda i: (-float(sims[i]), cands[i].id))[0]
        return cands[best].surface

    def act(self, observation: str, env: FreeQueryEnv) -> str:  # type: ignore[override]
        st = env.state
        assert st is not None
        q = st.question.question
        last_turn = st.turn >= env.config.max_turns - 1
        looked_up = any(s.action_type == ActionType.LOOKUP.value for s in (env.trajectory.steps if env.trajectory else []))
        if not st.committed:
            return (ANSWER_WITH_PREFIX + q) if last_turn else q
        if len(st.committed) < self.max_commits and not last_turn:
            if not looked_up:
                entity = self._bridge_entity(env)
                if entity:
                    return entity
            texts = [t for _, t in env.committed_texts()]
            return ANSWER_WITH_PREFIX + lookup_query(q, texts, env.config.query_max_words)
        return "ANSWER"

    def answer(self, question: str, evidence: list[tuple[str, str]], env: FreeQueryEnv) -> str:  # type: ignore[override]
        return self.base.answer(question, evidence, env)  # type: ignore[arg-type]


class FreeQueryAdapter(Policy):
    """Wraps any policy for the free-query arm.

    Policies that know the arm implement ``free_query_act(observation, env)`` (LLM policies: same
    model, free-query instruction). Others get the free observation through their usual ``act`` —
    it already ends with :func:`free_query_instruction` instead of the menu instruction.
    """

    def __init__(self, policy: Policy):
        self.policy = policy
        self.name = policy.name

    def act(self, observation: str, env: FreeQueryEnv) -> str:  # type: ignore[override]
        fq = getattr(self.policy, "free_query_act", None)
        return fq(observation, env) if callable(fq) else self.policy.act(observation, env)  # type: ignore[arg-type]

    def answer(self, question: str, evidence: list[tuple[str, str]], env: FreeQueryEnv) -> str:  # type: ignore[override]
        return self.policy.answer(question, evidence, env)  # type: ignore[arg-type]


def free_query_policy(policy: Policy) -> Policy:
    """The free-query counterpart of ``policy``.

    - :class:`HeuristicPolicy` -> :class:`HeuristicFreeQueryPolicy`;
    - :class:`harness_g.agent.llm.policy.LLMPolicy` -> a copy sharing the same backend and sampling
      settings whose chat opens with :func:`free_query_header` instead of the menu instruction and
      tool schema, with room for a free-text reply (:data:`FREE_QUERY_MAX_NEW_TOKENS`);
    - anything else -> :class:`FreeQueryAdapter`.
    """
    import copy

    from harness_g.agent.policies.heuristic import HeuristicPolicy

    if isinstance(policy, (HeuristicFreeQueryPolicy, FreeQueryAdapter)) or getattr(policy, "free_query", False):
        return policy
    if isinstance(policy, HeuristicPolicy):
        return HeuristicFreeQueryPolicy(base=policy)
    if hasattr(policy, "header") and hasattr(policy, "backend") and hasattr(policy, "_chats"):  # LLMPolicy
        fq = copy.copy(policy)
        fq.header = free_query_header()  # type: ignore[attr-defined]
        fq._chats, fq._last = {}, None  # type: ignore[attr-defined]
        fq.max_new_tokens = max(int(getattr(policy, "max_new_tokens", 0)), FREE_QUERY_MAX_NEW_TOKENS)  # type: ignore[attr-defined]
        if getattr(fq, "max_context_tokens", None):  # keep prompt + reply inside the same window
            fq.max_context_tokens -= fq.max_new_tokens - int(getattr(policy, "max_new_tokens", 0))  # type: ignore[attr-defined]
        fq.free_query = True  # type: ignore[attr-defined]
        return fq
    return FreeQueryAdapter(policy)
