"""Agent configuration: the environment (EnvConfig), evaluation runs (EvalConfig) and the files that hold them.

Defaults follow the paper's hyper-parameter table (appendix). Loading is :mod:`harness_g.config_loader`'s (the
same as build and train): ``harness-g eval --config FILE --set eval.limit=5 --set env.visible_cap=4`` reads an
:class:`EvalRunConfig` (sections ``eval`` and ``env``, as the run directory's ``config.json`` records them);
``ask``/``menu``/``browse`` read an :class:`EnvRunConfig` (section ``env``). A file with no section names is an env
file (EnvConfig fields at the top, what ``--env-config`` always took) and becomes the ``env`` section.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from harness_g.config_loader import Config, config_field, load


@dataclass(frozen=True)
class EnvConfig(Config):
    """Menu environment knobs. Changing any of them changes menus (and the cache key)."""

    CONFIG_NAME = "env config"

    max_turns: int = config_field(6, "T: decision turns per episode (invalid actions count)", ge=1)
    visible_cap: int = config_field(6, "K_s: visible sentences per step", ge=1)
    lookup_cap: int = config_field(8, "K_e: LOOKUP candidates per menu", ge=1)
    query_max_words: int = config_field(64, "cap on the environment-built lookup query concat(q, C_t), in words", ge=1)
    answer_with: bool = config_field(True, "offer ANSWER_WITH (commit visible sentences and stop)")
    answer_with_max: int = config_field(
        2, "k: the most visible sentences one ANSWER_WITH(s_1..s_k) commits (harness-g.tex l.291, l.1242); the menu "
           "offers every subset of U_t of size 1..k, so k = 2 adds C(K_s, 2) = 15 entries at K_s = 6 (k = 1: the "
           "single-sentence variant)", ge=1)
    init_global_k: int = config_field(20, "InitRetrieve: global vector top-k sentences", ge=1)
    init_paragraphs: int = config_field(4, "InitRetrieve: paragraphs expanded by the paragraph-local channel", ge=1)
    init_entity_k: int = config_field(20, "InitRetrieve: sentences kept from the question-entity channel", ge=1)
    init_entity_reserve: int = config_field(
        2, "InitRetrieve: U_0 slots reserved for question entities that the fused channels miss (each gets its best "
           "sentence, e.g. the second film of a comparison question; 0: off)", ge=0)
    rrf_k: int = config_field(60, "reciprocal rank fusion constant: score = sum 1/(rrf_k + rank)", ge=0)
    lookup_pool_cap: int = config_field(
        400, "how many of a LOOKUP's candidates, after ranking the whole pool by cosine to m_t, the text "
             "de-duplication reads (bounds work on hub entities; no channel is cut before ranking)", ge=1)
    question_ngram_max: int = config_field(6, "longest question n-gram matched against entity names", ge=1)
    article_pool: bool = config_field(
        True, "a LOOKUP's candidate pool also holds every sentence of the article e titles (through its title anchor, "
              "harness-g.tex l.987, or a 'title' synonym of one), after the paper's three channels: an article names "
              "its subject in the lead and then says 'He' or 'The film', so 'He died in London.' is otherwise in "
              "C(director) only beside a sentence that names him. And U_{t+1} always shows that article's title "
              "anchor (its first sentence, l.987: dates, nationality, occupation): when the top K_s by m_t leave it "
              "out, it takes the last slot. K_s, K_e and InitRetrieve are unchanged. false: the paper's LOOKUP "
              "exactly, the top K_s of C(e) = S(e) + S(Syn(e)) + N_SS(S(e)) by m_t (harness-g.tex l.287-291); "
              "benchmarks/results/quality.md measures both")
    question_lookups: bool = config_field(
        True, "the entities the question names (maximal, written as names: those InitRetrieve reserves U_0 slots "
              "for) stay LOOKUP targets until looked up, after those of C_t and before those of U_t: the question is "
              "part of z_t and of m_t (harness-g.tex l.273, l.287) and its entities are the first bridges. Without "
              "it, a comparison question's second film is a target only while a sentence naming it is visible, so "
              "'LOOKUP the first director, commit, then LOOKUP the second film' cannot happen. K_e and the merge "
              "rules are unchanged. false: targets come from C_t and U_t only; benchmarks/results/quality.md "
              "measures both")


@dataclass(frozen=True)
class EvalConfig(Config):
    """How ``harness-g eval`` runs (the policy's own settings and the environment's are recorded beside it)."""

    CONFIG_NAME = "eval config"

    policy: str = config_field("heuristic", "policy name (see --policy; checked against the policy registry)")
    interface: str = config_field("menu", "knowledge interface: menu | free-query | rag | naive (see agent/interfaces.py; "
                                          "checked against the interface registry)")
    limit: int | None = config_field(None, "first N (>= 1) questions only (None: all)", ge=1)
    reachability: bool = config_field(False, "also compute menu reachability per question")
    reach_budget: int = config_field(400, "menu expansions per reachability search (>= 1)", ge=1)
    max_consecutive_store_errors: int = config_field(3, "abort after this many store failures in a row (>= 1)", ge=1)
    max_consecutive_errors: int = config_field(5, "abort after this many failed questions in a row (e.g. a policy "
                                                  "server that went away), naming the last error (>= 1)", ge=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        # the registries' own one-line errors ("unknown policy 'x'; available: ..."), as --policy/--interface give
        from harness_g.agent.interfaces import interface_runner
        from harness_g.agent.policies import POLICIES

        POLICIES.get(self.policy)
        interface_runner(self.interface)


@dataclass(frozen=True)
class EnvRunConfig(Config):
    """What ``ask``, ``menu`` and ``browse`` read from ``--config``/``--set``: the environment only."""

    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "menu environment"})


@dataclass(frozen=True)
class EvalRunConfig(Config):
    """What ``harness-g eval`` reads from ``--config``/``--set``: the run's settings and its environment."""

    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "evaluation run"})
    env: EnvConfig = field(default_factory=EnvConfig, metadata={"help": "menu environment"})


def _env_file_as_section(cls: type) -> Any:
    """``prepare`` for :func:`load`: a mapping that names none of ``cls``'s sections is an env file -> ``{env: …}``."""
    sections = {f.name for f in fields(cls)}

    def prepare(data: dict[str, Any]) -> dict[str, Any]:
        return data if not data or sections & set(data) else {"env": data}

    return prepare


def load_agent_config(cls: type, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> Any:
    """An :class:`EnvRunConfig` or :class:`EvalRunConfig` from an optional YAML file (sectioned, or a flat env file)
    with dotted overrides (``env.max_turns``, ``eval.limit``) applied on top: the overrides win over the file."""
    return load(cls, path, overrides, prepare=_env_file_as_section(cls))
