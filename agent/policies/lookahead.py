"""LLM-free lookahead policy: choose menu actions by expanding them read-only with previews.

The environment can expand any action of the current menu without changing state (Previewability,
Harness-G §3.3 "The Menu Environment"): ``observation.tools.preview(action_id)`` returns what the action would
introduce or commit, C_{t+1}, U_{t+1} and whether it ends the episode. This policy previews every LOOKUP (the menu
already computed their U_{t+1}, so a preview costs nothing) to decide which entity to pursue and whether pursuing one
is worth a turn at all. It reads only the :class:`~harness_g.agent.env.observation.Observation` (question, C_t, U_t
with titles, menu, turn, m_t) and its tools -- no environment internals, no gold. Deterministic: ties go to the smaller
sentence id, then to the earlier menu entry.

**Score** of a sentence s at turn t (cosines with the graph's shared encoder, through ``tools.rank``)::

    score(s) = max(cos(s, q), cos(s, m_t)) + named_bonus * [s is named]

m_t = concat(q, text(C_t)) is the environment's lookup query (Harness-G §3.3): cos(s, q) keeps first-hop
sentences, cos(s, m_t) rewards sentences that continue the committed evidence.

**Tiers** -- whether a sentence is worth a commit after the first one. A sentence that is merely similar to the
question is what dense retrieval at the same budget finds anyway; the hop structure of the graph is what a
menu policy can add:

- tier 2, *named*: the question or C_t names the article s belongs to. For any sentence: s opens an article
  (the graph anchors each article's title to its first sentence as a TITLE mention) whose title, trailing
  parenthetical dropped, occurs token-bounded in canonical q + text(C_t) -- a *forward hop*, the article about
  an entity the evidence names. For a visible sentence (the observation shows its title) also any sentence of a
  named article of which C_t holds no sentence yet.
- tier 1, *bridge lead*: s opens an article and mentions a lookup-able entity of C_t that the question does not
  name -- a *backward hop* ("X ... was the second wife of <bridge>"). Less precise than a forward hop, so at most
  ``backward_hops`` commits per episode come from this tier.
- tier 0: anything else.

Novelty needs no extra rule: the menu never shows a committed sentence or a duplicate text, a LOOKUP is valued
only by what it shows beyond U_t and C_t, and a named article counts once (until C_t holds a sentence of it).

**Value of a LOOKUP** (two-step lookahead: LOOKUP now, commit its best result next turn): the best (tier, score)
among the tier >= 1 sentences its preview would newly show, U_{t+1}(a) minus U_t and C_t; a LOOKUP showing none
has no value.

**Each turn** (v = the best useful visible sentence, l = the LOOKUP of best value):

1. nothing committed: commit the best-scoring visible sentence (SELECT; ANSWER_WITH on the last turn);
2. ``max_commits`` reached: ANSWER;
3. last turn: ANSWER_WITH the best one or two useful visible sentences (the multi-sentence harvest,
   Harness-G §3.3; ``EnvConfig.answer_with_max``), ANSWER when none is useful;
4. no LOOKUP has value, at most two visible sentences are useful and committing them would expose no new
   LOOKUP target (every lookup-able entity they mention is already on the menu or in C_t): ANSWER_WITH them
   now -- nothing later could add to them, so one turn does the work of two or three;
5. v exists and its tier is at least l's: SELECT v (a LOOKUP replaces U_t and would lose it; committing v
   also makes its entities bridge targets and the articles it names tier 2 next turn);
6. l exists: LOOKUP l;
7. otherwise ANSWER: nothing visible or previewable would improve the evidence.

The final answer is :class:`~harness_g.agent.policies.heuristic.HeuristicPolicy`'s extractive answer
(composition: a mention of C_T that fits the question's wh-cue).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.observation import CommittedSentence, Observation, PolicyTools
from harness_g.agent.policies.base import Policy
from harness_g.agent.policies.heuristic import HeuristicPolicy
from harness_g.errors import ConfigError
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.linking import title_name

NAMED, BRIDGE, NONE = 2, 1, 0  # usefulness tiers (module docstring)


@dataclass(frozen=True)
class Scored:
    """One sentence's ``score`` (cosine scale, + ``named_bonus`` when named) and usefulness ``tier``."""

    score: float
    tier: int

    @property
    def rank_key(self) -> tuple[int, float]:
        """Higher is better: tier first, then score, rounded to 1e-6 so that float noise (the same dot product
        computed in matrices of different shapes) cannot reorder equal candidates: ties keep menu order."""
        return (self.tier, round(self.score, 6))


@dataclass(frozen=True)
class LookupValue:
    """A LOOKUP's lookahead value: the best useful ``sentence`` its preview newly shows, and that sentence's
    :class:`Scored` ``value``."""

    action: str
    sentence: str
    value: Scored


class LookaheadPolicy(Policy):
    """Previews LOOKUPs, commits named (and at most ``backward_hops`` bridge) article leads; see the module docstring.

    ``max_commits``: the most sentences it commits; ``named_bonus``: what being named adds to a score (cosine
    units); ``backward_hops``: the most tier-1 (bridge lead) commits per episode.
    """

    name = "lookahead"

    def __init__(self, max_commits: int = 6, named_bonus: float = 0.1, backward_hops: int = 1):
        self.max_commits = max_commits
        self.named_bonus = named_bonus
        self.backward_hops = backward_hops
        self._answerer = HeuristicPolicy()

    # -- scoring -----------------------------------------------------------------------------------
    def scores(self, obs: Observation, sentence_ids: Sequence[str]) -> dict[str, Scored]:
        """``{id: Scored}`` for the known ids among ``sentence_ids`` at this observation's state."""
        ids = list(dict.fromkeys(sentence_ids))
        if not ids:
            return {}
        tools = obs.require_tools()
        q_vec, m_vec = tools.encode([obs.question, obs.lookup_query])
        by_q, by_m = dict(tools.rank(q_vec, ids)), dict(tools.rank(m_vec, ids))
        leads = article_leads(tools, ids)  # read once for both hop signals
        named = named_leads(tools, obs.question, obs.committed, ids, leads=leads) | named_visible(obs, ids)
        bridged = set()
        if count_backward_hops(tools, obs.question, obs.committed) < self.backward_hops:
            bridged = bridge_leads(tools, obs.question, obs.committed, ids, leads=leads)
        tier = {s: NAMED if s in named else BRIDGE if s in bridged else NONE for s in ids}
        return {s: Scored(max(by_q[s], by_m.get(s, by_q[s])) + self.named_bonus * (s in named), tier[s])
                for s in ids if s in by_q}

    def lookup_values(self, obs: Observation) -> list[LookupValue]:
        """The LOOKUPs whose preview newly shows a useful (tier >= 1) sentence, best (tier, score) first; ties keep
        menu order."""
        tools = obs.require_tools()
        shown = set(obs.visible_ids) | set(obs.committed_ids)
        fresh = {a.id: [s for s in tools.preview(a.id).visible if s not in shown] for a in obs.actions(ActionType.LOOKUP)}
        scored = self.scores(obs, [s for ids in fresh.values() for s in ids])
        out = []
        for aid, ids in fresh.items():
            useful = best_first({s: scored[s] for s in ids if s in scored and scored[s].tier > NONE})
            if useful:
                out.append(LookupValue(aid, useful[0], scored[useful[0]]))
        return sorted(out, key=lambda v: tuple(-x for x in v.value.rank_key))  # stable: menu order breaks ties

    # -- acting ------------------------------------------------------------------------------------
    def act(self, observation: Observation) -> str:
        obs = observation
        if not obs.menu:  # the free-query arm hides the menu and its previews
            raise ConfigError(f"the lookahead policy plays the menu interface only (this observation: {obs.interface!r}, "
                              "no menu); use --interface menu")
        scored = self.scores(obs, obs.visible_ids)
        if not obs.committed:  # 1: the first hop
            first = sorted(scored, key=lambda s: (-scored[s].score, s))[:1]
            return self._harvest(obs, first) if obs.last_turn else self._select_or_answer(obs, first)
        room = self.max_commits - len(obs.committed)
        if room <= 0:  # 2
            return self._answer(obs)
        useful = best_first({s: v for s, v in scored.items() if v.tier > NONE})
        if obs.last_turn:  # 3
            return self._harvest(obs, useful[: min(2, room)])
        lookups = self.lookup_values(obs)
        if not lookups and 0 < len(useful) <= min(2, room) and not self._opens_targets(obs, useful):  # 4
            return self._harvest(obs, useful)
        if useful and (not lookups or scored[useful[0]].tier >= lookups[0].value.tier):  # 5
            return self._select_or_answer(obs, useful[:1])
        return lookups[0].action if lookups else self._answer(obs)  # 6, 7

    @staticmethod
    def _opens_targets(obs: Observation, sentence_ids: list[str]) -> bool:
        """Whether committing ``sentence_ids`` would expose a LOOKUP target that is neither on the menu nor
        mentioned by C_t (then its preview is still unknown, so the sentences are committed one at a time)."""
        tools = obs.require_tools()
        known = {e.name for e in obs.entities}
        known |= {e.name for ents in tools.mentions(obs.committed_ids).values() for e in ents}
        return any(e.lookupable and e.label != "TITLE" and e.name not in known
                   for ents in tools.mentions(sentence_ids).values() for e in ents)

    def _harvest(self, obs: Observation, sentence_ids: list[str]) -> str:
        """ANSWER_WITH ``sentence_ids`` (else their largest offered prefix; SELECT when ANSWER_WITH is off), else ANSWER."""
        order = {s: i for i, s in enumerate(obs.visible_ids)}
        offered = {a.targets: a.id for a in obs.actions(ActionType.ANSWER_WITH)}
        for n in range(len(sentence_ids), 0, -1):
            found = offered.get(tuple(sorted(sentence_ids[:n], key=order.__getitem__)))  # targets in visible order
            if found is not None:
                return found
        return self._select_or_answer(obs, sentence_ids[:1])

    @staticmethod
    def _select_or_answer(obs: Observation, sentence_ids: list[str]) -> str:
        """SELECT the first of ``sentence_ids`` when offered, else ANSWER."""
        for a in obs.actions(ActionType.SELECT):
            if sentence_ids and a.targets == (sentence_ids[0],):
                return a.id
        return LookaheadPolicy._answer(obs)

    @staticmethod
    def _answer(obs: Observation) -> str:
        return obs.actions(ActionType.ANSWER)[0].id

    def answer(self, question: str, evidence: list[tuple[str, str]], observation: Observation) -> str:
        """The heuristic policy's extractive answer from C_T (shared, not copied)."""
        return self._answerer.answer(question, evidence, observation)


# -- the hop signals (functions of q, C_t and the tools only) -------------------------------------------------
def best_first(scored: dict[str, Scored]) -> list[str]:
    """Ids by (tier, score) descending, ties by id."""
    return sorted(scored, key=lambda s: (-scored[s].tier, -scored[s].score, s))


def _names_text(question: str, committed: Sequence[CommittedSentence]) -> str:
    """Canonical q + text(C_t), space-padded for token-bounded ``f" {name} " in text`` tests."""
    return f" {canonicalize(' '.join([question, *(c.text for c in committed)]))} "


def article_leads(tools: PolicyTools, ids: Sequence[str]) -> dict[str, str]:
    """``{id: title_name of its article}`` for the ids that carry their own article's TITLE mention: its first sentence
    (the graph anchors a title there, appendix "Implementation Details", "Graph construction") or a sentence that
    names its own article. A TITLE mention of *another* article (the build's title mentions: "was a Canadian
    politician" names the article "Politician") makes no lead: it names that article, it does not belong to it."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    titles = tools.titles(ids)
    out = {}
    for sid, ents in tools.mentions(ids).items():
        own = title_name(titles.get(sid, ""))
        if own and any(e.label == "TITLE" and title_name(e.surface) == own for e in ents):
            out[sid] = own
    return out


def named_leads(tools: PolicyTools, question: str, committed: Sequence[CommittedSentence], ids: Sequence[str], *,
                leads: Mapping[str, str] | None = None) -> set[str]:
    """The ids that open an article (:func:`article_leads`) named by q + text(C_t): its title, trailing parenthetical
    dropped (``Deep Blue Sea (soundtrack)`` -> ``deep blue sea``), occurs token-bounded in canonical q + text(C_t).
    ``leads``: :func:`article_leads` of ``ids`` when the caller has it."""
    text = _names_text(question, committed)
    leads = article_leads(tools, ids) if leads is None else leads
    return {sid for sid, title in leads.items() if f" {title} " in text}


def named_visible(obs: Observation, ids: Sequence[str]) -> set[str]:
    """The visible ids among ``ids`` from an article that q + text(C_t) names and C_t holds no sentence of yet
    (visible sentences carry their title; a preview's do not)."""
    text = _names_text(obs.question, obs.committed)
    have = {c.title for c in obs.committed}
    wanted = set(ids)
    return {v.id for v in obs.visible
            if v.id in wanted and v.title not in have and (t := title_name(v.title)) and f" {t} " in text}


def bridge_leads(tools: PolicyTools, question: str, committed: Sequence[CommittedSentence], ids: Sequence[str], *,
                 leads: Mapping[str, str] | None = None) -> set[str]:
    """The ids that open an article (:func:`article_leads`) and mention a lookup-able entity that C_t mentions and the
    question does not name: the next hop's article reached backwards, through its mention of the bridge.
    ``leads``: :func:`article_leads` of ``ids`` when the caller has it."""
    if not committed:
        return set()
    q_text = f" {canonicalize(question)} "
    bridges = {e.name for ents in tools.mentions([c.id for c in committed]).values() for e in ents
               if e.lookupable and e.label != "TITLE" and f" {e.name} " not in q_text}
    leads = article_leads(tools, ids) if leads is None else leads
    return {sid for sid, ents in tools.mentions(list(leads)).items()
            if any(e.label != "TITLE" and e.name in bridges for e in ents)}


def count_backward_hops(tools: PolicyTools, question: str, committed: Sequence[CommittedSentence]) -> int:
    """How many commits after the first were bridge leads, and not named, given the evidence committed before them
    (read from C_t, so the policy keeps no per-episode state)."""
    hops = 0
    for i in range(1, len(committed)):
        before, c = committed[:i], committed[i]
        title = title_name(c.title)
        named = bool(title and f" {title} " in _names_text(question, before)) \
            or c.id in named_leads(tools, question, before, [c.id])
        hops += not named and c.id in bridge_leads(tools, question, before, [c.id])
    return hops
