"""Evaluation: the episode loop (``runner``), the knowledge interfaces (``interfaces``), resumable runs (``run``),
metrics, menu reachability, the LLM judge, the HTML report (``report/``) and ``harness-g browse`` (``browse``).

May import :mod:`harness_g.agent.env`, :mod:`harness_g.agent.policies` and :mod:`harness_g.agent.llm`; nothing in
those imports it (``tests/e2e/test_layering.py``).
"""
