"""FlashRAG / Search-R1 files end to end (issue 28 item 10), and what a question set without gold labels can and
cannot do (item 9): a graph built from FlashRAG's question layout plus its ``{id, contents}`` corpus is evaluated
with real scores; the same question file read as ``--format questions`` is refused naming its fields (it used to be
stored with ``answers: []`` and evaluated to ``scored 6`` with every metric None); an eval with nothing to score
prints no score line; the oracle refuses questions without gold evidence; a training batch larger than the data is
refused at start. Embedded FalkorDB (the default store): the formats are what is tested, not the store.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.paths import REPO_ROOT, TEST_DATA

from harness_g.graph.artifact import Artifact

QUESTIONS = TEST_DATA / "flashrag" / "hotpotqa" / "dev.jsonl"
CORPUS = TEST_DATA / "flashrag" / "corpus.jsonl"
TINY_CPU = REPO_ROOT / "training" / "configs" / "tiny-cpu.yaml"


@pytest.fixture(scope="module")
def flashrag_graph(tmp_path_factory) -> Path:
    from harness_g.cli import main

    out = tmp_path_factory.mktemp("flashrag") / "graph"
    assert main(["build", "--format", "flashrag", "--input", str(QUESTIONS), "--corpus", f"flashrag:{CORPUS}",
                 "--out", str(out), "-q"]) == 0
    return out


def test_flashrag_build_keeps_the_golden_answers_and_eval_scores_them(flashrag_graph: Path, tmp_path: Path,
                                                                     capsys) -> None:
    questions = Artifact.open(flashrag_graph).questions()
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    assert [(q.id, list(q.answers)) for q in questions] == [(r["id"], r["golden_answers"]) for r in rows]
    assert Artifact.open(flashrag_graph).manifest["counts"]["paragraphs"] == len(CORPUS.read_text().splitlines())
    out = tmp_path / "run"
    rc, stdout, err = run(capsys, "eval", flashrag_graph, "--out", out, "-q")  # the heuristic policy
    assert rc == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["questions"] == summary["scored"] == 6 and summary["unscored"] == summary["errors"] == 0
    assert summary["em"] is not None and summary["f1"] is not None and summary["answer_in_evidence"] is not None
    assert summary["evidence_recall"] is None  # FlashRAG questions carry no gold evidence: not scored, not 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert all(r["answers"] == row["golden_answers"] for r, row in zip(records, rows))
    for r in records:  # real scores: numbers, not None (the heuristic's short answers miss here: F1 0.0 is a score)
        assert all(isinstance(r["metrics"][k], float) for k in ("em", "f1", "answer_in_evidence")), r["metrics"]
    assert "scored" in stdout


def test_flashrag_questions_read_as_generic_questions_are_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "g"
    rc, _, err = run(capsys, "build", "--format", "questions", "--input", QUESTIONS, "--corpus", f"flashrag:{CORPUS}",
                     "--out", out, "-q")
    assert_one_line_error(rc, err, f"{QUESTIONS}: no row has an answer field (answers or answer)",
                          "golden_answers, id, metadata, question", "use --format flashrag")
    assert not out.exists()


def test_eval_with_nothing_to_score_prints_no_score_line(flashrag_graph: Path, tmp_path: Path, capsys) -> None:
    """Questions with no answers and no gold evidence: every metric would be None, so there is no table."""
    unlabelled = tmp_path / "unlabelled.jsonl"
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()][:2]
    unlabelled.write_text("".join(json.dumps({"id": r["id"], "question": r["question"], "answers": []}) + "\n"
                                  for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    rc, stdout, err = run(capsys, "eval", flashrag_graph, "--questions", unlabelled, "--format", "questions",
                          "--out", out, "-q")
    assert_one_line_error(rc, err, "nothing could be scored: of 2 questions 0 failed and 2 have neither gold answers "
                          f"nor gold evidence; the trajectories are in {out / 'records.jsonl'}")
    assert "scored" not in stdout and "f1" not in stdout
    assert len((out / "records.jsonl").read_text().splitlines()) == 2  # the played trajectories are kept


def test_oracle_on_questions_without_gold_labels_exits_non_zero(flashrag_graph: Path, tmp_path: Path, capsys) -> None:
    """It used to record an error per question and exit 0."""
    out = tmp_path / "run"
    rc, _, err = run(capsys, "eval", flashrag_graph, "--out", out, "--policy", "oracle", "--limit", "3", "-q")
    assert_one_line_error(rc, err, "the oracle policy needs gold evidence labels, and 3 of the 3 questions have none "
                          "(e.g. '5a7ce50f55429909bec76869')", "another --policy")
    assert not out.exists()  # refused before the run directory was made


def test_training_batch_larger_than_the_data_is_refused_at_start(flashrag_graph: Path, tmp_path: Path, capsys) -> None:
    """``rollout.questions_per_step=100000`` was OOM-killed; now one line before any model loads or file is written."""
    out = tmp_path / "run"
    rc, _, err = run(capsys, "train", "--config", TINY_CPU, "--out", out, "--set", f"data.graph_dir={flashrag_graph}",
                     "--set", "data.build_format=", "--set", "rollout.questions_per_step=100000", "-q")
    assert_one_line_error(rc, err, "rollout.questions_per_step (100000) is larger than the 4 training question(s) of "
                          f"{flashrag_graph} (after data.limit, data.eval_questions, data.train_offset, data.train_questions); "
                          "set it to at most 4")
    assert not out.exists()
