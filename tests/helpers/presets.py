"""The paper's menu and build rules as harness-g.tex states them (written out from the paper, independently of the
preset tables they check), and configs of the extended preset's menu for tests on the session's paper-built graph.

The session graph (tests/graph_fixtures.py) is built under the paper preset (the default). A test of a menu extension
sets the extension explicitly: the environment then keeps the paper preset's label and the graph check accepts the
graph (``agent.config.check_graph_preset``); ``EnvConfig(preset="extended")`` itself would be refused there.
"""
from __future__ import annotations

from typing import Any

from harness_g.agent.env.config import ENV_EXTENSIONS, ENV_PRESETS, EnvConfig


def extended_env(**values: Any) -> EnvConfig:
    """Every menu extension at its extended-preset value, set explicitly; ``values`` win."""
    return EnvConfig(**{**{name: ENV_PRESETS["extended"][name] for name in ENV_EXTENSIONS}, **values})


#: the menu rules of harness-g.tex: Table "Hyperparameter settings" (T, K_s, K_e, ANSWER_WITH enabled), appendix
#: "Deterministic query construction and validation" (64 words), section "The Menu Environment" (C(e) alone, no
#: reserved U_0 slots, no forced anchor, LOOKUP targets from C_t and U_t, every LOOKUP ranking its whole pool) and the
#: single-sentence ANSWER_WITH of appendix "Observation format"
PAPER_ENV = {"max_turns": 6, "visible_cap": 6, "lookup_cap": 8, "query_max_words": 64, "answer_with": True,
             "answer_with_max": 1, "init_entity_reserve": 0, "article_pool": False, "anchor_slot": False,
             "question_lookups": False, "lookup_index_top_m": 0}
#: the build rules of appendix "Graph construction" and "Splits and corpus preprocessing"
PAPER_BUILD = {"ner_labels": ("PERSON", "ORG", "GPE", "LOC", "WORK_OF_ART", "EVENT", "DATE", "NORP", "FAC"),
               "chunk_tokens": 1200, "chunk_overlap": 100, "link_top_k": 5, "link_min_cosine": 0.80,
               "title_mentions": False, "spelling_links": False, "join_fragments": False, "person_alias_merge": False}
