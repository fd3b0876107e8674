"""A 3-document JSON Lines corpus for build and reader tests (people, places; spaCy finds entities in it)."""
from __future__ import annotations

import json
from pathlib import Path

#: the corpus: JSON Lines records with ``id``, ``title`` and ``text``
DOCS = [
    {"id": "alice", "title": "Alice Smith", "text": "Alice Smith is a chemist from London. She met Bob Jones in Paris in 2001."},
    {"id": "bob", "title": "Bob Jones", "text": "Bob Jones is a painter. He lives in Berlin with his sister Carol Jones."},
    {"id": "paris", "title": "Paris", "text": "Paris is the capital of France. The Louvre is a museum in Paris."},
]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    """``docs`` as JSON Lines at ``path`` (UTF-8, one record a line); returns ``path``."""
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path
