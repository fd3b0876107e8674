"""The files that hold the agent's configs: the environment's (:class:`~harness_g.agent.env.config.EnvConfig`, with
its presets) and an evaluation run's (:class:`~harness_g.agent.eval.config.EvalConfig`), as sections of one file.

Loading is :mod:`harness_g.config_loader`'s (the
same as build and train): ``harness-g eval --config FILE --set eval.limit=5 --set env.visible_cap=4`` reads an
:class:`EvalRunConfig` (sections ``eval`` and ``env``, as the run directory's ``config.json`` records them);
``ask``/``menu``/``browse`` read an :class:`EnvRunConfig` (section ``env``). A file with no section names is an env
file (EnvConfig fields at the top, what ``--env-config`` always took) and becomes the ``env`` section.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.config import EvalConfig
from harness_g.config_loader import Config, load


@dataclass(frozen=True)
class EnvRunConfig(Config):
    """What ``ask``, ``menu`` and ``browse`` read from ``--config``/``--set``: the environment only."""

    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "menu environment"})


@dataclass(frozen=True)
class EvalRunConfig(Config):
    """What ``harness-g eval`` reads from ``--config``/``--set``: the run's settings and its environment."""

    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "evaluation run"})
    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "menu environment"})


def _env_file_as_section(cls: type) -> Any:
    """``prepare`` for :func:`load`: a mapping that names none of ``cls``'s sections is an env file -> ``{env: …}``;
    a sectioned file's top-level ``preset:`` is the env section's (the only section with presets)."""
    sections = {f.name for f in fields(cls)}

    def prepare(data: dict[str, Any]) -> dict[str, Any]:
        if not data or not sections & set(data):
            return {"env": data} if data else data
        if "preset" in data:
            from harness_g.errors import ConfigError

            env = dict(data.get("env") or {})
            if "preset" in env and env["preset"] != data["preset"]:
                raise ConfigError(f"preset {data['preset']!r} and env.preset {env['preset']!r} disagree: give one")
            data = {**{k: v for k, v in data.items() if k != "preset"}, "env": {**env, "preset": data["preset"]}}
        return data

    return prepare


def load_agent_config(cls: type, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None, *,
                      preset: str | None = None) -> Any:
    """An :class:`EnvRunConfig` or :class:`EvalRunConfig` from an optional YAML file (sectioned, or a flat env file)
    with dotted overrides (``env.max_turns``, ``eval.limit``) applied on top: the overrides win over the file.
    ``preset``: the ``--preset`` flag, a shortcut for ``env.preset`` (an explicit ``env.preset`` override wins)."""
    if preset is not None:
        overrides = {"env.preset": preset, **(overrides or {})}
    return load(cls, path, overrides, prepare=_env_file_as_section(cls))
