"""Issue 31 item 3's three learning arms as packaged configs: ``learning/outcome``, ``learning/snc`` and
``learning/free-query`` resolve by name (``harness-g train --config NAME --show-config``) and differ only in what makes
the arm (interface, constrained decoding and reply length, credit scheme): same seed, data, budget and model."""
from __future__ import annotations

from pathlib import Path

from helpers.cli_checks import run
from helpers.paths import REPO_ROOT

from harness_g.config_loader import to_dict
from harness_g.training.config import load_config
from harness_g.training.packaged import resolve_config

ARMS = ("learning/outcome", "learning/snc", "learning/free-query")


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k not in ("env", "build", "vllm"):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_the_three_arms_resolve_by_name_and_differ_only_in_the_arm(capsys):
    for name in ARMS:
        rc, out, err = run(capsys, "train", "--config", name, "--show-config")
        assert rc == 0, err
        assert "model:" in out and "lora: True" in out
    configs = {name: load_config(resolve_config(name)) for name in ARMS}
    flat = {name: _flat(to_dict(c)) for name, c in configs.items()}

    def differing(a: str, b: str) -> set[str]:
        return {k for k in flat[a] if flat[a][k] != flat[b][k]}

    assert differing("learning/outcome", "learning/snc") == {"credit.scheme"}
    assert differing("learning/outcome", "learning/free-query") == {"rollout.interface", "rollout.constrain_actions",
                                                                    "rollout.max_action_tokens"}
    snc = configs["learning/snc"]
    assert (snc.model.name, snc.model.lora, snc.preset, snc.rollout.group_size, snc.credit.scheme) == ("smollm2", True, "paper", 8, "snc")
    assert configs["learning/free-query"].credit.scheme == "outcome"
    assert Path(snc.data.build_input).is_file()  # package data, found from any directory


def test_the_arms_bound_each_training_pass():
    """A mini-batch of multi-turn T = 6 rollouts in one pass ran out of 139 GiB on an H200 (2026-12-04): every arm
    caps its passes (a memory knob: the same loss and gradients, tests/e2e/test_trainer_update_path.py)."""
    for name in ARMS:
        assert 0 < load_config(resolve_config(name)).optim.micro_batch_tokens <= 8192, name


def test_every_packaged_config_is_package_data():
    """A non-editable install ships only what pyproject's package-data globs name: a config folder they miss is
    absent there (the learning arms were, until 2026-12-04: `--config learning/outcome` failed on the GPU machine)."""
    import fnmatch
    import tomllib

    root = REPO_ROOT
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["harness_g.training"]
    configs = root / "training" / "configs"
    files = [p.relative_to(root / "training").as_posix() for p in configs.rglob("*.yaml")]
    assert files
    missing = [f for f in files if not any(fnmatch.fnmatch(f, g) and f.count("/") == g.count("/") for g in globs)]
    assert not missing, f"not in pyproject's package-data: {missing}"
