"""Unit tests of the trainer's parts on hand-made rollouts and tiny tensors (no database, no model): SNC scoring
(score_rollouts), the training batch (build_batch), the data order and run state (checkpoint.py), the
retrieval-equivalence diagnostics (group_diagnostics), the update plan, the step metrics and the graph check."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from harness_g.agent.env.trajectory import StepRecord, Trajectory
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem
from harness_g.training.chat import ANSWER_TURN
from harness_g.training.chat import Sequence as TrainSequence
from harness_g.training.rollout import Rollout

A = ANSWER_TURN


def _item(qid: str = "q1", answers: tuple[str, ...] = ("Paris",)) -> QAItem:
    return QAItem(id=qid, question="What is the capital of France?", answers=answers, dataset="t")


def _rollout(steps: list[StepRecord], *, group: int = 0, qid: str = "q1", reward: float = 0.0,
             seqs: list[TrainSequence] | None = None, queries: list[str] | None = None) -> Rollout:
    item = _item(qid)
    traj = Trajectory(question_id=qid, question=item.question, answers=list(item.answers), graph_version="v", env_config={},
                      initial_visible=["s1"], steps=steps, meta={"queries": queries} if queries else {})
    ro = Rollout(item=item, group=group, trajectory=traj, reward=reward)
    if seqs is not None:
        ro.sequences = lambda tokenizer: seqs  # type: ignore[method-assign]  # hand-made training sequences
    return ro


def _step(kind: str | None, observed: list[str], introduced: list[str], *, chosen: str | None = "A1",
          menu: list[dict] | None = None, previews: dict[str, list[str]] | None = None, producers=()) -> StepRecord:
    return StepRecord(turn=0, menu=menu or [], reply=chosen or "??", chosen=chosen, action_type=kind if chosen else None,
                      introduced=introduced, observed_before=observed, previews=previews, producers=list(producers))


# -- score_rollouts -------------------------------------------------------------------------------------------------
WEIGHT = {"s1": 0.1, "s2": 0.3, "s3": 0.0, "s4": 0.25}  # g(context) = sum of its sentences' weights


class _View:
    def sentences(self, ids):
        return {s: SimpleNamespace(title=f"T{s}", text=f"sentence {s}") for s in ids}


class _Answerer:
    def __init__(self):
        self.requests = []

    def score_many(self, requests):
        self.requests.extend(requests)
        return [sum(WEIGHT[s] for s in r.context) for r in requests]


MENU = [{"id": "A0", "type": "SELECT"}, {"id": "A1", "type": "LOOKUP"}, {"id": "A2", "type": "LOOKUP"},
        {"id": "A3", "type": "LOOKUP"}, {"id": "A4", "type": "LOOKUP"}]
PREVIEWS = {"A1": ["s2"], "A2": ["s3"], "A3": ["s2"], "A4": ["s4"]}  # A3 reaches the chosen context: not a frontier


def _lookup_then_select(qid: str = "q1", group: int = 0) -> Rollout:
    return _rollout([_step("LOOKUP", ["s1"], ["s2"], menu=MENU, previews=PREVIEWS, producers=[-1]),
                     _step("SELECT", ["s1", "s2"], ["s2"], chosen="A0", producers=[0]),
                     _step(None, ["s1", "s2"], [], chosen=None)], qid=qid, group=group)


def test_score_rollouts_gains_frontier_and_one_scoring_pass():
    from harness_g.training.credit import StepGains
    from harness_g.training.snc_scoring import score_rollouts

    scorer = _Answerer()
    gains, stats = score_rollouts(_View(), scorer, [_lookup_then_select()], frontier_size=4, eps=1e-4)
    (lookup, select, invalid), = gains
    # LOOKUP: g(s1 s2) - g(s1) = 0.3; frontier A2 (+s3: 0.0, dead-zoned) and A4 (+s4: 0.25); A3 duplicates the choice
    assert lookup.gain == pytest.approx(0.3) and lookup.acquires_information
    assert lookup.frontier == pytest.approx((0.0, 0.25)) and lookup.producers == (-1,)
    # SELECT re-surfaces seen text and an invalid turn surfaces nothing: exactly 0, not even scored
    assert select == StepGains(0.0, False, (), (0,)) and invalid == StepGains(0.0, False, (), ())
    assert stats["scored_contexts"] == 4.0 and stats["frontier_actions"] == 2.0
    assert sorted(r.context for r in scorer.requests) == [("s1",), ("s1", "s2"), ("s1", "s3"), ("s1", "s4")]
    assert all(r.evidence == [(f"T{s}", f"sentence {s}") for s in r.context] for r in scorer.requests)


def test_score_rollouts_frontier_size_and_questions_are_kept_apart():
    from harness_g.training.snc_scoring import score_rollouts

    gains, _ = score_rollouts(_View(), _Answerer(), [_lookup_then_select()], frontier_size=1)
    assert gains[0][0].frontier == pytest.approx((0.0,))  # only the first distinct frontier action (A2)
    scorer = _Answerer()
    _, stats = score_rollouts(_View(), scorer, [_lookup_then_select("q1"), _lookup_then_select("q1", group=0),
                                                _lookup_then_select("q2", group=1)])
    assert stats["scored_contexts"] == 8.0  # the same contexts are scored once per question, never shared across
    assert {r.question_id for r in scorer.requests} == {"q1", "q2"}


# -- build_batch ----------------------------------------------------------------------------------------------------
def _two_rollouts() -> list[Rollout]:
    """Rollout 0: a two-turn trajectory sequence + its answer; rollout 1: one turn + its answer (pad id 0)."""
    r0 = [TrainSequence([5, 6, 7, 8, 9], [0, 1, 1, 0, 1], [A, 0, 0, A, 1]), TrainSequence([5, 6, 7], [0, 0, 1])]
    r1 = [TrainSequence([5, 6], [0, 1], [A, 0]), TrainSequence([5, 6, 7, 8], [0, 0, 1, 1])]
    return [_rollout([], group=0, seqs=r0), _rollout([], group=1, seqs=r1)]


TOKENIZER = SimpleNamespace(pad_token_id=0)


def test_build_batch_right_pads_and_puts_outcome_plus_scaled_snc_on_action_tokens():
    from harness_g.training.batch import build_batch

    credit = SimpleNamespace(scale_floor=1e-9, clip=100.0)
    batch, stats = build_batch(_two_rollouts(), TOKENIZER, torch.tensor([0.5, -0.5]), [[1.0, -1.0], [2.0]], 0.5, credit)
    assert batch["owner"].tolist() == [0, 0, 1, 1]
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8, 9], [5, 6, 7, 0, 0], [5, 6, 0, 0, 0], [5, 6, 7, 8, 0]]
    assert batch["attention_mask"][1].tolist() == [1, 1, 1, 0, 0] and batch["position_ids"][1].tolist()[:3] == [0, 1, 2]
    s = float(torch.tensor([1.0, 1.0, -1.0, 2.0]).std(unbiased=False))  # every non-zero action-token credit
    want = torch.tensor([[0, 0.5 + 0.5 / s, 0.5 + 0.5 / s, 0, 0.5 - 0.5 / s],
                         [0, 0, 0.5, 0, 0],  # the answer: A_out only
                         [0, -0.5 + 1.0 / s, 0, 0, 0],
                         [0, 0, -0.5, -0.5, 0]])
    assert torch.allclose(batch["advantages"], want, atol=1e-6)
    assert stats["snc_scale"] == pytest.approx(s) and stats["sequences"] == 4.0 and stats["max_len"] == 5.0
    assert stats["snc_nonzero_token_frac"] == pytest.approx(4 / 7) and stats["snc_token_mean"] == pytest.approx(0.75)


def test_build_batch_scale_is_global_over_gathered_credits_and_clipped():
    from harness_g.training.batch import build_batch

    credit = SimpleNamespace(scale_floor=1e-9, clip=100.0)
    pool = [1.0, 1.0, -1.0, 2.0, 10.0, -10.0]  # another process's credits join the scale
    batch, stats = build_batch(_two_rollouts(), TOKENIZER, torch.zeros(2), [[1.0, -1.0], [2.0]], 1.0, credit,
                               gather=lambda local: local + [10.0, -10.0])
    assert stats["snc_scale"] == pytest.approx(float(torch.tensor(pool).std(unbiased=False)))
    clipped, _ = build_batch(_two_rollouts(), TOKENIZER, torch.zeros(2), [[1.0, -1.0], [2.0]], 1.0,
                             SimpleNamespace(scale_floor=10.0, clip=0.15))  # scale floored at 10, then clipped
    assert clipped["advantages"][0, 1].item() == pytest.approx(0.1) and clipped["advantages"][2, 1].item() == pytest.approx(0.15)


def test_build_batch_igpo_turn_advantages_replace_outcome_and_snc():
    from harness_g.training.batch import build_batch

    turns = [[0.3, 0.7, 0.9], [0.2, 0.4]]  # per rollout: information turns, then the answer turn
    batch, stats = build_batch(_two_rollouts(), TOKENIZER, torch.tensor([5.0, 5.0]), [[1.0, -1.0], [2.0]], 0.5,
                               SimpleNamespace(scale_floor=1e-9, clip=100.0), turn_advantages=turns)
    want = torch.tensor([[0, 0.3, 0.3, 0, 0.7], [0, 0, 0.9, 0, 0], [0, 0.2, 0, 0, 0], [0, 0, 0.4, 0.4, 0]])
    assert torch.allclose(batch["advantages"], want) and stats["snc_scale"] == 1.0


def test_kept_rollouts_keeps_live_groups_or_everything():
    from harness_g.training.batch import kept_rollouts

    rollouts = [_rollout([], group=g) for g in (0, 0, 1, 2)]
    assert kept_rollouts(rollouts, {1}) == [0, 1, 3]
    assert kept_rollouts(rollouts, {0, 1, 2}) == [0, 1, 2, 3]  # every group dead: train on all rather than none


# -- DataOrder and the run state ----------------------------------------------------------------------------------
def test_data_order_resumes_identically_from_its_position():
    from harness_g.training.checkpoint import DataOrder

    first = DataOrder(7, seed=1)
    first.take(3)
    first.take(6)  # crosses into epoch 1
    assert first.position == (1, 2)
    rest = first.take(12)
    resumed = DataOrder(7, 1, *(1, 2))
    assert resumed.take(12) == rest


def test_data_order_epochs_are_permutations_reshuffled_deterministically():
    from harness_g.training.checkpoint import DataOrder

    order = DataOrder(20, seed=5)
    epochs = [order.take(20) for _ in range(3)]
    assert all(sorted(e) == list(range(20)) for e in epochs)  # every question once per epoch
    assert epochs[0] != epochs[1] != epochs[2]  # each epoch reshuffles
    again = DataOrder(20, seed=5)
    assert [again.take(20) for _ in range(3)] == epochs  # the same seed: the same epochs
    assert DataOrder(20, seed=6).take(20) != epochs[0]
    assert DataOrder(20, 5, epoch=2).permutation() == epochs[2]  # an epoch's order depends on (n, seed, epoch) only
    mixed = DataOrder(20, seed=5)
    assert mixed.take(15) + mixed.take(10) == epochs[0] + epochs[1][:5]  # a take across the boundary continues


def test_run_state_round_trip_and_foreign_directory(tmp_path):
    from harness_g.training.checkpoint import STATE_FILE, RunState, read_run_state, write_run_state

    write_run_state(tmp_path, RunState(step=4, epoch=1, index=3, skipped_batches=2))
    assert read_run_state(tmp_path) == RunState(4, 1, 3, 2)
    (tmp_path / STATE_FILE).write_text('{"step": 1, "epoch": 0, "index": 1}')  # older state files: no skipped_batches
    assert read_run_state(tmp_path).skipped_batches == 0
    with pytest.raises(ConfigError, match=f"not a harness-g checkpoint \\(no {STATE_FILE}\\)"):
        read_run_state(tmp_path / "nothing")


# -- group_diagnostics --------------------------------------------------------------------------------------------
def test_group_diagnostics_counts_equivalence_classes_and_query_diversity():
    from harness_g.training.diagnostics import equivalence_classes, group_diagnostics

    ab, c = frozenset({"a", "b"}), frozenset({"c"})
    groups = [[ab, ab, c], [frozenset({"a"})] * 2, [frozenset(), frozenset()]]
    stats = group_diagnostics(groups, threshold=0.8)
    assert stats.d_ret == pytest.approx(1 / 3) and stats.mean_n_eq == pytest.approx(4 / 3) and stats.d_query is None
    with_queries = group_diagnostics(groups, queries=[["x", "x"], ["x", "y"], []])
    assert with_queries.d_query == pytest.approx(1 / 3)  # only the group with two distinct strings
    # greedy: a set joins the first class whose *first member* it overlaps at >= threshold
    assert equivalence_classes([ab, frozenset({"b", "c"}), frozenset({"a", "b", "c"})], threshold=0.5) == [0, 1, 0]
    assert group_diagnostics([]).d_ret == 0.0


def test_trajectory_diagnostics_use_lookup_results_only():
    from harness_g.training.diagnostics import retrieval_evidence, trajectory_group_diagnostics

    looked = _rollout([_step("LOOKUP", ["s1"], ["s2", "s3"]), _step("SELECT", ["s1", "s2", "s3"], ["s2"]),
                       _step("LOOKUP", ["s1", "s2", "s3"], ["s4"])]).trajectory
    selected = _rollout([_step("SELECT", ["s1"], ["s1"]), _step("ANSWER", ["s1"], [])]).trajectory
    assert retrieval_evidence(looked) == frozenset({"s2", "s3", "s4"})  # the last step's LOOKUP included
    assert retrieval_evidence(selected) == frozenset()  # U_0 and commits are not retrievals
    assert trajectory_group_diagnostics([[looked, selected]]).mean_n_eq == 2.0


# -- the update plan ----------------------------------------------------------------------------------------------
def test_update_plan_cuts_whole_questions_into_updates_and_length_sorted_passes():
    from harness_g.training.update_plan import (micro_batches, mini_batch_rows, pad_to_count, padded_tokens,
                                                plan_updates, question_starts, update_count)

    questions = [0, 0, 1, 2, 2, 2, 3]  # row -> question
    lengths = [5, 9, 7, 3, 8, 8, 2]  # row -> real tokens
    assert question_starts(questions) == [0, 2, 3, 6]
    with pytest.raises(ValueError, match="contiguous"):
        question_starts([0, 1, 0])
    assert update_count(128, 32) == 4 and update_count(3, 32) == 1 and update_count(0, 32) == 1
    # 4 questions / 2 per update; no cap: one pass per update, longest row first
    assert plan_updates(questions, lengths, 2) == [[[1, 2, 0]], [[4, 5, 3, 6]]]
    # at most 2 rows per pass: rows of similar length share a pass
    assert plan_updates(questions, lengths, 2, 2) == [[[1, 2], [0]], [[4, 5], [3, 6]]]
    assert plan_updates(questions, lengths, 8) == [[[1, 4, 5, 2, 0, 3, 6]]]
    # at most 16 padded tokens per pass (rows x the pass's longest): a row longer than the cap runs alone, 8 + 8 fit
    # and a third 8-row would not, 7 + 5 pad to 14, adding the 3 would make 3 x 7 = 21
    assert micro_batches(range(7), lengths, max_tokens=16) == [[1], [4, 5], [2, 0], [3, 6]]
    assert micro_batches(range(3, 3), lengths) == [[]]
    chunks = mini_batch_rows(question_starts(questions), len(questions), 2)
    plan = [micro_batches(range(a, b), lengths, 2) for a, b in chunks]
    # another rank needs 3 passes: this rank pads with an empty, zero-weight pass
    assert pad_to_count(plan, [3, 3]) == [[[1, 2], [0], []], [[4, 5], [3, 6], []]]
    # padded positions: each pass computes rows x its own longest row
    assert padded_tokens(plan, lengths) == (2 * 9 + 5 + 2 * 8 + 2 * 3, sum(lengths))


def test_update_plan_matches_the_paper_batch():
    from harness_g.training.update_plan import plan_updates

    questions = [q for q in range(128) for r in range(8) for _ in range(1 + (q + r) % 7)]
    plan = plan_updates(questions, [1] * len(questions), 32)
    assert len(plan) == 4 and all(len({questions[i] for i in mini[0]}) == 32 for mini in plan)


# -- step metrics -------------------------------------------------------------------------------------------------
def test_step_metrics_from_hand_made_rollouts():
    from harness_g.training import step_metrics as sm

    r0 = _rollout([_step("LOOKUP", ["s1"], ["s2"]), _step(None, ["s1", "s2"], [], chosen=None), _step("ANSWER", ["s1"], [])],
                  reward=1.0, queries=["paris", "france"])
    r1 = _rollout([_step("ANSWER", ["s1"], [])], reward=0.0, queries=["paris"])
    r0.em = 1.0
    assert sm.outcome_metrics([r0, r1]) == {"reward_f1": 0.5, "em": 0.5}
    assert sm.action_metrics([r0, r1]) == {"turns": 2.0, "invalid_action_frac": 0.25, "action_frac_ANSWER": 0.5,
                                           "action_frac_INVALID": 0.25, "action_frac_LOOKUP": 0.25}
    assert sm.credit_metrics([[0.5, 0.0, -0.25], [0.0]], sm.total_steps([r0, r1])) == {
        "snc_credit_mean": 0.125, "snc_credit_nonzero_frac": 0.5}
    # the two rollouts asked differently and reached different evidence ({s2} vs nothing): aliasing 0
    assert sm.equivalence_metrics([r0, r1], 0.8, free_query=True) == {"d_ret": 1.0, "mean_n_eq": 2.0, "d_query": 1.0,
                                                                     "aliasing": 0.0}
    # two paraphrases reaching the same evidence alias; one query written twice is no pair (no aliasing key)
    a = _rollout([_step("LOOKUP", ["s1"], ["s2"])], reward=0.0, queries=["capital of france"])
    b = _rollout([_step("LOOKUP", ["s1"], ["s2"])], reward=0.0, queries=["france capital"])
    assert sm.equivalence_metrics([a, b], 0.8, free_query=True)["aliasing"] == 1.0
    c = _rollout([_step("LOOKUP", ["s1"], ["s2"])], reward=0.0, queries=["capital of france"])
    assert "aliasing" not in sm.equivalence_metrics([a, c], 0.8, free_query=True)
    times = sm.time_metrics(sm.StepTimes(rollout=2.0, snc=1.0, update=0.5, sync=0.0, total=4.0), {"generate_s": 1.5, "env_s": 0.5})
    assert times["snc_share"] == 0.25 and times["time_generate_s"] == 1.5 and "observation_tokens_max" not in times
    assert sm.time_metrics(sm.StepTimes(2.0, 1.0, 0.5, 0.0, 4.0), {"generate_s": 1.5, "env_s": 0.5,
                                                                     "generate_pad_ratio": 1.25})["generate_pad_ratio"] == 1.25
    shared = sm.time_metrics(sm.StepTimes(2.0, 1.0, 0.5, 0.0, 4.0), {"generate_s": 1.5, "env_s": 0.5, "generate_pad_ratio": 1.25,
                                                                  "generate_prefill_ratio": 0.4})
    assert (shared["generate_pad_ratio"], shared["generate_prefill_ratio"]) == (1.25, 0.4)


# -- the graph is built before the trainer ------------------------------------------------------------------------
def test_require_graph_says_who_builds_it(tmp_path):
    from harness_g.training.data import require_graph

    built = SimpleNamespace(data=SimpleNamespace(graph_dir=str(tmp_path), build_format=None))
    (tmp_path / "manifest.json").write_text("{}")
    require_graph(built)
    to_build = SimpleNamespace(data=SimpleNamespace(graph_dir=str(tmp_path / "g"), build_format="2wiki"))
    with pytest.raises(ConfigError, match=r"call harness_g.training.data.build_training_graph\(config\) before training"):
        require_graph(to_build)
    with pytest.raises(ConfigError, match="holds no graph .no manifest.json.: build it with `harness-g build`"):
        require_graph(SimpleNamespace(data=SimpleNamespace(graph_dir=str(tmp_path / "g"), build_format=None)))


def test_training_evaluation_scores_evidence_recall_per_question():
    """The trainer's before/after evaluation reports evidence recall of C_T (harness-g eval's definition: sentence
    units, or paragraph units when only paragraphs are annotated) beside F1/EM, per question and averaged over the
    questions with gold evidence."""
    from harness_g.training.evaluation import play, summary

    items = [QAItem("a", "qa?", ("Paris",), "t", gold_sentence_ids=("p1:0", "p2:1")),
             QAItem("b", "qb?", ("Rome",), "t", gold_paragraph_ids=("p3",)),
             QAItem("c", "qc?", ("Oslo",), "t")]  # no gold evidence: not in the recall mean
    played = {"a": (["p1:0", "p9:0"], "Paris"), "b": (["p3:4"], "Milan"), "c": ([], "Oslo")}

    class Replay:  # a fixed trajectory per question: this test is about the scoring, not the policy
        def run(self, item):
            committed, answer = played[item.id]
            return Trajectory(item.id, item.question, list(item.answers), "v", {}, [], committed=committed, answer=answer)

    row = summary("heldout", [play(Replay(), items)])
    assert [s[2] for s in row["scores"]] == [0.5, 1.0, None]
    assert [s[:2] for s in row["scores"]] == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert row["evidence_recall"] == pytest.approx(0.75) and row["evidence_questions"] == 2
    assert row["f1"] == pytest.approx(2 / 3) and [a[3] for a in row["answers"]] == ["a", "b", "c"]


def test_rank_means_count_a_missing_key_as_zero_except_the_aliasing_rate():
    """An action type one rank never took is 0 there; the aliasing rate of a rank with no differing pair is
    undefined, so it is averaged over the ranks that have one."""
    from harness_g.training.collectives import average_metrics

    got = average_metrics([{"d_ret": 1.0, "action_frac_LOOKUP": 0.5, "aliasing": 0.25},
                           {"d_ret": 0.0}, {"d_ret": 0.5, "aliasing": 0.75}])
    assert got == {"d_ret": 0.5, "action_frac_LOOKUP": pytest.approx(0.5 / 3), "aliasing": 0.5}
