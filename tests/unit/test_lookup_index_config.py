"""``EnvConfig.lookup_index_top_m`` (issue 35 item 5): off under both presets (the paper ranks the whole pool C(e)),
settable through every config route, recorded with its source, part of the LOOKUP result cache key, and refused in
one line where it cannot apply (the extensions' article pool and anchor slot, whose pools it does not read). Pure: no
graph, no database (the results themselves: tests/e2e/test_lookup_index.py)."""
from __future__ import annotations

import pytest

from harness_g.agent.config import EvalRunConfig, load_agent_config
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.menu import lookup_rules
from harness_g.cli import main
from harness_g.errors import ConfigError


def test_off_under_both_presets_and_on_when_set() -> None:
    assert EnvConfig().lookup_index_top_m == 0 and EnvConfig(preset="extended").lookup_index_top_m == 0
    run = load_agent_config(EvalRunConfig, overrides={"env.lookup_index_top_m": "500"})
    assert run.env.lookup_index_top_m == 500 and run.env.preset == "paper"
    assert lookup_rules(run.env) != lookup_rules(EnvConfig())  # cached LOOKUP results are kept apart


@pytest.mark.parametrize("values, named", [
    ({"preset": "extended"}, "article_pool and anchor_slot"),
    ({"article_pool": True}, "article_pool"),
    ({"anchor_slot": True}, "anchor_slot"),
])
def test_refused_with_the_pools_it_does_not_read(values: dict, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        EnvConfig(lookup_index_top_m=200, **values)
    message = str(info.value)
    assert f"not {named}:" in message and "lookup_index_top_m=0" in message and "\n" not in message
    assert EnvConfig(lookup_index_top_m=0, **values).lookup_index_top_m == 0  # off: accepted as before


def test_a_negative_m_is_refused() -> None:
    with pytest.raises(ConfigError, match="lookup_index_top_m: must be >= 0"):
        EnvConfig(lookup_index_top_m=-1)


def test_show_config_names_its_source(capsys) -> None:
    assert main(["eval", "--show-config"]) == 0
    assert "lookup_index_top_m: 0  # [preset paper]" in capsys.readouterr().out
    assert main(["eval", "--show-config", "--set", "env.lookup_index_top_m=300"]) == 0
    assert "lookup_index_top_m: 300  # [set]" in capsys.readouterr().out
