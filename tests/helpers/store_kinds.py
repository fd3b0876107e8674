"""Which graph databases store-touching tests run on (fixture params; test ids end in [falkordb]/[neo4j])."""
from __future__ import annotations

#: the graph databases every store-touching test runs on
STORE_KINDS: tuple[str, ...] = ("falkordb", "neo4j")
