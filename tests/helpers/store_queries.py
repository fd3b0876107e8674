"""The named Cypher query files as text: sample parameters for running each one, and its header/body split
(shared by the query-registry unit tests and the test that runs every FalkorDB query on a real store); and the
test-only queries of ``tests/cypher/`` (no package code runs them: tests and benchmarks do, through
:func:`run_test_query`)."""
from __future__ import annotations

import re
from typing import Any, Mapping

from helpers.paths import REPO_ROOT

from harness_g.graph.stores.base import GraphStore
from harness_g.graph.stores.queries import list_queries, load_query, query_source

#: the queries only tests and benchmarks run, laid out like the package's ``cypher/`` (shared files, ``neo4j/``
#: overrides); the query-file checks, the Cypher lint and the Neo4j notification test cover them too
TEST_CYPHER = REPO_ROOT / "tests" / "cypher"
#: every query folder: (its path relative to the repository, as messages name it; the ``root`` for
#: :func:`~harness_g.graph.stores.queries.load_query`: None = the package's ``cypher/``)
QUERY_FOLDERS = (("cypher", None), ("tests/cypher", TEST_CYPHER))

#: a value for every ``$parameter`` any query file uses (so each file can be executed as written)
SAMPLE_PARAMS = {
    "ids": ["p_curie:0", "p_paris:1"], "sentence_ids": ["p_curie:0", "p_nope:9"], "paragraph_ids": ["p_curie"], "names": ["curie"], "entity_ids": ["e_curie"],
    "entity_id": "e_curie", "lookupable_only": True, "articles": True, "rows": [], "vector": [0.1] * 8, "k": 3, "dim": 8,
    "exclude": ["p_paris:1"],
    "ef_runtime": 10, "ef_construction": 50, "name": "no_such_index", "content_hash": "sample", "embedding_model": "m", "embedding_dim": 8, "loaded_at": "now", "limit": 0,
    "graph_dir": "/tmp/g", "graph_host": "h", "graph_name": "tiny", "hub_sample": 1000,
}
#: a ``$parameter`` reference in Cypher text (group 1: its name)
PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def header_and_body(text: str) -> tuple[str, str]:
    """A query file's leading ``//`` comment lines (its documentation) and the Cypher after them."""
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("//"))
    return "\n".join(lines[:n]), "\n".join(lines[n:])


def run_test_query(store: GraphStore, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows of the test-only query ``tests/cypher/[<dialect>/]<name>.cypher`` on ``store`` (dialect resolution as
    :meth:`GraphStore.query` does it for ``cypher/``)."""
    return store.query_text(load_query(name, store.dialect, TEST_CYPHER), params, what=f"test query {name!r}")


def every_query(dialect: str) -> list[tuple[str, str, str]]:
    """(name, text, file relative to the repository) of every query ``dialect`` resolves, package and test-only."""
    return [(name, load_query(name, dialect, root), f"{where}/{query_source(name, dialect, root)}")
            for where, root in QUERY_FOLDERS for name in list_queries(dialect, root)]


def query_root(name: str, dialect: str) -> Any:
    """The ``root`` of the folder that holds query ``name`` (None: the package's ``cypher/``; else TEST_CYPHER)."""
    return next(root for _, root in QUERY_FOLDERS if name in list_queries(dialect, root))


def shared_text(name: str, dialect: str = "neo4j") -> str:
    """The shared (dialect-independent) file of query ``name``, whichever folder holds it."""
    from importlib import resources

    root = query_root(name, dialect)
    folder = resources.files("harness_g.cypher") if root is None else root
    return (folder / f"{name}.cypher").read_text(encoding="utf-8")


def shared_file(name: str, dialect: str = "neo4j") -> str:
    """The repository path of :func:`shared_text`'s file (``cypher/NAME.cypher`` or ``tests/cypher/NAME.cypher``)."""
    root = query_root(name, dialect)
    return f"{next(where for where, r in QUERY_FOLDERS if r == root)}/{name}.cypher"
