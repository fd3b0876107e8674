"""One config path (harness_g.config_loader): typed parsing, unknown keys, ``--set`` overrides, YAML errors, and the
same loader for BuildConfig, EnvConfig/EvalConfig and TrainConfig. Pure: no graph, no database."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness_g import config_loader as L
from harness_g.agent.config import EnvRunConfig, EvalRunConfig, load_agent_config
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.config import EvalConfig
from harness_g.errors import ConfigError
from harness_g.graph.config import BuildConfig
from harness_g.training.config import TrainConfig, load_config


@dataclass(frozen=True)
class Inner(L.Config):
    lr: float = L.config_field(0.1, "learning rate (> 0)", gt=0.0)
    mode: str = L.config_field("a", "a or b", choices=("a", "b"))
    tags: tuple[str, ...] = L.config_field(("x",), "labels")


@dataclass(frozen=True)
class Outer(L.Config):
    CONFIG_NAME = "toy config"

    steps: int = L.config_field(3, "steps (>= 1)", ge=1)
    where: str = L.config_field("", "a directory", path=True)
    maybe: float | None = L.config_field(None, "optional")
    optim: Inner = field(default_factory=Inner, metadata={"help": "section"})


# -- values are parsed by the declared type; errors name the field --------------------------------------------------
@pytest.mark.parametrize("overrides, message", [
    ({"optim.lr": "abc"}, "optim.lr: expected float, got 'abc'"),
    ({"steps": "1.5"}, "steps: expected int, got '1.5'"),
    ({"steps": 0}, "steps: must be >= 1, got 0"),
    ({"optim.lr": 0}, "optim.lr: must be > 0.0, got 0.0"),
    ({"optim.mode": "c"}, "optim.mode 'c' unknown; available: a, b"),
    ({"maybe": "many"}, "maybe: expected float or null, got 'many'"),
    ({"optim": "[1]"}, "optim: expected a mapping, got list"),
])
def test_wrong_values_are_one_line_errors_naming_the_field(overrides, message) -> None:
    with pytest.raises(ConfigError) as info:
        L.load(Outer, None, overrides)
    assert str(info.value) == message


def test_strings_are_parsed_by_the_field_type() -> None:
    cfg = L.load(Outer, None, {"steps": "7", "optim.lr": "1e-3", "maybe": "null", "optim.tags": "[p, q]"})
    assert cfg == Outer(steps=7, maybe=None, optim=Inner(lr=1e-3, tags=("p", "q")))
    assert isinstance(cfg.optim.lr, float) and isinstance(cfg.optim.tags, tuple)
    assert L.parse_value("no", bool, "flag") is False and L.parse_value("4.0", int, "n") == 4


def test_direct_construction_runs_the_declared_checks() -> None:
    with pytest.raises(ConfigError, match=r"^steps: must be >= 1, got 0$"):
        Outer(steps=0)
    with pytest.raises(ConfigError, match="answer_with_max: must be >= 1"):
        EnvConfig(answer_with_max=0)


# -- unknown keys -------------------------------------------------------------------------------------------------------
def test_unknown_keys_are_refused_listing_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        L.from_mapping(Outer, {"stepz": 2})
    assert str(info.value) == "unknown toy config field(s): stepz; known: steps, where, maybe, optim"
    with pytest.raises(ConfigError) as info:
        L.from_mapping(Outer, {"optim": {"lr": 1, "momentum": 0.9}})
    assert str(info.value) == "optim: unknown field(s): momentum; known: lr, mode, tags"
    with pytest.raises(ConfigError, match="old was renamed: use steps"):
        L.from_mapping(Outer, {"old": 1}, renamed={"old": "steps"})


# -- --set ----------------------------------------------------------------------------------------------------------------
def test_set_overrides_win_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("steps: 2\noptim: {lr: 0.5, mode: b}\n")
    cfg = L.load(Outer, path, dict(L.parse_set(s) for s in ["optim.lr=0.25", "steps=9"]))
    assert (cfg.steps, cfg.optim.lr, cfg.optim.mode) == (9, 0.25, "b")
    assert L.parse_set("a.b=x=y") == ("a.b", "x=y")  # only the first '=' splits
    for bad in ("novalue", "=1", "a..b=1"):
        with pytest.raises(ConfigError, match="--set expects key.path=value"):
            L.parse_set(bad)
    with pytest.raises(ConfigError, match="cannot set steps.x: steps is not a section"):
        L.load(Outer, path, {"steps.x": 1})


def test_relative_paths_in_a_file_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "c.yaml"
    path.write_text("where: data/g\n")
    assert L.load(Outer, path).where == str(tmp_path / "sub" / "data" / "g")
    assert L.load(Outer, path, {"where": "here"}).where == "here"  # --set stays relative to the working directory


# -- YAML files -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ("steps: [1\n", "malformed YAML"),
    ("- 1\n- 2\n", "expected a mapping of fields, got list"),
    ("steps: six\n", "steps: expected int, got 'six'"),
])
def test_yaml_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        L.load(Outer, path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=f"{tmp_path / 'missing.yaml'}: cannot read config"):
        L.load(Outer, tmp_path / "missing.yaml")


@pytest.mark.parametrize("text, message", [
    ("steps: 3\nwhere: a\nsteps: 4\n", "key 'steps' is given twice (lines 1 and 3); keep one"),
    ("inner:\n  lr: 0.5\n  mode: b\n  lr: 0.1\n", "key 'lr' is given twice (lines 2 and 4); keep one"),
    ("[" * 50_000 + "]" * 50_000, "malformed YAML (nested too deeply)"),
])
def test_a_key_given_twice_or_deep_yaml_is_refused_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    """PyYAML kept the last of two equal keys silently (steps 4 trained while the file also said 3); 50,000 nested
    brackets ended in RecursionError."""
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        L.load(Outer, path)
    assert str(info.value) == f"{path}: {message}"


def test_yaml_merge_keys_may_still_be_overridden(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {lr: 0.5, mode: b}\ninner:\n  <<: *b\n  lr: 0.25\n")
    with pytest.raises(ConfigError, match="unknown toy config field.*base"):  # the anchor key itself is unknown
        L.load(Outer, path)
    assert L.read_yaml(path)["inner"] == {"lr": 0.25, "mode": "b"}


# -- the same loader for every command's config -------------------------------------------------------------------------------
def test_build_env_eval_and_train_configs_share_the_loader(tmp_path: Path) -> None:
    build = BuildConfig.load(None, {"link_top_k": "3", "ner_labels": "[PERSON, ORG]"})
    assert build.link_top_k == 3 and build.ner_labels == ("PERSON", "ORG")
    with pytest.raises(ConfigError, match=r"^link_min_cosine: must be <= 1.0, got 2.0$"):
        BuildConfig.load(None, {"link_min_cosine": "2"})
    with pytest.raises(ConfigError, match="unknown build config field\\(s\\): chunk; known: preset, embedding_model"):
        BuildConfig.from_dict({"chunk": 1})

    run = load_agent_config(EvalRunConfig, None, {"eval.limit": "5", "env.answer_with": "no", "eval.reachability": "yes"})
    assert run.eval == EvalConfig(limit=5, reachability=True) and run.env == EnvConfig(answer_with=False)
    with pytest.raises(ConfigError, match=r"^eval.limit: expected int or null, got 'all'$"):
        load_agent_config(EvalRunConfig, None, {"eval.limit": "all"})
    with pytest.raises(ConfigError, match=r"^env.visible_cap: must be >= 1, got 0$"):
        load_agent_config(EnvRunConfig, None, {"env.visible_cap": 0})

    train = load_config(None, {"data.graph_dir": "g", "optim.lr": "1e-6", "rollout.env": "{visible_cap: '3'}"})
    assert train.optim.lr == 1e-6 and train.rollout.env.visible_cap == 3 and train.env_config().visible_cap == 3
    with pytest.raises(ConfigError, match=r"^optim.lr: expected float, got 'abc'$"):
        load_config(None, {"data.graph_dir": "g", "optim.lr": "abc"})
    for cls in (BuildConfig, EnvConfig, EvalConfig, EnvRunConfig, EvalRunConfig, TrainConfig):
        assert issubclass(cls, L.Config)
        assert all(line.count("  # ") == 1 and not line.endswith("# ") for line in L.describe(cls)), cls  # help everywhere


def test_an_env_file_is_the_env_section(tmp_path: Path) -> None:
    """What ``--env-config`` always took (EnvConfig fields at the top) is read as the env section of ``--config``."""
    flat, sectioned = tmp_path / "env.yaml", tmp_path / "run.yaml"
    flat.write_text("max_turns: 3\nvisible_cap: 4\n")
    sectioned.write_text("eval: {limit: 2}\nenv: {max_turns: 3, visible_cap: 4}\n")
    assert load_agent_config(EvalRunConfig, flat).env == load_agent_config(EvalRunConfig, sectioned).env
    assert load_agent_config(EvalRunConfig, flat, {"env.max_turns": "5"}).env.max_turns == 5
    flat.write_text("max_turn: 3\n")
    with pytest.raises(ConfigError, match="unknown env config field\\(s\\): max_turn; known: preset, max_turns"):
        load_agent_config(EnvRunConfig, flat)


# -- the resolved config, written, loads back equal ------------------------------------------------------------------------------
@pytest.mark.parametrize("config", [
    BuildConfig(link_top_k=2, ner_labels=("PERSON",), device="cpu"),
    EvalRunConfig(eval=EvalConfig(policy="lookahead", limit=3), env=EnvConfig(max_turns=2, answer_with=False)),
    EnvRunConfig(env=EnvConfig(init_entity_reserve=0)),
    Outer(steps=4, maybe=0.5, optim=Inner(tags=("a", "b"))),
], ids=["build", "eval", "env", "toy"])
def test_a_written_config_loads_back_equal(tmp_path: Path, config) -> None:
    path = tmp_path / "resolved.yaml"
    config.save(path)
    cls = type(config)
    assert L.load(cls, path) == config
    assert cls.from_dict(config.to_dict()) == config


def test_a_written_train_config_loads_back_equal(tmp_path: Path) -> None:
    cfg = load_config(None, {"data.graph_dir": str(tmp_path / "g"), "optim.lr": "2e-6", "rollout.env": {"answer_with": False}})
    cfg.save(tmp_path / "config.yaml")
    assert load_config(tmp_path / "config.yaml") == cfg
