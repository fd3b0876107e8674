"""The named Cypher query files as text: sample parameters for running each one, and its header/body split
(shared by the query-registry unit tests and the test that runs every FalkorDB query on a real store)."""
from __future__ import annotations

import re

#: a value for every ``$parameter`` any query file uses (so each file can be executed as written)
SAMPLE_PARAMS = {
    "ids": ["p_curie:0", "p_paris:1"], "paragraph_ids": ["p_curie"], "names": ["curie"], "entity_ids": ["e_curie"],
    "entity_id": "e_curie", "lookupable_only": True, "articles": True, "rows": [], "vector": [0.1] * 8, "k": 3, "dim": 8,
    "ef_runtime": 10, "ef_construction": 50, "name": "no_such_index", "content_hash": "sample", "embedding_model": "m", "embedding_dim": 8, "loaded_at": "now", "limit": 0,
    "graph_dir": "/tmp/g", "graph_host": "h", "graph_name": "tiny",
}
#: a ``$parameter`` reference in Cypher text (group 1: its name)
PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def header_and_body(text: str) -> tuple[str, str]:
    """A query file's leading ``//`` comment lines (its documentation) and the Cypher after them."""
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("//"))
    return "\n".join(lines[:n]), "\n".join(lines[n:])
