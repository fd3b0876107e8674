"""Every Cypher text harness-g sends to Neo4j, and every Cypher example in the READMEs, checked by Neo4j's
own parser and semantic analysis (npm ``@neo4j-cypher/language-support``, Cypher 5): no errors and no
deprecation warnings.

Checked: each query of ``list_queries("neo4j")`` after dialect resolution (``load_query(name, "neo4j")``;
a multi-statement file such as ``schema`` statement by statement, as the store sends it), the test-only queries of
``tests/cypher/`` likewise (``helpers.store_queries.every_query``), the ```cypher
blocks of README.md and docker/README.md (Browser examples, so Browser ``:param`` commands are allowed),
and the query argument of every ``harness-g cypher GRAPH "<query>"`` command line there. The FalkorDB
overrides (``cypher/falkordb/``) are another dialect and are not checked.

The linter is tools/cypher-lint/lint.mjs, run once (one Node process) for every text of this module,
controls included; ``bash tools/cypher-lint/setup.sh`` installs it.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO_ROOT as REPO
from helpers.store_queries import every_query, query_root, shared_file, shared_text

from harness_g.graph.stores.queries import list_queries, query_source, split_statements

LINT_DIR = REPO / "tools" / "cypher-lint"
SETUP_HINT = "run `bash tools/cypher-lint/setup.sh`"
READMES = ("README.md", "docker/README.md")
CYPHER_BLOCK = re.compile(r"^```cypher[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# harness-g cypher GRAPH "query" | 'query'  (the query is the second argument, shell-quoted; `\` continues lines)
CLI_QUERY = re.compile(r"""harness-g(?:\s|\\\n)+cypher(?:\s|\\\n)+[^\s\\]+(?:\s|\\\n)+("(?:[^"\\]|\\.)*"|'[^']*')""")
PLACEHOLDER = re.compile(r"^<[^<>]*>$")  # `harness-g cypher GRAPH_DIR '<query>'` in prose

#: deliberately bad texts, linted with the rest: they prove the check can fail
BROKEN = "MATCH (e:Entity {id: $id} RETURN e"  # unclosed node pattern
IMPORTING_WITH = "UNWIND $ids AS eid\nCALL {\n  WITH eid\n  MATCH (e:Entity {id: eid}) RETURN e.name AS name\n}\n" \
                 "RETURN eid, name"
#: the shared files whose CALL { } subquery Neo4j 5.23+ deprecates: the Neo4j overrides replace them
DEPRECATED_SHARED = (
    "count_nodes_by_label", "count_relationships_by_type", "lookup_candidates", "lookup_candidates_multi",
)


@dataclass(frozen=True)
class Text:
    name: str  # unique; where it comes from
    text: str
    where: str  # file the text comes from, relative to the repository
    first_line: int | None = 1  # line of `where` holding the text's first line; None: not a verbatim excerpt
    console: bool = False  # Browser commands (":param ...") allowed


class LintUnavailable(Exception):
    pass


def neo4j_query_texts() -> list[Text]:
    texts = []
    for name, text, where in every_query("neo4j"):
        statements = split_statements(text)
        if len(statements) == 1:  # the store sends the file as it is
            texts.append(Text(name, text, where))
        else:  # the store sends each statement (comments dropped): positions are the statement's
            texts += [Text(f"{name} statement {i}", s, where, first_line=None) for i, s in enumerate(statements, 1)]
    return texts


def unquote_shell(arg: str) -> str:
    """One shell word quoted as in the READMEs: '...' is literal; in "..." a backslash escapes $ ` " \\ and newline."""
    if arg.startswith("'"):
        return arg[1:-1]
    return re.sub(r'\\([$`"\\\n])', r"\1", arg[1:-1])


def readme_texts() -> list[Text]:
    texts = []
    for readme in READMES:
        content = (REPO / readme).read_text(encoding="utf-8")
        line_of = lambda pos: content.count("\n", 0, pos) + 1  # noqa: E731
        for m in CYPHER_BLOCK.finditer(content):
            first = line_of(m.start(1))
            texts.append(Text(f"{readme}:{first} cypher block", m.group(1), readme, first, console=True))
        for m in CLI_QUERY.finditer(content):
            query = unquote_shell(m.group(1))
            if not PLACEHOLDER.match(query):
                line = line_of(m.start(1))
                texts.append(Text(f"{readme}:{line} harness-g cypher", query, readme, first_line=None))
    return texts


def control_texts() -> list[Text]:
    shared = [Text(f"shared {n}", shared_text(n), shared_file(n)) for n in DEPRECATED_SHARED]
    here = "tests/e2e/test_cypher_lint.py"
    return [Text("control broken", BROKEN, here, None), Text("control importing WITH", IMPORTING_WITH, here, None), *shared]


def run_lint(texts: list[Text], lint_dir: Path = LINT_DIR) -> dict[str, list[dict[str, Any]]]:
    """name -> diagnostics, from one run of lint.mjs over every text."""
    if not (lint_dir / "node_modules" / "@neo4j-cypher" / "language-support").is_dir():
        raise LintUnavailable(f"the Cypher linter is not installed in {lint_dir}/node_modules: {SETUP_HINT}")
    node = shutil.which("node")
    if node is None:
        raise LintUnavailable(f"node is not on PATH (the Cypher linter needs Node.js >= 18.18.2); then {SETUP_HINT}")
    payload = [{"name": t.name, "text": t.text, "consoleCommands": t.console} for t in texts]
    proc = subprocess.run([node, str(lint_dir / "lint.mjs")], input=json.dumps(payload), capture_output=True,
                          text=True, timeout=180)
    if proc.returncode != 0:
        raise LintUnavailable(f"lint.mjs exited {proc.returncode}: {proc.stderr.strip()[-2000:]}; {SETUP_HINT}")
    results = json.loads(proc.stdout)
    assert [r["name"] for r in results] == [t.name for t in texts]
    return {r["name"]: r["diagnostics"] for r in results}


@pytest.fixture(scope="module")
def lint() -> dict[str, list[dict[str, Any]]]:
    texts = neo4j_query_texts() + readme_texts() + control_texts()
    assert len({t.name for t in texts}) == len(texts), "text names must be unique"
    try:
        return run_lint(texts)
    except LintUnavailable as exc:
        unavailable = str(exc)
    pytest.fail(unavailable, pytrace=False)  # a failure, not a skip: CI must install the linter


def problems(texts: list[Text], lint: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every error and deprecation, as 'file:line:column: [name] error|deprecation: message'."""
    found = []
    for t in texts:
        for d in lint[t.name]:
            if d["severity"] == "error" or d["deprecation"]:
                kind = "deprecation" if d["deprecation"] else d["severity"]
                at = (f"{t.where}:{t.first_line + d['line'] - 1}:{d['column']}" if t.first_line is not None
                      else f"{t.where} (line {d['line']}, column {d['column']} of the text)")
                found.append(f"{at}: [{t.name}] {kind}: {d['message']}")
    return found


def test_neo4j_queries_have_no_errors_or_deprecations(lint: dict[str, list[dict[str, Any]]]) -> None:
    found = problems(neo4j_query_texts(), lint)
    assert not found, "Neo4j's Cypher analyser rejects queries the Neo4j store sends:\n" + "\n".join(found)


def test_readme_cypher_has_no_errors_or_deprecations(lint: dict[str, list[dict[str, Any]]]) -> None:
    found = problems(readme_texts(), lint)
    assert not found, "Neo4j's Cypher analyser rejects README examples:\n" + "\n".join(found)


def test_every_neo4j_query_and_readme_example_is_collected() -> None:
    queries = neo4j_query_texts()
    assert {t.name.split(" statement ")[0] for t in queries} == {name for name, _, _ in every_query("neo4j")}
    assert set(list_queries("neo4j")) < {name for name, _, _ in every_query("neo4j")}  # the test-only ones too
    assert len([t for t in queries if t.name.startswith("schema statement ")]) == 5
    # dialect resolution: the Neo4j overrides are linted, the FalkorDB ones never
    by_name = {t.name: t for t in queries}
    assert by_name["vector_top_k"].where == "cypher/neo4j/vector_top_k.cypher"
    assert by_name["lookup_candidates_multi"].where == "cypher/neo4j/lookup_candidates_multi.cypher"
    assert by_name["lookup_candidates"].where == "tests/cypher/neo4j/lookup_candidates.cypher"  # test-only
    assert not [t for t in queries if "falkordb" in t.where or "db.idx." in t.text]

    readme = readme_texts()
    blocks = [t for t in readme if t.name.endswith("cypher block")]
    assert blocks and all(t.console for t in blocks), "the READMEs show ```cypher blocks"
    cli = [t for t in readme if t.name.endswith("harness-g cypher")]
    assert cli, "the READMEs show a `harness-g cypher GRAPH \"...\"` example"
    assert not [t.text for t in cli if "\\$" in t.text], "shell escapes (\\$n) must be undone"
    assert CLI_QUERY.search("harness-g cypher g \\\n  'RETURN 1'").group(1) == "'RETURN 1'"
    assert unquote_shell(r'"MATCH (e {name: \$n}) RETURN \"x\", e"') == 'MATCH (e {name: $n}) RETURN "x", e'
    assert unquote_shell("'RETURN \\$n'") == "RETURN \\$n"


def test_a_broken_query_is_reported(lint: dict[str, list[dict[str, Any]]]) -> None:
    errors = [d for d in lint["control broken"] if d["severity"] == "error"]
    assert errors and errors[0]["line"] == 1 and "Invalid input" in errors[0]["message"]
    assert problems([t for t in control_texts() if t.name == "control broken"], lint)


def test_the_importing_with_subquery_is_reported_as_deprecated(lint: dict[str, list[dict[str, Any]]]) -> None:
    """CALL { WITH x ... } (deprecated since Neo4j 5.23) is flagged; so are the shared files' CALL { } forms
    that the Neo4j overrides replace (FalkorDB still needs them)."""
    deprecations = [d for d in lint["control importing WITH"] if d["deprecation"]]
    assert [(d["line"], d["severity"]) for d in deprecations] == [(2, "warning")]
    assert "variable scope clause" in deprecations[0]["message"] and "CALL (eid)" in deprecations[0]["message"]
    for name in DEPRECATED_SHARED:
        assert [d for d in lint[f"shared {name}"] if d["deprecation"]], name
        assert query_source(name, "neo4j", query_root(name, "neo4j")) == f"neo4j/{name}.cypher", name


def test_missing_linter_fails_with_the_setup_command(tmp_path: Path) -> None:
    with pytest.raises(LintUnavailable, match=re.escape(SETUP_HINT)):
        run_lint([Text("q", "RETURN 1", "test")], lint_dir=tmp_path)
