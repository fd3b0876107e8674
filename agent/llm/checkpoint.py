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
    if settings.get("init_adapter"):  # a warm-started run (model.init_adapter): its base is the merged warm start
        model = merge_adapter(model, settings["init_adapter"], base_model=base)
    return PeftModel.from_pretrained(model, str(path))


def _spec(name: str) -> str:
    """A model spec comparable across working directories: a local directory as its resolved path."""
    return str(Path(name).resolve()) if Path(name).is_dir() else name


def merge_adapter(model: Any, adapter: str | Path, *, base_model: str | None = None) -> Any:
    """``model`` with the LoRA adapter directory ``adapter`` merged into its weights (``model.init_adapter``: a warm
    start such as ``harness-g sft``'s output). ``base_model``: the spec ``model`` was loaded from; when the adapter's
    :data:`POLICY_FILE` names another base, a one-line ConfigError (its deltas belong to other weights). An adapter
    that is itself warm-started (its file names an ``init_adapter``) has that one merged first."""
    from peft import PeftModel

    path = Path(adapter)
    if not is_adapter(path):
        raise ConfigError(f"model.init_adapter {str(path)!r}: not a LoRA adapter directory (no adapter_config.json)")
    settings = policy_settings(path) or {}
    # base_model: the spec it was trained over; base_source: what a saved base (RUN_DIR/base-model) was built from
    names = {_spec(n) for n in (settings.get("base_model"), settings.get("base_source")) if n}
    if base_model is not None and names and _spec(base_model) not in names:
        raise ConfigError(f"model.init_adapter {str(path)!r} was trained on base {settings['base_model']!r}, not "
                          f"{base_model!r}")
    if settings.get("init_adapter"):
        model = merge_adapter(model, settings["init_adapter"], base_model=base_model)
    _untie_adapted_head(model, path)
    return PeftModel.from_pretrained(model, str(path)).merge_and_unload()


def _untie_adapted_head(model: Any, adapter: Path) -> None:
    """Give ``model`` its own output head when its head and input embeddings share one tensor (SmolLM2) and the
    adapter adapts either: merging a delta into a shared tensor would change the other layer too (PEFT issue
    2777), while the adapter was trained with the delta on that one layer only."""
    import torch

    targets = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8")).get("target_modules") or []
    targets = [targets] if isinstance(targets, str) else list(targets)
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    if head is None or embed is None or head.weight is not embed.weight:
        return
    if any(t in ("lm_head", "embed_tokens") or t.endswith((".lm_head", ".embed_tokens")) for t in targets):
        head.weight = torch.nn.Parameter(head.weight.detach().clone(), requires_grad=head.weight.requires_grad)
        model.config.tie_word_embeddings = False
