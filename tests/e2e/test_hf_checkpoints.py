"""A checkpoint the trainer wrote loads with plain transformers / PEFT, offline, from any working directory: the
README's own loading code (issue 32 item 1), run in a fresh interpreter with ``HF_HUB_OFFLINE=1``, gives the live
policy's logits exactly, for full weights and for a LoRA adapter (whose ``adapter_config.json`` names its base)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers.readme_code import python_block
from helpers.tiny_checkpoint import saved_tiny_checkpoint

README_CKPT = 'Path("runs/tiny/checkpoint-4")'


def _trainer_checkpoint(tmp_path, lora: bool):
    """(trainer, RUN_DIR/checkpoint-3): :func:`helpers.tiny_checkpoint.saved_tiny_checkpoint`."""
    return saved_tiny_checkpoint(tmp_path, lora)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_plain_transformers_and_peft_load_a_trainer_checkpoint_offline(tmp_path, lora):
    trainer, ckpt = _trainer_checkpoint(tmp_path, lora)
    if lora:
        base = json.loads((ckpt / "adapter_config.json").read_text())["base_model_name_or_path"]
        assert base == str((tmp_path / "run" / "base-model").resolve())  # tiny-random: the saved initial weights
    code = python_block("# load a harness-g checkpoint")
    assert README_CKPT in code
    text = "Question: who wrote it?\nA0 = SELECT S0\nA1 = ANSWER"
    probe = (f"ids = tokenizer.apply_chat_template([{{'role': 'user', 'content': {text!r}}}], add_generation_prompt=True,"
             " return_tensors='pt', return_dict=True)['input_ids']\n"
             "import numpy, torch\nwith torch.no_grad():\n    logits = model(input_ids=ids).logits\n"
             f"numpy.save({str(tmp_path / 'logits.npy')!r}, logits.float().numpy())\n"
             f"numpy.save({str(tmp_path / 'ids.npy')!r}, ids.numpy())\n"
             "print(type(model).__name__)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    done = subprocess.run([sys.executable, "-c", code.replace(README_CKPT, f"Path({str(ckpt)!r})") + probe], cwd=elsewhere,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == ("PeftModelForCausalLM" if lora else "LlamaForCausalLM")
    ids = torch.from_numpy(np.load(tmp_path / "ids.npy"))
    live = trainer.accelerator.unwrap_model(trainer.model).eval()
    with torch.no_grad():
        want = live(input_ids=ids).logits.float().numpy()
    np.testing.assert_array_equal(np.load(tmp_path / "logits.npy"), want)


def test_a_lora_base_is_named_so_from_pretrained_finds_it_from_anywhere(tmp_path, monkeypatch):
    """The offline ``smollm2`` (and ``smollm2-gguf``) base is named as the absolute path of its plain transformers
    copy in harness-g's model cache, which ``from_pretrained`` loads without ``gguf_file``; a local directory given
    relative to the working directory as an absolute path; a hub id as given."""
    from harness_g.agent.llm.models import loadable_base, smollm2_dir

    (tmp_path / "models" / "mine").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert loadable_base("models/mine") == str(tmp_path.resolve() / "models" / "mine")

    copy = str(smollm2_dir().resolve())
    assert loadable_base("smollm2") == copy and loadable_base("smollm2-gguf") == copy
    assert (smollm2_dir() / "config.json").is_file()
    assert loadable_base("Qwen/Qwen2.5-3B-Instruct") == "Qwen/Qwen2.5-3B-Instruct"  # a hub id stays a hub id
