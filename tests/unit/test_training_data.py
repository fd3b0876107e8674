"""The training data checks (training/data.py) before any model or store: a step may not draw more questions than
the run trains on (issue 28 item 9: ``rollout.questions_per_step=100000`` was OOM-killed instead of refused)."""
from __future__ import annotations

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
                               f"{TRIVIA} (after data.limit, data.eval_questions, data.train_questions); "
                               f"set it to at most {n}")
