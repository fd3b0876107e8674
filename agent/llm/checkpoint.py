"""Policy checkpoints written by ``harness-g train``, loadable like Hugging Face ones.

``RUN_DIR/checkpoint-N/`` is a ``save_pretrained`` directory -- a full model (``config.json`` + safetensors) or a
LoRA adapter (``adapter_config.json`` + ``adapter_model.safetensors``) -- with its tokenizer (and chat template), plus
:data:`POLICY_FILE`: how the trainer played the policy (action/answer token caps, constrained decoding, context mode
and budget, interface, environment config, dtype, and for LoRA the base model spec). ``harness-g eval --policy
transformers --model RUN_DIR/checkpoint-N`` reads that file for every option the user does not give, so the
evaluation runs the trained policy exactly as the trainer's own greedy evaluation did.

Resume state (optimiser, scheduler, RNG, data position) lives apart, in ``RUN_DIR/checkpoints/step-N``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError

POLICY_FILE = "harness_g_policy.json"
FORMAT = 1


def policy_settings(path: str | Path) -> dict[str, Any] | None:
    """The :data:`POLICY_FILE` of a checkpoint directory, or None when ``path`` is not a harness-g checkpoint."""
    file = Path(path) / POLICY_FILE
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: unreadable policy settings ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{file}: expected a harness-g policy file of format {FORMAT}")
    return data


def write_policy_checkpoint(model: Any, tokenizer: Any, out_dir: str | Path, settings: dict[str, Any]) -> Path:
    """``save_pretrained`` of ``model`` (a PEFT model saves its adapter only) and ``tokenizer`` into ``out_dir``,
    plus :data:`POLICY_FILE` holding ``settings``. Written into a temporary sibling and renamed into place, so a
    crash never leaves half a checkpoint under the final name."""
    import shutil
    import tempfile

    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if is_adapter(tmp):
            name_adapter_base(tmp, settings)
        (tmp / POLICY_FILE).write_text(json.dumps({"format": FORMAT, **settings}, indent=2, sort_keys=True), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def name_adapter_base(ckpt: str | Path, settings: dict[str, Any]) -> str:
    """Write the LoRA base into ``ckpt/adapter_config.json``'s ``base_model_name_or_path`` (PEFT leaves it null for
    a model built in memory and names a GGUF's folder without its file), so plain
    ``peft.AutoPeftModelForCausalLM.from_pretrained(ckpt)`` loads it offline from any working directory:
    ``settings['base_model']`` through :func:`~harness_g.agent.llm.models.loadable_base` (a hub id as given; a
    local directory, e.g. a tiny-random run's ``RUN_DIR/base-model``, as an absolute path; ``smollm2`` and GGUF
    bases as their plain transformers copy in harness-g's model cache). Returns what it wrote."""
    from harness_g.agent.llm.models import loadable_base

    file = Path(ckpt) / "adapter_config.json"
    config = json.loads(file.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = loadable_base(settings["base_model"], settings.get("gguf_file"))
    file.write_text(json.dumps(config, indent=2, sort_keys=True), encoding="utf-8")
    return config["base_model_name_or_path"]


def is_adapter(path: str | Path) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def load_adapter_model(path: str | Path, dtype: Any, **kwargs: Any) -> Any:
    """Base model (from :data:`POLICY_FILE`'s ``base_model``/``gguf_file``, else the adapter's own base path) with
    the LoRA adapter of ``path`` applied (not merged, as the trainer ran it)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from harness_g.agent.llm.models import resolve_model

    settings = policy_settings(path) or {}
    base = settings.get("base_model")
    if base:
        ref = resolve_model(base, settings.get("gguf_file"))
    else:
        config = json.loads((Path(path) / "adapter_config.json").read_text(encoding="utf-8"))
        ref = resolve_model(config.get("base_model_name_or_path") or "", None)
    extra = {"gguf_file": ref.gguf_file} if ref.gguf_file else {}
    model = AutoModelForCausalLM.from_pretrained(ref.name_or_path, dtype=dtype, **extra, **kwargs)
    return PeftModel.from_pretrained(model, str(path))
