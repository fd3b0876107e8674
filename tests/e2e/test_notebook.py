"""Runs and graphs in a notebook (issue 32 item 7): ``harness_g.load_run``, ``harness_g.load_training`` and
``harness_g.open_graph`` hand a REAL eval run (heuristic policy on the HotpotQA test graph), a REAL training run
(tiny random model, one GRPO step on that graph) and the REAL graph artifact over as pandas DataFrames, equal to
what the files hold; the README's notebook example runs as printed; ``import harness_g`` stays light."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers.readme_code import python_block

import harness_g
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import InputError

README_PATHS = ('"runs/hp-heuristic"', '"runs/tiny"', '"graphs/hotpotqa"')


@pytest.fixture(scope="module")
def eval_run(falkordb_hotpot_view, hotpot_questions, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("notebook") / "hp-heuristic"
    run_eval(falkordb_hotpot_view, make_policy("heuristic"), hotpot_questions, out,
             config=EvalConfig(limit=4, reachability=True, reach_budget=60), progress=False)
    return out


@pytest.fixture(scope="module")
def training_run(hotpot_graph_dir, tmp_path_factory) -> Path:
    """One GRPO step of a tiny random model on a copy of the HotpotQA test graph, evaluated before and after."""
    import shutil

    from harness_g.training.config import load_config
    from harness_g.training.trainer import Trainer

    base = tmp_path_factory.mktemp("notebook-train")
    graph = base / "graph"
    graph.mkdir()
    for item in hotpot_graph_dir.iterdir():  # the artifact, not its store: the run loads its own embedded copy
        if item.is_file() and item.name != "store.json":
            shutil.copy2(item, graph / item.name)
    config = load_config(None, {
        "model.name": "tiny-random", "data.graph_dir": str(graph), "data.eval_questions": 1, "rollout.group_size": 2,
        "rollout.questions_per_step": 1, "rollout.max_turns": 2, "rollout.constrain_actions": True,
        "rollout.env": {"visible_cap": 3, "lookup_cap": 3}, "rollout.max_answer_tokens": 4, "credit.dead_zone": 0.0,
        "optim.steps": 1, "optim.mini_batch_questions": 1, "log.save_every": 1, "log.tensorboard": False})
    Trainer(config, base / "tiny", progress=False).train()
    return base / "tiny"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_load_run_gives_per_question_records_steps_and_the_config(eval_run: Path) -> None:
    run = harness_g.load_run(eval_run)
    records = _jsonl(eval_run / "records.jsonl")
    assert run.records["id"].tolist() == [r["id"] for r in records]
    for key in ("em", "f1", "evidence_recall"):
        assert run.records[key].tolist() == [r["metrics"][key] for r in records]
        assert round(100 * run.records[key].mean(), 2) == run.summary[key]  # the summary is their macro average
    assert run.records["seconds"].tolist() == [r["seconds"] for r in records]
    assert run.records["reachability_seconds"].tolist() == [r["timing"]["reachability"] for r in records]
    assert run.records["reachability"].tolist() == [r["reachability"]["status"] for r in records]
    assert len(run.steps) == sum(len(r["trajectory"]["steps"]) for r in records) > 0
    first = records[0]["trajectory"]["steps"][0]
    row = run.steps.iloc[0]
    assert (row["id"], row["turn"], row["chosen"], row["action_type"], row["menu_size"]) == (
        records[0]["id"], 0, first["chosen"], first["action_type"], len(first["menu"]))
    assert run.config == json.loads((eval_run / "config.json").read_text()) and run.config["policy"]["name"] == "heuristic"
    assert run.raw[records[0]["id"]]["trajectory"]["steps"][0]["menu"] == first["menu"]


def test_load_training_gives_step_metrics_evaluations_and_the_config(training_run: Path) -> None:
    train = harness_g.load_training(training_run)
    metrics = _jsonl(training_run / "metrics.jsonl")
    assert train.metrics["step"].tolist() == [r["step"] for r in metrics] == [1]
    assert train.metrics["loss"].tolist() == [r["loss"] for r in metrics]
    evals = _jsonl(training_run / "eval.jsonl")
    assert list(zip(train.eval["tag"], train.eval["split"], train.eval["f1"])) == [(e["tag"], e["split"], e["f1"]) for e in evals]
    assert {"before", "after"} <= set(train.eval["tag"]) and "answers" not in train.eval.columns
    assert len(train.answers) == sum(len(e["answers"]) for e in evals) > 0
    assert train.answers["question_id"].notna().all() and "scores" not in train.eval.columns
    # each question's own scores beside its answer: their mean is the evaluation's F1 / evidence recall
    for e in evals:
        rows = train.answers[(train.answers["tag"] == e["tag"]) & (train.answers["split"] == e["split"])]
        assert rows["f1"].mean() == pytest.approx(e["f1"])
        assert rows["evidence_recall"].dropna().mean() == pytest.approx(e["evidence_recall"])
    assert train.config == yaml.safe_load((training_run / "config.yaml").read_text()) and train.config["optim"]["steps"] == 1


def test_open_graph_gives_the_tables_and_the_embeddings(hotpot_graph_dir: Path) -> None:
    from harness_g.graph.artifact import Artifact

    graph, artifact = harness_g.open_graph(hotpot_graph_dir), Artifact.open(hotpot_graph_dir)
    for name in ("paragraphs", "sentences", "entities", "mentions", "synonyms"):
        frame = graph.table(name)
        assert frame.to_dict("list") == artifact.table(name).to_pydict(), name
    sentences, vectors = graph.table("sentences"), graph.embeddings()
    assert isinstance(vectors, np.ndarray) and vectors.shape == (len(sentences), 384) and vectors.dtype == np.float32
    assert np.array_equal(vectors, np.load(hotpot_graph_dir / "sentence_embeddings.npy"))
    assert graph.entity_embeddings().shape == (len(graph.table("entities")), 384)
    questions = graph.table("questions")
    assert questions["id"].tolist() == [q.id for q in artifact.questions()] and len(questions) == 6
    with pytest.raises(InputError, match="unknown table 'nodes'; the tables are paragraphs, sentences"):
        graph.table("nodes")


def test_directories_of_another_kind_are_one_line_errors(tmp_path: Path, eval_run: Path) -> None:
    with pytest.raises(InputError, match=r"not an eval run directory \(no records.jsonl"):
        harness_g.load_run(tmp_path)
    with pytest.raises(InputError, match=r"not a training run directory"):
        harness_g.load_training(eval_run)
    with pytest.raises(InputError, match="no manifest.json: not a harness-g graph"):
        harness_g.open_graph(eval_run)


def test_the_readme_notebook_example_runs(eval_run: Path, training_run: Path, hotpot_graph_dir: Path, capsys) -> None:
    code = python_block("# harness-g runs and graphs in a notebook")
    for readme_path, real in zip(README_PATHS, (eval_run, training_run, hotpot_graph_dir)):
        assert readme_path in code
        code = code.replace(readme_path, repr(str(real)))
    scope: dict = {}
    exec(compile(code, "README.md:notebook", "exec"), scope)  # noqa: S102
    printed = capsys.readouterr().out
    assert "heuristic" in printed and "reward_f1" in printed and "surface" in printed
    assert len(scope["per_question"]) == 4 and len(scope["sentences"]) == scope["vectors"].shape[0]


def test_import_harness_g_stays_light() -> None:
    """``import harness_g`` loads neither pandas nor the agent or training packages; the notebook names resolve."""
    code = ("import sys, harness_g; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'harness_g'))); "
            "print(callable(harness_g.load_run), 'open_graph' in dir(harness_g))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['harness_g']", "True True"]
