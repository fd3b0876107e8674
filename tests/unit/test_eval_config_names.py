"""``EvalConfig`` checks its policy and interface names through ``RegistryNames`` as ``TrainConfig`` does: declared
on the fields, resolved when checked, so ``agent/eval/config.py`` (and ``agent/config.py``) imports neither the policies nor the interfaces (the
import loop its ``__post_init__`` used to close at runtime is gone). Pure: no database, no model."""
from __future__ import annotations

import ast
from dataclasses import fields

import pytest
from helpers.paths import REPO_ROOT

from harness_g.agent.eval.config import EvalConfig
from harness_g.errors import ConfigError
from harness_g.registry import RegistryNames


@pytest.mark.parametrize("path", ["agent/config.py", "agent/eval/config.py"])
def test_agent_config_imports_no_policy_or_interface_module(path: str) -> None:
    tree = ast.parse((REPO_ROOT / path).read_text(encoding="utf-8"))
    named = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    named |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in named if m.startswith(("harness_g.agent.policies", "harness_g.agent.eval.interfaces"))}


def test_eval_config_declares_its_registry_names() -> None:
    choices = {f.name: f.metadata.get("choices") for f in fields(EvalConfig)}
    assert isinstance(choices["policy"], RegistryNames) and isinstance(choices["interface"], RegistryNames)
    assert {"heuristic", "lookahead", "oracle"} <= set(choices["policy"])
    assert set(choices["interface"]) == {"menu", "free-query", "rag", "naive"}


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "nope"}, r"^unknown policy 'nope'; available: heuristic, .*lookahead"),
    ({"interface": "chat"}, r"^unknown interface 'chat'; available: free-query, menu, naive, rag$"),
])
def test_eval_config_refuses_an_unknown_name_with_the_registry_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**kwargs)


def test_eval_config_accepts_registered_names_and_the_interface_alias() -> None:
    assert EvalConfig(policy="lookahead", interface="rag").interface == "rag"
    assert EvalConfig(interface="free_query").interface == "free_query"  # interface_runner's alias, as before


def test_registry_names_without_a_lookup_keep_the_config_wording() -> None:
    from harness_g.config_loader import check_value

    with pytest.raises(ConfigError, match=r"^rollout\.interface 'rag' unknown; available: free-query, menu$"):
        check_value("rollout.interface", "rag",
                    {"choices": RegistryNames("harness_g.agent.eval.interfaces:trainable_interfaces")})
