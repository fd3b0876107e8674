"""Turn realised trajectories into scored :class:`StepGains` (previews + frozen answerer), batched; and, for the
IGPO arm, into the current policy's per-turn log-beliefs (:func:`score_beliefs`).

For step t with scorer context O_t (every sentence surfaced before a_t, first-seen order):
p_t(a) = g(O_t ∪ Ũ(a)) − g(O_t); re-surfacing seen text gains exactly 0 (not even scored). The
frontier F_t holds up to K_f other LOOKUPs of the same menu — LOOKUP is the only information-acquiring
type, so type stratification is trivial here — deduplicated by resulting scorer context, in menu order.
"""
from __future__ import annotations

import time
from typing import Sequence

from harness_g.agent.env.graph_view import GraphView
from harness_g.training.answerer import FrozenAnswerer, ScoreRequest
from harness_g.training.credit import StepGains, dead_zone
from harness_g.training.rollout import Rollout


def _extend(context: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    seen = set(context)
    return tuple(context) + tuple(s for s in new if s not in seen)


def _qkey(ro: Rollout) -> tuple:
    """What a score depends on besides the context: the question (id and text) and its gold answers. Never the
    question text alone: two questions can share it and differ in their answers."""
    return (ro.item.id, ro.item.question, tuple(ro.item.answers))


def _score(view: GraphView, scorer: FrozenAnswerer, keys: Sequence[tuple[tuple, tuple[str, ...]]], log: bool = False) -> dict:
    """One batched pass over distinct (question key, context) pairs -> {pair: g} (``log``: log g)."""
    if not keys:
        return {}
    all_ids = list(dict.fromkeys(s for _, ctx in keys for s in ctx))
    infos = view.sentences(all_ids)
    requests = [ScoreRequest(qk[0], qk[1], ctx, [(infos[s].title, infos[s].text) for s in ctx if s in infos], list(qk[2]))
                for qk, ctx in keys]
    values = scorer.log_scores_many(requests) if log else scorer.score_many(requests)
    return dict(zip(keys, values))


def score_rollouts(view: GraphView, answerer: FrozenAnswerer, rollouts: Sequence[Rollout], *, frontier_size: int = 4,
                   eps: float = 1e-4) -> tuple[list[list[StepGains]], dict[str, float]]:
    """Returns StepGains per rollout (one per executed turn) and timing/diagnostic stats."""
    t0 = time.perf_counter()
    plans = []  # (rollout idx, step idx, base ctx, chosen ctx, frontier ctxs, info?, producers)
    contexts: dict[tuple[tuple, tuple[str, ...]], None] = {}
    for r_i, ro in enumerate(rollouts):
        q = _qkey(ro)
        for s_i, step in enumerate(ro.trajectory.steps):
            base = tuple(step.observed_before)
            info = step.action_type == "LOOKUP"
            chosen = _extend(base, step.introduced) if step.chosen else base
            frontier: list[tuple[str, ...]] = []
            if info and step.previews:
                seen_ctx = {frozenset(chosen)}
                for a in step.menu:
                    if a["type"] != "LOOKUP" or a["id"] == step.chosen:
                        continue
                    ctx = _extend(base, step.previews.get(a["id"], []))
                    if frozenset(ctx) in seen_ctx:
                        continue
                    seen_ctx.add(frozenset(ctx))
                    frontier.append(ctx)
                    if len(frontier) == frontier_size:
                        break
            for ctx in (base, chosen, *frontier):
                if ctx != base or len(chosen) != len(base) or frontier:
                    contexts[(q, ctx)] = None
            plans.append((r_i, s_i, base, chosen, frontier, info, tuple(step.producers)))

    # one batched, cached scoring pass over every distinct (question, context)
    keys = list(contexts)
    scores = _score(view, answerer, keys)

    def g(q: tuple, ctx: tuple[str, ...]) -> float:
        return scores.get((q, ctx), 0.0)

    out: list[list[StepGains]] = [[] for _ in rollouts]
    n_frontier = 0
    for r_i, s_i, base, chosen, frontier, info, producers in plans:
        q = _qkey(rollouts[r_i])
        g0 = g(q, base) if (len(chosen) != len(base) or frontier) else 0.0
        gain = dead_zone(g(q, chosen) - g0, eps) if len(chosen) != len(base) else 0.0
        f_gains = tuple(dead_zone(g(q, ctx) - g0, eps) for ctx in frontier)
        n_frontier += len(f_gains)
        out[r_i].append(StepGains(gain, info, f_gains, producers))
    stats = {"snc_s": time.perf_counter() - t0, "scored_contexts": float(len(keys)), "frontier_actions": float(n_frontier)}
    return out, stats


TERMINAL_ACTIONS = ("ANSWER", "ANSWER_WITH")


def belief_contexts(rollout: Rollout) -> list[tuple[str, ...]]:
    """IGPO's turn contexts O_0..O_n for one rollout (menu and free-query arms alike: both record the same
    scorer context). O_t is every sentence surfaced before information turn t (first-seen order), O_{t+1} adds
    what turn t surfaced. The information turns are the executed steps except a terminal ANSWER / ANSWER_WITH
    step, which belongs to the answer turn together with the answer itself (its outcome is that turn's reward)."""
    steps = rollout.trajectory.steps
    if steps and steps[-1].action_type in TERMINAL_ACTIONS:
        steps = steps[:-1]
    if not steps:
        last = rollout.trajectory.steps[-1].observed_before if rollout.trajectory.steps else rollout.trajectory.initial_visible
        return [tuple(last)]
    out = [tuple(steps[0].observed_before)]
    for step in steps:
        before = tuple(step.observed_before)
        out.append(_extend(before, step.introduced) if step.chosen else before)
    return out


def score_beliefs(view: GraphView, belief: FrozenAnswerer, rollouts: Sequence[Rollout]) -> tuple[list[list[float]], dict[str, float]]:
    """Per rollout, the policy's log-beliefs ℓ_t = log p_θ(y* | q, O_t) over :func:`belief_contexts` (appendix
    "Factorial credit control", "policy-belief information gain"), scored in one batched no-grad pass by ``belief`` (a
    :class:`~harness_g.training.answerer.PolicyBelief` on the current weights, on the answer prompt over O_t: its
    docstring says why not on the policy's own chat). IGPO's information gain of turn t is exp(ℓ_{t+1}) − exp(ℓ_t)
    (:func:`harness_g.training.credit.information_gains`); equal contexts are scored once, so a turn that surfaces
    nothing gains exactly 0."""
    t0 = time.perf_counter()
    per_rollout = [[(_qkey(ro), ctx) for ctx in belief_contexts(ro)] for ro in rollouts]
    keys = list(dict.fromkeys(k for ks in per_rollout for k in ks))
    scores = _score(view, belief, keys, log=True)
    out = [[scores[k] for k in ks] for ks in per_rollout]
    stats = {"snc_s": time.perf_counter() - t0, "scored_contexts": float(len(keys)),
             "igpo_turns": float(sum(len(ks) - 1 for ks in per_rollout))}
    return out, stats
