"""Retrieval-equivalence diagnostics on hand-built trajectories (paper appendix "Additional Evaluation
Protocols", harness-g.tex l.1016-1043): E(tau) = union over retrieval turns t >= 1 of the evidence they
returned -- InitRetrieve's U_0 is not a retrieval turn of the policy, and a LOOKUP at the last step is one."""
from __future__ import annotations

import pytest

from harness_g.agent.env.trajectory import StepRecord, Trajectory
from harness_g.training.diagnostics import (equivalence_classes, group_diagnostics, retrieval_evidence,
                                            trajectory_group_diagnostics)

U0 = [f"u:{i}" for i in range(6)]  # the same InitRetrieve for every rollout of the question


def _traj(*steps: tuple[str | None, list[str]], committed: list[str] | None = None, u0: list[str] = U0) -> Trajectory:
    """Steps as (action type, introduced); observed_before is what the env records (U_0 + earlier LOOKUP results)."""
    out, observed = [], list(u0)
    for turn, (kind, introduced) in enumerate(steps):
        out.append(StepRecord(turn=turn, menu=[], reply="", chosen=None if kind is None else f"A{turn}", action_type=kind,
                              introduced=list(introduced), observed_before=list(observed)))
        if kind == "LOOKUP":
            observed += [s for s in introduced if s not in observed]
    return Trajectory("q", "question?", ["a"], "v", {}, list(u0), steps=out, committed=list(committed or []))


def _old_evidence(t: Trajectory) -> frozenset[str]:
    """What training/trainer.py used before: O_T of the last step (U_0 + earlier lookups) + C_T."""
    return frozenset(t.steps[-1].observed_before + t.committed) if t.steps else frozenset(t.initial_visible)


def test_evidence_is_the_union_of_lookup_results_from_turn_one() -> None:
    t = _traj(("SELECT", ["u:0"]), (None, []), ("LOOKUP", ["x:0", "x:1"]), ("LOOKUP", ["y:0", "x:1"]), committed=["u:0"])
    assert retrieval_evidence(t) == {"x:0", "x:1", "y:0"}  # no U_0, no commit; the last-step LOOKUP included
    assert retrieval_evidence(t.to_json()) == retrieval_evidence(t)  # works on stored records too
    assert retrieval_evidence(_traj(("SELECT", ["u:1"]), ("ANSWER", []), committed=["u:1"])) == frozenset()
    assert retrieval_evidence(_traj()) == frozenset()


def test_a_final_lookup_separates_rollouts() -> None:
    """Two rollouts that differ only in their last-step LOOKUP are two retrieval-equivalence classes."""
    a = _traj(("SELECT", ["u:0"]), ("LOOKUP", ["x:0", "x:1"]), committed=["u:0"])
    b = _traj(("SELECT", ["u:0"]), ("LOOKUP", ["y:0", "y:1"]), committed=["u:0"])
    stats = trajectory_group_diagnostics([[a, b]])
    assert (stats.d_ret, stats.mean_n_eq) == (1.0, 2.0)
    # the old E(tau) dropped the final LOOKUP: both were U_0 + {u:0} and collapsed into one class
    old = group_diagnostics([[_old_evidence(a), _old_evidence(b)]])
    assert (old.d_ret, old.mean_n_eq) == (0.0, 1.0)


def test_the_initial_retrieval_does_not_mask_distinct_lookups() -> None:
    """U_0 is shared by the whole group; counting it made distinct lookups look equivalent."""
    u0 = [f"u:{i}" for i in range(10)]
    a = _traj(("LOOKUP", ["x:0"]), ("ANSWER", []), u0=u0)
    b = _traj(("LOOKUP", ["y:0"]), ("ANSWER", []), u0=u0)
    c = _traj(("LOOKUP", ["x:0"]), ("SELECT", ["x:0"]), ("ANSWER", []), committed=["x:0"], u0=u0)
    assert equivalence_classes([retrieval_evidence(t) for t in (a, b, c)]) == [0, 1, 0]
    stats = trajectory_group_diagnostics([[a, b, c]])
    assert (stats.d_ret, stats.mean_n_eq) == (1.0, 2.0)
    # old: U_0 + {x:0} vs U_0 + {y:0} -> Jaccard 10/12 >= 0.8: one class although the lookups retrieved different evidence
    old = group_diagnostics([[_old_evidence(t) for t in (a, b, c)]])
    assert (old.d_ret, old.mean_n_eq) == (0.0, 1.0)


def test_d_query_counts_distinct_query_strings_per_group() -> None:
    a, b = _traj(("LOOKUP", ["x:0"])), _traj(("LOOKUP", ["x:0"]))
    stats = trajectory_group_diagnostics([[a, b], [a, b]], queries=[["who directed it", "director of it"], ["same", "same"]])
    assert stats.d_query == pytest.approx(0.5)  # illusory exploration: two strings, one retrieval class
    assert stats.d_ret == 0.0 and stats.mean_n_eq == 1.0
    assert trajectory_group_diagnostics([[a, b]]).d_query is None  # the menu arm logs no D_query


def test_aliasing_counts_pairs_with_different_requests_that_reach_one_class() -> None:
    """Four rollouts: "capital of france" and "france capital" (two strings, evidence {a, b}: aliased), "paris" ({a,
    b, c}: Jaccard 2/3, its own class at 0.8), and one that asked nothing and found nothing. Pairs with different
    requests: all 6; in one class: 1 (the two paraphrases). Equal requests never count; no differing pair: None."""
    from harness_g.training.diagnostics import aliasing_rate

    ab, abc = frozenset({"a", "b"}), frozenset({"a", "b", "c"})
    evidence = [ab, ab, abc, frozenset()]
    requests = [["capital of france"], ["france capital"], ["paris"], []]
    assert aliasing_rate(evidence, requests, 0.8) == pytest.approx(1 / 6)
    assert aliasing_rate(evidence, requests, 0.6) == pytest.approx(3 / 6)  # {a, b, c} joins the first class
    assert aliasing_rate([ab, ab], [["x"], ["x"]]) is None  # the same request twice is no aliasing
    assert aliasing_rate([ab, frozenset()], [[], []]) is None  # neither retrieved: nothing differs
    assert aliasing_rate([ab, ab, abc], [["x"], ["x"], ["y"]]) == 0.0  # two differing pairs, both in two classes
