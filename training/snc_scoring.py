"""Turn realised trajectories into scored :class:`StepGains` (previews + frozen answerer), batched.

For step t with scorer context O_t (every sentence surfaced before a_t, first-seen order):
p_t(a) = g(O_t ∪ Ũ(a)) − g(O_t); re-surfacing seen text gains exactly 0 (not even scored). The
frontier F_t holds up to K_f other LOOKUPs of the same menu — LOOKUP is the only information-acquiring
type, so type stratification is trivial here — deduplicated by resulting scorer context, in menu order.
"""
from __future__ import annotations

import time
from typing import Sequence

from harness_g.agent.graph_view import GraphView
from harness_g.training.answerer import FrozenAnswerer
from harness_g.training.credit import StepGains, dead_zone
from harness_g.training.rollout import Rollout


def _extend(context: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    seen = set(context)
    return tuple(context) + tuple(s for s in new if s not in seen)


def score_rollouts(view: GraphView, answerer: FrozenAnswerer, rollouts: Sequence[Rollout], *, frontier_size: int = 4,
                   eps: float = 1e-4) -> tuple[list[list[StepGains]], dict[str, float]]:
    """Returns StepGains per rollout (one per executed turn) and timing/diagnostic stats."""
    t0 = time.perf_counter()
    plans = []  # (rollout idx, step idx, base ctx, chosen ctx, frontier ctxs, info?, producers)
    contexts: dict[tuple[str, tuple[str, ...]], None] = {}
    for r_i, ro in enumerate(rollouts):
        q = ro.item.question
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
    all_ids = list(dict.fromkeys(s for _, ctx in keys for s in ctx))
    infos = view.sentences(all_ids)
    answers = {ro.item.question: list(ro.item.answers) for ro in rollouts}
    requests = [(q, ctx, [(infos[s].title, infos[s].text) for s in ctx if s in infos], answers[q]) for q, ctx in keys]
    scores = dict(zip(keys, answerer.score_many(requests))) if requests else {}

    def g(q: str, ctx: tuple[str, ...]) -> float:
        return scores.get((q, ctx), 0.0)

    out: list[list[StepGains]] = [[] for _ in rollouts]
    n_frontier = 0
    for r_i, s_i, base, chosen, frontier, info, producers in plans:
        q = rollouts[r_i].item.question
        g0 = g(q, base) if (len(chosen) != len(base) or frontier) else 0.0
        gain = dead_zone(g(q, chosen) - g0, eps) if len(chosen) != len(base) else 0.0
        f_gains = tuple(dead_zone(g(q, ctx) - g0, eps) for ctx in frontier)
        n_frontier += len(f_gains)
        out[r_i].append(StepGains(gain, info, f_gains, producers))
    stats = {"snc_s": time.perf_counter() - t0, "scored_contexts": float(len(keys)), "frontier_actions": float(n_frontier)}
    return out, stats
