"""``harness-g eval --config FILE --policy transformers --model RUN_DIR/checkpoint-N``: the checkpoint is played in the
environment it was trained in (its ``harness_g_policy.json``), and a --config whose environment contradicts it is
refused with one line listing every difference (the old eval ignored the checkpoint's environment whenever --config
was given). A real checkpoint of the tiny random model, written as the trainer writes it; ``--show-config`` shows
what eval would run without loading the model."""
from __future__ import annotations

import pytest
from helpers.cli_checks import assert_one_line_error, run


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A trainer checkpoint whose environment differs from the defaults (K_s 3, K_e 5, T 4)."""
    from harness_g.agent.llm.checkpoint import write_policy_checkpoint
    from harness_g.training.checkpoint import policy_settings
    from harness_g.training.config import ModelConfig, load_config
    from harness_g.training.modeling import load_policy, load_tokenizer

    cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": "unused", "rollout.max_turns": 4,
                             "rollout.env": {"visible_cap": 3, "lookup_cap": 5}})
    env = cfg.rollout.env.to_dict()
    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    model = load_policy(ModelConfig(name="tiny-random"), tok, seed=0)
    out = tmp_path_factory.mktemp("run") / "checkpoint-2"
    return write_policy_checkpoint(model, tok, out, policy_settings(cfg, 2, 512, env))


def _show(capsys, ckpt, *extra) -> tuple[int, dict[str, str], str]:
    rc, out, err = run(capsys, "eval", "--show-config", "--policy", "transformers", "--model", ckpt, *extra)
    shown = {}
    section = ""
    for line in out.splitlines():
        body = line.split("  # ", 1)[0].rstrip()
        key, _, value = body.strip().partition(":")
        if not line.startswith(" "):
            section = key
        if value.strip():
            shown[f"{section}.{key}"] = value.strip()
    return rc, shown, err


def test_a_config_that_contradicts_the_checkpoints_environment_is_refused(tmp_path, capsys, checkpoint):
    rc, shown, err = _show(capsys, checkpoint)  # no --config: the checkpoint's environment
    assert rc == 0, err
    assert (shown["env.visible_cap"], shown["env.lookup_cap"], shown["env.max_turns"]) == ("3", "5", "4")
    sectioned = tmp_path / "sectioned.yaml"
    sectioned.write_text("env: {visible_cap: 4, lookup_cap: 5}\neval: {limit: 3}\n")
    rc, _, err = _show(capsys, checkpoint, "--config", sectioned)
    assert_one_line_error(rc, err, f"{sectioned}: env settings differ from those {checkpoint} was trained with "
                                   "(harness_g_policy.json): visible_cap 4 (checkpoint 3); drop them from the file")
    assert "lookup_cap" not in err  # the file agrees with the checkpoint there
    flat = tmp_path / "flat.yaml"  # a file of EnvConfig fields alone is the env section
    flat.write_text("visible_cap: 6\nmax_turns: 6\n")
    rc, _, err = _show(capsys, checkpoint, "--config", flat)
    assert_one_line_error(rc, err, "visible_cap 6 (checkpoint 3)", "max_turns 6 (checkpoint 4)")


def test_a_config_that_leaves_the_environment_alone_plays_the_checkpoints(tmp_path, capsys, checkpoint):
    """The old eval played such a file in the default environment (K_s 6, K_e 8, T 6): not the one trained in."""
    only_eval = tmp_path / "eval.yaml"
    only_eval.write_text("eval: {limit: 3}\nenv: {lookup_cap: 5}\n")
    rc, shown, err = _show(capsys, checkpoint, "--config", only_eval)
    assert rc == 0, err
    assert (shown["env.visible_cap"], shown["env.lookup_cap"], shown["env.max_turns"], shown["eval.limit"]) == ("3", "5", "4", "3")
    # a flag or --set decides on purpose, over the file and the checkpoint alike
    contra = tmp_path / "contra.yaml"
    contra.write_text("env: {visible_cap: 4}\n")
    rc, shown, err = _show(capsys, checkpoint, "--config", contra, "--set", "env.visible_cap=5", "--max-turns", "2")
    assert rc == 0, err
    assert (shown["env.visible_cap"], shown["env.max_turns"]) == ("5", "2")


@pytest.fixture(scope="module")
def free_query_checkpoint(tmp_path_factory):
    """A trainer checkpoint of the free-query arm (``rollout.interface=free-query``)."""
    from harness_g.agent.llm.checkpoint import write_policy_checkpoint
    from harness_g.training.checkpoint import policy_settings
    from harness_g.training.config import ModelConfig, load_config
    from harness_g.training.modeling import load_policy, load_tokenizer

    cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": "unused", "rollout.interface": "free-query", "credit.scheme": "outcome",
                             "rollout.max_turns": 2})
    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    model = load_policy(ModelConfig(name="tiny-random"), tok, seed=0)
    out = tmp_path_factory.mktemp("fq") / "checkpoint-1"
    settings = policy_settings(cfg, 1, 2048, cfg.rollout.env.to_dict())
    assert settings["interface"] == "free-query"
    return write_policy_checkpoint(model, tok, out, settings)


def _interface(shown: dict[str, str]) -> str:
    return shown["eval.interface"].strip("'")  # YAML quotes a name with a dash


def test_a_checkpoint_is_evaluated_on_the_interface_it_was_trained_on(tmp_path, capsys, checkpoint,
                                                                       free_query_checkpoint):
    """The old eval played a free-query checkpoint on the menu (eval.interface's default) without a word."""
    rc, shown, err = _show(capsys, free_query_checkpoint)
    assert rc == 0, err
    assert _interface(shown) == "free-query"
    rc, shown, err = _show(capsys, checkpoint)  # a menu checkpoint stays on the menu
    assert rc == 0 and _interface(shown) == "menu", err
    # a flag or --set decides on purpose
    for flag in (("--interface", "menu"), ("--set", "eval.interface=menu")):
        rc, shown, err = _show(capsys, free_query_checkpoint, *flag)
        assert rc == 0 and _interface(shown) == "menu", err
    # a file naming another interface is refused in one line; one naming the same is played
    other = tmp_path / "other.yaml"
    other.write_text("eval: {interface: menu, limit: 2}\n")
    rc, _, err = _show(capsys, free_query_checkpoint, "--config", other)
    assert_one_line_error(rc, err, f"{other}: eval.interface 'menu' differs from the interface "
                                   f"{free_query_checkpoint} was trained with ('free-query', harness_g_policy.json)")
    same = tmp_path / "same.yaml"
    same.write_text("eval: {interface: free-query, limit: 2}\n")
    rc, shown, err = _show(capsys, free_query_checkpoint, "--config", same)
    assert rc == 0 and (_interface(shown), shown["eval.limit"]) == ("free-query", "2"), err


def test_ask_plays_a_checkpoint_on_its_own_interface(capsys, hotpot_graph_dir, free_query_checkpoint):
    import json

    args = ("ask", str(hotpot_graph_dir), "Who directed the film?", "--policy", "transformers", "--model",
            str(free_query_checkpoint), "--json")
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    assert json.loads(out)["meta"]["interface"] == "free-query"
    rc, out, err = run(capsys, *args, "--interface", "menu")
    assert rc == 0, err
    assert json.loads(out)["meta"]["interface"] == "menu"
