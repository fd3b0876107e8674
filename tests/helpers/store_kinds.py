"""Which graph databases store-touching tests run on, and how a test records the one it used."""
from __future__ import annotations

import pytest

#: the graph databases every store-touching test runs on (fixture params; test ids end in [falkordb]/[neo4j])
STORE_KINDS: tuple[str, ...] = ("falkordb", "neo4j")


def tag_store(request: pytest.FixtureRequest, kind: str) -> None:
    """Record which store a test ran on (conftest counts tests per store at the end of the run)."""
    if ("store", kind) not in request.node.user_properties:
        request.node.user_properties.append(("store", kind))
