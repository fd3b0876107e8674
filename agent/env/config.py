"""The menu environment's configuration: :class:`EnvConfig` and its presets (:data:`ENV_PRESETS`).

The menu rules come from a preset (``paper`` by default = harness-g.tex's section "The Menu Environment" and Table
"Hyperparameter settings" exactly, ``extended`` = the project's menu extensions on top, :data:`ENV_EXTENSIONS`); a
value given explicitly beats the preset. Files and ``--set`` overrides are read by :mod:`harness_g.agent.config`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness_g.config_loader import FROM_PRESET, Config, config_field, preset_field
from harness_g.errors import ConfigError

#: the environment's extensions: fields whose paper and extended values differ (README "Presets and extensions")
ENV_EXTENSIONS = ("article_pool", "anchor_slot", "question_lookups", "answer_with_max", "init_entity_reserve")
_PAPER_ENV = {"max_turns": 6, "visible_cap": 6, "lookup_cap": 8, "query_max_words": 64, "answer_with": True,
              "answer_with_max": 1, "init_entity_reserve": 0, "article_pool": False, "anchor_slot": False,
              "question_lookups": False, "lookup_index_top_m": 0}
#: the environment presets (harness_g.config_loader.PRESETS): paper = Table "Hyperparameter settings" (T, K_s, K_e,
#: ANSWER_WITH enabled), appendix "Deterministic query construction and validation" (64-word query) and section
#: "The Menu Environment" (C(e), U_0, the menu); extended = the same caps with every menu extension on
ENV_PRESETS = {"paper": _PAPER_ENV, "extended": {**_PAPER_ENV, "answer_with_max": 2, "init_entity_reserve": 2,
                                                  "article_pool": True, "anchor_slot": True, "question_lookups": True}}


@dataclass(frozen=True)
class EnvConfig(Config):
    """Menu environment knobs. Changing any of them changes menus (and the cache key). The fields marked
    FROM_PRESET take the row of ``preset`` in :data:`ENV_PRESETS` unless given."""

    CONFIG_NAME = "env config"
    PRESETS = ENV_PRESETS

    preset: str = preset_field(
        "which menu rules fill the fields marked [preset ...]: paper (default) = Harness-G §3.3 'The Menu "
        "Environment' and Table 'Hyperparameter settings' exactly; extended = the five menu extensions on (README "
        "'Presets and extensions'); a graph built under the other preset is refused")
    max_turns: int = config_field(FROM_PRESET, "T: decision turns per episode (invalid actions count; Table "
                                               "'Hyperparameter settings': 6)", ge=1)
    visible_cap: int = config_field(FROM_PRESET, "K_s: visible sentences per step (Table 'Hyperparameter settings': "
                                                 "6)", ge=1)
    lookup_cap: int = config_field(FROM_PRESET, "K_e: LOOKUP candidates per menu (Table 'Hyperparameter settings': "
                                                "8)", ge=1)
    query_max_words: int = config_field(
        FROM_PRESET, "cap on the environment-built lookup query concat(q, C_t), in words (appendix 'Deterministic "
                     "query construction and validation': 64)", ge=1)
    answer_with: bool = config_field(FROM_PRESET, "offer ANSWER_WITH (commit visible sentences and stop; Table "
                                                  "'Hyperparameter settings': enabled)")
    answer_with_max: int = config_field(
        FROM_PRESET, "k: the most visible sentences one ANSWER_WITH(s_1..s_k) commits, the menu offering every "
                     "subset of U_t of size 1..k (appendix 'Action inventory'). Paper: k = 1 (the menu of appendix "
                     "'Observation format'); extended: k = 2", ge=1)
    init_global_k: int = config_field(20, "InitRetrieve (Harness-G §3.3): global vector top-k sentences", ge=1)
    init_paragraphs: int = config_field(4, "InitRetrieve (Harness-G §3.3): paragraphs expanded by the "
                                           "paragraph-local channel", ge=1)
    init_entity_k: int = config_field(20, "InitRetrieve (Harness-G §3.3): sentences kept from the "
                                          "question-entity channel", ge=1)
    init_entity_reserve: int = config_field(
        FROM_PRESET, "extension: InitRetrieve's U_0 slots reserved for question entities that the fused channels "
                     "miss (each gets its best sentence, e.g. the second film of a comparison question); 0 (paper): "
                     "U_0 is the rank fusion of the three channels alone (section 'The Menu Environment')", ge=0)
    rrf_k: int = config_field(60, "reciprocal rank fusion constant of InitRetrieve's rank fusion "
                                  "(Harness-G §3.3): score = sum 1/(rrf_k + rank)", ge=0)
    lookup_pool_cap: int = config_field(
        400, "how many of a LOOKUP's candidates, after ranking the whole pool by cosine to m_t, the text "
             "de-duplication reads (bounds work on hub entities; no channel is cut before ranking)", ge=1)
    question_ngram_max: int = config_field(6, "longest question n-gram matched against entity names", ge=1)
    article_pool: bool = config_field(
        FROM_PRESET, "extension: a LOOKUP's candidate pool also holds every sentence of the article e titles, after "
                     "the paper's three channels. false (paper): the top K_s of C(e) = S(e) + S(Syn(e)) + N_SS(S(e)) "
                     "by m_t (Harness-G §3.3, the equation of C(e))")
    anchor_slot: bool = config_field(
        FROM_PRESET, "extension: a LOOKUP of an entity that titles an article always shows that article's title "
                     "anchor (its first sentence), in the last of the K_s slots when the top K_s by m_t left it out. "
                     "false (paper): U_{t+1} is the top K_s by m_t alone (Harness-G §3.3)")
    question_lookups: bool = config_field(
        FROM_PRESET, "extension: the entities the question names stay LOOKUP targets until looked up, after those "
                     "of C_t and before those of U_t. false (paper): targets are the bridge (C_t) and frontier (U_t) "
                     "entities (appendix 'Observation format'), the question entering through m_t only")
    lookup_index_top_m: int = config_field(
        FROM_PRESET, "execution switch: LOOKUP and InitRetrieve's entity channel rank the pool sentences among the "
                     "vector index's top M, reading whole pools only when those cannot decide (the paper's result "
                     "only if the HNSW top M is exact, which it was not on a 100x replica). 0 (paper): every pool "
                     "C(e) is read whole (Harness-G §3.3)", ge=0)

    lookup_store_rank_min: int = config_field(
        0, "execution switch: LOOKUPs of entities with at least this many mentions rank their pool C(e) by cosine "
           "to m_t inside the store, which returns only the top lookup_pool_cap (the paper's result up to float "
           "rounding; cost still linear in the pool). 0: every pool is read whole", ge=0)
    lookup_hub_sample: int = config_field(
        0, "scale switch, changes hub results: N reads a hub's stored sample of N sentences in place of S(e) in every "
           "pool C(e), bounding LOOKUP cost (the store needs samples of size N, 1000 by default; with "
           "lookup_index_top_m the index decides first). 0 (paper): S(e) whole (Harness-G §3.3)", ge=0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.lookup_store_rank_min and (self.article_pool or self.anchor_slot):
            on = " and ".join(n for n in ("article_pool", "anchor_slot") if getattr(self, n))
            raise ConfigError(f"lookup_store_rank_min={self.lookup_store_rank_min} ranks the paper's pool C(e) only, "
                              f"not {on}: set lookup_store_rank_min=0, or {on} false")
        if self.lookup_hub_sample:
            on = [n for n in ("article_pool", "anchor_slot", "lookup_store_rank_min") if getattr(self, n)]
            if on:
                raise ConfigError(f"lookup_hub_sample={self.lookup_hub_sample} samples the paper's pool C(e) and reads "
                                  f"it whole; it does not combine with {' and '.join(on)}: set lookup_hub_sample=0, or "
                                  f"{' and '.join(on)} off")
        if self.lookup_index_top_m and (self.article_pool or self.anchor_slot):
            on = " and ".join(n for n in ("article_pool", "anchor_slot") if getattr(self, n))
            raise ConfigError(f"lookup_index_top_m={self.lookup_index_top_m} serves the paper's pool C(e) only, not "
                              f"{on}: set lookup_index_top_m=0, or {on} false")


def check_graph_preset(manifest: Mapping[str, Any], config: EnvConfig, graph: str = "graph") -> None:
    """ConfigError (one line) when the graph whose ``manifest.json`` is ``manifest`` was built under a preset whose
    build rules differ from those of ``config.preset`` (:func:`harness_g.graph.config.preset_mismatch`). The menu
    extensions need no build rule of their own (title anchors and synonyms are the paper's); the check keeps a run
    from silently mixing a graph of one preset with an environment of the other."""
    from harness_g.graph.config import preset_mismatch

    why = preset_mismatch(manifest, config.preset)
    if why:
        raise ConfigError(f"{graph}: {why}")
