"""The training data checks (training/data.py) before any model or store: a step may not draw more questions than
the run trains on (issue 28 item 9: ``rollout.questions_per_step=100000`` was OOM-killed instead of refused)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.paths import TEST_DATA

from harness_g.errors import ConfigError
from harness_g.training.config import load_config
from harness_g.training.data import split_questions

TRIVIA = TEST_DATA / "triviaqa" / "triviaqa_test.subset.jsonl"  # 6 questions with answers


def _config(tmp_path: Path, **overrides):
    return load_config(None, {"data.graph_dir": str(tmp_path), "data.questions": str(TRIVIA),
                              "data.questions_format": "triviaqa", "data.eval_questions": 2, **overrides})


def test_a_batch_up_to_the_training_questions_is_accepted(tmp_path: Path) -> None:
    train, held_out = split_questions(_config(tmp_path, **{"rollout.questions_per_step": 4}), view=None)
    assert (len(train), len(held_out)) == (4, 2)


@pytest.mark.parametrize(("overrides", "n"), [
    ({"rollout.questions_per_step": 100_000}, 4),
    ({"rollout.questions_per_step": 5}, 4),
    ({"rollout.questions_per_step": 3, "data.train_questions": 2}, 2),
    ({"rollout.questions_per_step": 2, "data.limit": 2}, 1),  # limit 2, one held out
])
def test_a_batch_larger_than_the_training_questions_is_refused(tmp_path: Path, overrides: dict, n: int) -> None:
    q = overrides["rollout.questions_per_step"]
    with pytest.raises(ConfigError) as info:
        split_questions(_config(tmp_path, **overrides), view=None)
    assert str(info.value) == (f"rollout.questions_per_step ({q}) is larger than the {n} training question(s) of "
                               f"{TRIVIA} (after data.limit, data.eval_questions, data.train_offset, data.train_questions); "
                               f"set it to at most {n}")


def test_train_offset_takes_the_next_pool_of_the_same_split(tmp_path: Path) -> None:
    """data.train_offset (ours) skips the first N training questions before data.train_questions cuts: another small
    pool, with the held-out part unchanged."""
    base = {"rollout.questions_per_step": 2, "data.train_questions": 2}
    first, held = split_questions(_config(tmp_path, **base), view=None)
    every, _ = split_questions(_config(tmp_path, **{"rollout.questions_per_step": 1}), view=None)
    nxt, held2 = split_questions(_config(tmp_path, **base, **{"data.train_offset": 2}), view=None)
    assert [q.id for q in first] == [q.id for q in every[:2]] and [q.id for q in nxt] == [q.id for q in every[2:4]]
    assert [q.id for q in held2] == [q.id for q in held] and not {q.id for q in nxt} & {q.id for q in held}
    with pytest.raises(ConfigError) as info:
        split_questions(_config(tmp_path, **base, **{"data.train_offset": 4}), view=None)
    assert str(info.value) == (f"data.train_offset (4) leaves no training question: {TRIVIA} has 4 after data.limit "
                               "and data.eval_questions; set it to at most 3")
    with pytest.raises(ConfigError, match="data.train_offset"):  # negative: refused by the config's own check
        _config(tmp_path, **{"data.train_offset": -1})


# -- the paper's split (harness-g.tex appendix "Splits and corpus preprocessing": 5,120 training, 128 held out) --------
def test_the_paper_config_holds_out_128_and_trains_on_5120_questions() -> None:
    """The old paper config trained on every question of the graph, with no held-out part to report on."""
    from helpers.paths import PAPER_CONFIG

    data = load_config(PAPER_CONFIG).data
    assert (data.train_questions, data.eval_questions) == (5120, 128)


def test_the_split_is_recorded_and_a_resume_with_another_split_is_refused(tmp_path: Path) -> None:
    from harness_g.training.data import HELDOUT_IDS, SPLIT_FILE, check_split, split_record, write_split

    cfg = _config(tmp_path, **{"rollout.questions_per_step": 1, "data.train_questions": 3})
    train, held_out = split_questions(cfg, view=None)
    again = split_questions(cfg, view=None)
    assert [q.id for q in again[0]] == [q.id for q in train] and [q.id for q in again[1]] == [q.id for q in held_out]
    record = split_record(cfg, train, held_out)
    assert record["heldout"] == [q.id for q in held_out] and len(record["heldout"]) == 2  # the last 2 answered questions
    assert record["train"] == [q.id for q in train] and len(record["train"]) == 3
    assert (record["eval_questions"], record["train_questions"], record["source"]) == (2, 3, str(TRIVIA))
    check_split(tmp_path, record)  # nothing recorded yet: passes
    write_split(tmp_path, record)
    assert (tmp_path / HELDOUT_IDS).read_text().split() == record["heldout"]
    assert json.loads((tmp_path / SPLIT_FILE).read_text()) == record
    check_split(tmp_path, record)  # the same split: a resume may go on
    other = split_record(_config(tmp_path, **{"rollout.questions_per_step": 1, "data.eval_questions": 1}),
                         *split_questions(_config(tmp_path, **{"rollout.questions_per_step": 1, "data.eval_questions": 1}),
                                          view=None))
    with pytest.raises(ConfigError) as info:
        check_split(tmp_path, other)
    assert str(info.value) == (f"{tmp_path / SPLIT_FILE}: the resumed run's question split differs from the recorded "
                               "one (train: 3 recorded, 5 now; heldout: 2 recorded, 1 now); resume with the graph, "
                               "questions and data.* settings it began with")


def test_eval_selects_the_listed_question_ids_in_order_and_refuses_unknown_ones(tmp_path: Path) -> None:
    from harness_g.agent.cli import select_questions
    from harness_g.graph.types import QAItem

    qs = [QAItem(id=f"q{i}", question=f"question {i}?", answers=("a",), dataset="d") for i in range(4)]
    ids = tmp_path / "heldout_ids.txt"
    ids.write_text("q3\n\nq1\n")
    assert [q.id for q in select_questions(qs, ids, "GRAPH")] == ["q3", "q1"]
    for text, message in (("q1\nq9\n", f"{ids}:2: question id 'q9' is not among the 4 questions of GRAPH"),
                          ("q1\nq1\n", f"{ids}:2: question id 'q1' is listed twice"),
                          ("\n", f"{ids}: no question id in it (one id per line)")):
        ids.write_text(text)
        with pytest.raises(ConfigError) as info:
            select_questions(qs, ids, "GRAPH")
        assert str(info.value) == message
