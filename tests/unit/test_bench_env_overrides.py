"""The benchmarks' EnvConfig overrides (bench_quality.py --env-set, bench_env.py --env-variants): a bad override is a
one-line usage error naming it, before any graph is opened or model loaded; a good one gives the EnvConfig."""
from __future__ import annotations


import pytest
from helpers.paths import load_script

from harness_g.agent.env.config import EnvConfig


def _script(name: str):
    return load_script(f"benchmarks/{name}.py")


@pytest.mark.parametrize("argv, message", [
    (["--env-set", "nosuch=1"], "--env-set: unknown env config field(s): nosuch; known: preset, max_turns"),
    (["--env-set", "article_pool"], "--env-set: --set expects key.path=value, got 'article_pool'"),
    (["--env-set", "article_pool=maybe"], "--env-set: article_pool: expected bool"),
    (["--env-set", "answer_with_max=3"], "set ANSWER_WITH k with --answer-with-max, not --env-set answer_with_max=..."),
])
def test_bench_quality_rejects_a_bad_env_set(argv, message, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as exit_:
        _script("bench_quality").main([*argv, "--root", str(tmp_path), "--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert ": error: " in err[-1] and message in err[-1]  # argparse names the program as it was started
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("spec, message", [
    ("paper:nosuch=1", "--env-variants: unknown env config field(s): nosuch"),
    ("paper:article_pool", "--env-variants: --set expects key.path=value, got 'article_pool'"),
    ("default;paper:question_lookups=2", "--env-variants: question_lookups: expected bool"),
])
def test_bench_env_rejects_a_bad_variant(spec, message, capsys, tmp_path) -> None:
    with pytest.raises(SystemExit) as exit_:
        _script("bench_env").main(["--env-variants", spec, "--root", str(tmp_path)])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]


def test_good_overrides_give_the_env_config() -> None:
    label, cfg = _script("bench_env").env_variant("paper:article_pool=false, question_lookups=no")
    assert label == "paper" and cfg == EnvConfig(article_pool=False, question_lookups=False)
    assert _script("bench_env").env_variant("default") == ("default", EnvConfig())
    cfg, overrides = _script("common").env_config(["visible_cap=4", "article_pool=false"])
    assert cfg == EnvConfig(visible_cap=4, article_pool=False)
    assert overrides == {"visible_cap": "4", "article_pool": "false"}
