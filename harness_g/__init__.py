"""harness-g: graph-structured menu environment for RL search agents.

Subpackages: ``harness_g.graph`` (readers, text processing, artifact, stores),
``harness_g.cypher`` (named queries), ``harness_g.agent`` (menu environment, policies,
evaluation), ``harness_g.training`` (GRPO + SNC).
"""
__version__ = "0.1.0"
