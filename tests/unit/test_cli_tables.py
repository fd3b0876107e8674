"""The tables the CLI dispatches through (pure: no database, no model): the store kinds of ``--store``
(``graph/stores/__init__.py`` STORE_KINDS) and the run kinds ``harness-g report`` draws (``harness_g/run_kinds.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_g.errors import StoreError
from harness_g.graph.stores import NEO4J_SCHEMES, SPEC_FORMS, STORE_KINDS, describe_store, parse_store_spec

#: kind -> specs that name it, and a phrase its description holds
STORE_SPECS = {
    "embedded": (["embedded", "embedded:7001", " embedded "], "embedded FalkorDB"),
    "falkordb": (["falkordb://db.local:6380", "FalkorDB://h:1?graph=g"], "FalkorDB at "),
    "neo4j": ([f"{scheme}://h:7687" for scheme in NEO4J_SCHEMES], "Neo4j at "),
}


def test_every_store_kind_is_in_the_table_and_answers_its_specs() -> None:
    assert set(STORE_KINDS) == set(STORE_SPECS)
    for kind, (specs, phrase) in STORE_SPECS.items():
        for spec in specs:
            assert parse_store_spec(spec).kind == kind, spec
            assert describe_store(spec).startswith(phrase), spec
    # every documented form parses (placeholders filled in) to a kind of the table
    for form in SPEC_FORMS:
        spec = form.replace("HOST", "h").replace("[:PORT]", ":7687").replace("PORT", "6379").replace("[?graph=NAME]", "")
        assert parse_store_spec(spec).kind in STORE_KINDS, form


def test_each_url_scheme_belongs_to_one_store_kind() -> None:
    schemes = [s for kind in STORE_KINDS.values() for s in kind.schemes]
    assert len(schemes) == len(set(schemes)) and "falkordb" in schemes and set(NEO4J_SCHEMES) <= set(schemes)
    with pytest.raises(StoreError, match=r"unknown scheme 'redis'"):  # a scheme no kind serves
        parse_store_spec("redis://h:6379")


def test_the_store_table_connects_through_the_kind(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="needs a GRAPH_DIR"):
        STORE_KINDS["embedded"].connect(parse_store_spec("embedded"), None)


def _training_run(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("seed: 0\n")
    (path / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward_f1": 0.1}) + "\n")
    return path


def test_report_run_kinds_answer_for_each_kind(tmp_path: Path) -> None:
    from harness_g.cli import build_parser
    from harness_g.run_kinds import RUN_KINDS, group_runs, kind_of

    build_parser()  # the command modules register their run kinds on import
    assert RUN_KINDS.names() == ["eval run", "training run"]
    train = _training_run(tmp_path / "train")
    evals = tmp_path / "eval"
    evals.mkdir()
    (evals / "records.jsonl").write_text("")
    both = _training_run(tmp_path / "both")  # an eval run written into a training run's folder: records win
    (both / "records.jsonl").write_text("")
    assert kind_of(train).name == "training run"
    assert kind_of(evals).name == kind_of(both).name == kind_of(tmp_path / "missing").name == "eval run"
    # the default kind (eval) first, whatever order the runs come in; each group keeps the given order
    groups = group_runs([str(train), str(evals), str(both)])
    assert [(kind.name, runs) for kind, runs in groups] == [("eval run", [str(evals), str(both)]),
                                                             ("training run", [str(train)])]


def test_a_second_default_run_kind_is_refused() -> None:
    from harness_g.cli import build_parser
    from harness_g.errors import ConfigError
    from harness_g.run_kinds import RunKind, register_run_kind

    build_parser()
    with pytest.raises(ConfigError, match="already a default run kind"):
        register_run_kind(RunKind("other run", claims=None, report=lambda runs, args, alone: None))
