"""Every config field's help is one or two sentences naming the rule (issue 33 item 5): no citation of a line number
of the paper's .tex (readers of the paper have sections, not our copy's lines), no pointer to a results file, and
at most two sentences and 320 characters; the longer why lives in DESIGN.md "Configs"."""
from __future__ import annotations

import re
from dataclasses import fields, is_dataclass

import pytest

from harness_g.agent.config import EnvRunConfig, EvalRunConfig
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.config import EvalConfig
from harness_g.graph.config import BuildConfig
from harness_g.training.config import TrainConfig

MAX_CHARS = 320
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx)\.", re.IGNORECASE)
_LINE_CITATION = re.compile(r"\bl\.\s?\d|\blines? \d|\.tex\b", re.IGNORECASE)
_RESULTS_POINTER = re.compile(r"results/|\.md\b")


def _helps(cls: type, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted field name, help) for every field of ``cls`` and of its nested config sections."""
    out = []
    for f in fields(cls):
        out.append((prefix + f.name, f.metadata.get("help", "")))
        nested = f.default_factory() if callable(f.default_factory) else None  # type: ignore[misc]
        if is_dataclass(nested):
            out.extend(_helps(type(nested), f"{prefix}{f.name}."))
        if f.metadata.get("preset_of") is not None:
            out.extend(_helps(f.metadata["preset_of"], f"{prefix}{f.name}."))
    return out


def sentences(text: str) -> int:
    """How many sentences ``text`` holds: terminators followed by a space or the end, abbreviations and decimals
    aside; a text without a final full stop still counts its last sentence."""
    body = _ABBREVIATIONS.sub("", text.strip())
    ends = re.findall(r"[.!?](?=\s|$)", body)
    return len(ends) + (0 if body.endswith((".", "!", "?")) else 1)


ALL = sorted({item for cls in (BuildConfig, EnvConfig, EvalConfig, TrainConfig, EnvRunConfig, EvalRunConfig)
              for item in _helps(cls, cls.__name__ + ".")})


def test_the_sentence_counter_counts():
    assert sentences("one rule") == 1
    assert sentences("one rule (e.g. K_s = 6). Paper: 6") == 2
    assert sentences("a. b. c") == 3


@pytest.mark.parametrize("name,help_text", ALL, ids=[name for name, _ in ALL])
def test_config_help_is_short_and_cites_sections(name, help_text):
    assert help_text.strip(), f"{name}: no help"
    assert not _LINE_CITATION.search(help_text), f"{name}: cites a line of the .tex: {help_text!r}"
    assert not _RESULTS_POINTER.search(help_text), f"{name}: points at a results file: {help_text!r}"
    assert sentences(help_text) <= 2, f"{name}: more than two sentences: {help_text!r}"
    assert len(help_text) <= MAX_CHARS, f"{name}: {len(help_text)} characters: {help_text!r}"


def test_the_typed_sections_are_covered():
    """The nested sections count field by field: a train config's rollout.env (an EnvConfig section) and an eval
    config's llm section (PolicyConfig)."""
    names = {name for name, _ in ALL}
    assert {"TrainConfig.rollout.env.visible_cap", "TrainConfig.rollout.env.preset", "EvalConfig.llm.temperature",
            "EvalConfig.llm.api_key_env", "EvalRunConfig.eval.llm.model"} <= names
