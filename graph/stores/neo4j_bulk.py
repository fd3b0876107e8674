"""Bulk loading into Neo4j with Neo4j's own importer: ``neo4j-admin database import full`` from CSV files.

The Bolt loader (:meth:`GraphStore.load`) sends parameterised ``UNWIND $rows`` MERGE batches over a live connection.
This module instead writes the artifact as the importer's CSV files (one per label and relationship type, headers
naming ids, types and id spaces) and runs the importer *offline* into a fresh database, before the server opens it;
then, over Bolt, it creates the same constraints, GraphMeta node and vector index the Bolt loader does. The result is
the same graph: the same nodes, relationships and property values (``tests/e2e/test_neo4j_bulk.py`` compares every
one, and the menus, with a Bolt-loaded database).

Where the importer comes from: ``org.neo4j:neo4j-import-tool`` and the admin command line (``org.neo4j.cli.AdminTool``,
what ``neo4j-admin`` runs) are on Maven Central, and the local launcher's classpath already holds them (they come
with ``neo4j-harness``), so :func:`bulk_load_local` runs ``AdminTool database import full`` with that classpath and
starts :class:`LocalNeo4j` on the imported data directory (Neo4j 5.26 Community; it also accepts
``--input-type=parquet``, which harness-g does not use). A database that already exists is refused, never
overwritten (:func:`import_database`); a fresh local server holds no other graph, so the one-graph-per-database rule
of :mod:`harness_g.graph.load` holds without a ``--replace``.

Values keep the Bolt loader's types: strings quoted (so ``""`` stays an empty string and an unquoted empty field is a
missing property, like a ``SET p.x = null``), integers as ``long``, floats as ``double`` written with Python's
round-trip ``repr`` of the float32 value widened to float64 -- exactly what the Bolt loader's ``f64_param`` sends.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO

import numpy as np

from harness_g.errors import InputError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.base import meta_params
from harness_g.graph.stores.loader import check_embeddings, next_pairs, utc_now

#: the database a Neo4j Community server serves (it has one user database)
DATABASE = "neo4j"
#: rows per block when formatting a table as CSV (bounds memory: one block of row dicts at a time)
CSV_BLOCK_ROWS = 4096
#: ``AdminTool``: the class ``neo4j-admin`` runs (module neo4j-command-line, on the launcher's classpath)
ADMIN_TOOL_CLASS = "org.neo4j.cli.AdminTool"
#: JVM heap of the importer without a server config (it keeps its large structures off heap:
#: ``--max-off-heap-memory``); with one, the importer takes the server's ``heap_mb`` (:func:`import_heap_mb`)
IMPORT_HEAP_MB = 1024


@dataclass(frozen=True)
class CsvTable:
    """One importer input file: ``kind`` "nodes" or "relationships", ``name`` its label or relationship type, the
    loader stage it stands for (``rows`` per stage in :class:`BulkReport`), the artifact table its rows come from and
    its columns as ``(header field, artifact column)``; the header field carries the importer's type
    (``position:long``) or role (``id:ID(Sentence)``, ``:START_ID(Paragraph)``)."""

    kind: str
    name: str
    stage: str
    source: str
    columns: tuple[tuple[str, str], ...]


#: the graph as importer files: the same labels, types and properties the ``cypher/load_*.cypher`` queries write
CSV_TABLES: tuple[CsvTable, ...] = (
    CsvTable("nodes", "Paragraph", "paragraphs", "paragraphs",
             (("id:ID(Paragraph)", "id"), ("title", "title"), ("text", "text"), ("source", "source"))),
    CsvTable("nodes", "Sentence", "sentences", "sentences",
             (("id:ID(Sentence)", "id"), ("paragraph_id", "paragraph_id"), ("position:long", "position"),
              ("title", "title"), ("text", "text"), ("embedding:double[]", "embedding"))),
    CsvTable("nodes", "Entity", "entities", "entities",
             (("id:ID(Entity)", "id"), ("name", "name"), ("surface", "surface"), ("label", "label"),
              ("lookupable:boolean", "lookupable"), ("reject_reason", "reject_reason"), ("mentions:long", "mentions"))),
    CsvTable("relationships", "CONTAINS", "contains", "sentences",
             ((":START_ID(Paragraph)", "paragraph_id"), (":END_ID(Sentence)", "id"), ("position:long", "position"))),
    CsvTable("relationships", "NEXT", "next", "next",
             ((":START_ID(Sentence)", "src"), (":END_ID(Sentence)", "dst"))),
    CsvTable("relationships", "MENTIONS", "mentions", "mentions",
             ((":START_ID(Sentence)", "sentence_id"), (":END_ID(Entity)", "entity_id"), ("start:long", "start"),
              ("end:long", "end"), ("kind", "kind"), ("surface", "surface"))),
    CsvTable("relationships", "SYNONYM", "synonyms", "synonyms",
             ((":START_ID(Entity)", "src"), (":END_ID(Entity)", "dst"), ("kind", "kind"), ("score:double", "score"))),
)


@dataclass(frozen=True)
class ImportFiles:
    """The CSV files :func:`write_import_csvs` wrote: ``(table, path)`` in import order, rows per loader stage, and
    whether a field holds a line break (the importer then needs ``--multiline-fields=true``, which is slower)."""

    files: tuple[tuple[CsvTable, Path], ...]
    rows: dict[str, int]
    multiline: bool


@dataclass
class BulkReport:
    """What a bulk load did: rows per loader stage (as :class:`LoadReport`), seconds per step (``csv``, ``import``,
    ``start``, ``schema``, ``indexes``, ``total``)."""

    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        """Nodes plus relationships per second of the whole load (``total``: CSV, import, server start, indexes)."""
        total = self.seconds.get("total", 0.0)
        return sum(self.rows.values()) / total if total > 0 else 0.0


# -- CSV ------------------------------------------------------------------------------------------------------
def csv_field(value: Any) -> str:
    """One CSV field in the importer's dialect: None -> empty (no property), strings quoted with ``""`` escapes,
    booleans ``true``/``false``, floats as ``repr`` of the float64 (round-trips exactly), float arrays ``;``-joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, np.ndarray):
        return ";".join(map(repr, value.astype(np.float64).tolist()))
    return str(value)


def _table_rows(artifact: Artifact, table: CsvTable, embeddings: np.ndarray) -> Iterable[list[dict[str, Any]]]:
    """Row dicts of ``table`` in blocks of :data:`CSV_BLOCK_ROWS` (sentences get their ``embedding`` row)."""
    if table.source == "next":
        pairs = next_pairs(artifact)
        for start in range(0, len(pairs), CSV_BLOCK_ROWS):
            yield [{"src": s, "dst": d} for s, d in pairs[start:start + CSV_BLOCK_ROWS]]
        return
    columns = sorted({column for _, column in table.columns} - {"embedding"})
    offset = 0
    for rows in artifact.iter_rows(table.source, CSV_BLOCK_ROWS, columns=columns):
        if table.stage == "sentences":
            block = np.asarray(embeddings[offset:offset + len(rows)], dtype=np.float32)
            for row, vector in zip(rows, block):
                row["embedding"] = vector
        offset += len(rows)
        yield rows


def _write_table(out: TextIO, artifact: Artifact, table: CsvTable, embeddings: np.ndarray) -> tuple[int, bool]:
    """Write ``table``'s header and rows to ``out``; returns (rows written, whether a field held a line break)."""
    out.write(",".join(header for header, _ in table.columns) + "\n")
    count, multiline = 0, False
    for rows in _table_rows(artifact, table, embeddings):
        lines = [",".join(csv_field(row[column]) for _, column in table.columns) for row in rows]
        text = "\n".join(lines) + "\n"
        multiline = multiline or text.count("\n") != len(lines) or "\r" in text
        out.write(text)
        count += len(rows)
    return count, multiline


def write_import_csvs(artifact: Artifact, out_dir: str | Path) -> ImportFiles:
    """Write the artifact as the importer's CSV files into the existing directory ``out_dir`` (one per label and
    relationship type, named ``<stage>.csv``). The embeddings are checked (shape, finite values) first.

    Raises InputError when ``out_dir`` does not exist (nothing is created in its place).
    """
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise InputError("the import directory does not exist; create it or name another", str(out_dir))
    embeddings = check_embeddings(artifact)
    files, rows, multiline = [], {}, False
    for table in CSV_TABLES:
        path = out_dir / f"{table.stage}.csv"
        with open(path, "w", encoding="utf-8", newline="") as out:
            rows[table.stage], lines = _write_table(out, artifact, table, embeddings)
        multiline = multiline or lines
        files.append((table, path))
    return ImportFiles(tuple(files), rows, multiline)


# -- the importer ---------------------------------------------------------------------------------------------
def admin_tool_command(classpath: str, java: str | None = None, heap_mb: int = IMPORT_HEAP_MB,
                       java_options: tuple[str, ...] = ()) -> list[str]:
    """``neo4j-admin`` as a Java command over ``classpath`` (the launcher's: it holds neo4j-import-tool), with the
    extra JVM options ``java_options`` (:func:`~harness_g.graph.stores.local_neo4j.check_java_options`)."""
    java = java or shutil.which("java")
    if java is None:
        raise StoreError("the Neo4j bulk import needs `java` on PATH (a Java 17+ runtime)")
    return [java, f"-Xmx{heap_mb}m", *java_options, "-cp", classpath, ADMIN_TOOL_CLASS]


def import_heap_mb(config: Any = None) -> int:
    """The importer's JVM heap in MiB: the local server's ``heap_mb`` (``harness-g neo4j --heap-mb``, default 1024)
    when ``config`` (a :class:`LocalNeo4jConfig`) is given, else :data:`IMPORT_HEAP_MB`. The importer runs before the
    server starts, so the two heaps are never held at once."""
    return int(config.heap_mb) if config is not None else IMPORT_HEAP_MB


def importer_command(classpath: str, config: Any = None, java: str | None = None) -> list[str]:
    """The ``neo4j-admin`` command a bulk load runs: :func:`admin_tool_command` with :func:`import_heap_mb`'s heap
    and the server's extra JVM options (``config.java_options``; without a config, ``$HARNESS_G_NEO4J_JAVA_OPTIONS``)."""
    from harness_g.graph.stores.local_neo4j import java_options_from_env

    options = tuple(config.java_options) if config is not None else java_options_from_env()
    return admin_tool_command(classpath, java, heap_mb=import_heap_mb(config), java_options=options)


def import_arguments(files: ImportFiles, database: str = DATABASE) -> list[str]:
    """``database import full`` arguments for ``files``: labels/types from the file list, ids as strings in id
    spaces, a bad row (a relationship to a missing node, a duplicate id) fails the import instead of being skipped."""
    args = ["database", "import", "full"]
    for table, path in files.files:
        args.append(f"--{table.kind}={table.name}={path}")
    args += ["--id-type=string", "--skip-bad-relationships=false", "--skip-duplicate-nodes=false",
             "--bad-tolerance=0", f"--multiline-fields={'true' if files.multiline else 'false'}",
             "--overwrite-destination=false", database]
    return args


def database_dir(neo4j_home: Path, database: str = DATABASE) -> Path:
    """Where a Neo4j home keeps ``database``'s store files (the default ``server.directories.data``)."""
    return neo4j_home / "data" / "databases" / database


def import_database(files: ImportFiles, neo4j_home: str | Path, admin: Sequence[str], database: str = DATABASE,
                    ) -> Path:
    """Run ``admin database import full`` (``admin``: the ``neo4j-admin`` command, e.g. :func:`admin_tool_command`)
    with ``NEO4J_HOME=neo4j_home`` into a new ``database``; returns the home's data directory.

    Refused (StoreError, one line) when ``neo4j_home`` is missing or ``database`` already holds store files there:
    the importer writes only into a new database, and harness-g never overwrites one. An importer failure is a
    StoreError with its last lines.
    """
    home = Path(neo4j_home)
    if not home.is_dir():
        raise StoreError(f"the Neo4j home {home} for the bulk import does not exist")
    target = database_dir(home, database)
    if target.exists() and any(target.iterdir()):
        raise StoreError(f"database {database!r} in {home} is not empty ({target}); the bulk import writes only into "
                         "a new database and never overwrites one")
    (home / "conf").mkdir(exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    env = {**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")}
    cmd = [*admin, *import_arguments(files, database), f"--report-file={home / 'logs' / 'import.report'}", "--verbose"]
    proc = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise StoreError(f"neo4j-admin database import failed (exit {proc.returncode}): "
                         f"{import_failure(proc.stdout + proc.stderr)}")
    return home / "data"


def import_failure(output: str) -> str:
    """The importer's reason, on one line, from its ``--verbose`` output: the bad input row it names
    (``original error: p:0 (Sentence)-[MENTIONS]->e_x (Entity) referring to missing node e_x``), else its last lines
    that are neither a stack frame nor a warning."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("original error:"):
            return "bad input row: " + line.split(":", 1)[1].strip()
    plain = [line for line in lines if not line.startswith(("at ", "...", "WARNING", "Caused by"))]
    return " | ".join(plain[-3:]) or "no output"


# -- after the import: the Bolt loader's schema, GraphMeta and vector index -----------------------------------
def finish_import(store: Any, artifact: Artifact, report: BulkReport, hub_sample: int | None = None) -> None:
    """On the started server: the constraints/indexes of ``schema.cypher``, GraphMeta (complete=false), the hub
    samples (the loader's last stage, over Bolt: one property on a few entities), the vector index (waited for), then
    GraphMeta complete=true -- the steps :meth:`GraphStore.load` runs around its batches. ``hub_sample``: the sample
    size (default ``HUB_SAMPLE_SIZE``)."""
    from harness_g.graph.stores.base import resolve_hub_sample
    from harness_g.graph.stores.loader import STAGES, artifact_samples, stage_batches
    from harness_g.graph.stores.schema import LOAD_INDEX_TIMEOUT_S

    size = resolve_hub_sample(None, artifact, hub_sample)  # a new database: the requested size, else the default
    t = time.perf_counter()
    store.ensure_schema()
    store.write("meta_begin", meta_params(artifact, size))
    report.seconds["schema"] = time.perf_counter() - t
    t = time.perf_counter()
    stage = next(s for s in STAGES if s.name == "pool_samples")
    samples = artifact_samples(artifact, size)
    for rows in stage_batches(artifact, stage, 2000, store.encode_vector, samples=samples):
        store.write_batch(stage.query, rows)
    report.rows[stage.name] = len(samples)
    report.seconds["pool_samples"] = time.perf_counter() - t
    t = time.perf_counter()
    store.ensure_vector_index(artifact.embedding_dim)
    store.wait_for_indexes(LOAD_INDEX_TIMEOUT_S)
    report.seconds["indexes"] = time.perf_counter() - t
    if not store.write("meta_complete", {"content_hash": artifact.content_hash, "loaded_at": utc_now()}):
        raise StoreError(f"bulk load of {artifact.content_hash} lost its GraphMeta node in {store.where}")


def _seed_with(artifact: Artifact, report: BulkReport, config: Any = None) -> Callable[[Path, str], Path]:
    """The :class:`LocalNeo4j` ``seed``: CSVs into ``SEED/import``, the importer (:func:`importer_command`, its heap
    from ``config``) into the home ``SEED``."""

    def seed(seed_dir: Path, classpath: str) -> Path:
        t = time.perf_counter()
        (seed_dir / "import").mkdir()
        files = write_import_csvs(artifact, seed_dir / "import")
        report.rows.update(files.rows)
        report.seconds["csv"] = time.perf_counter() - t
        t = time.perf_counter()
        data = import_database(files, seed_dir, importer_command(classpath, config))
        shutil.rmtree(seed_dir / "import", ignore_errors=True)  # the store files hold it all now
        report.seconds["import"] = time.perf_counter() - t
        return data

    return seed


def bulk_load_local(graph_dir: str | Path, config: Any = None, *, quiet: bool = True,
                    hub_sample: int | None = None) -> tuple[Any, Any, BulkReport]:
    """Start a local Neo4j (:class:`LocalNeo4j`, ``config``: its :class:`LocalNeo4jConfig`) whose database is
    GRAPH_DIR's artifact, bulk-imported before it starts, with the schema, GraphMeta and vector index in place.

    Returns ``(server, store, report)``: the running server (stop it; its data goes with it), a
    :class:`Neo4jStore` on it (close it) and the :class:`BulkReport`. The artifact is verified (sha256 of every
    file) and its embeddings checked before anything starts. ``hub_sample``: the hub sample size (default
    ``HUB_SAMPLE_SIZE``).
    """
    from harness_g.graph.stores.local_neo4j import LocalNeo4j
    from harness_g.graph.stores.neo4j_store import Neo4jStore

    started = time.perf_counter()
    artifact = Artifact.open(graph_dir, verify=True)
    check_embeddings(artifact)  # bad input fails here, before a JVM starts
    report = BulkReport()
    server = LocalNeo4j(config, quiet=quiet, seed=_seed_with(artifact, report, config))
    t = time.perf_counter()
    server.start()
    report.seconds["start"] = time.perf_counter() - t - report.seconds.get("csv", 0.0) - report.seconds.get("import", 0.0)
    try:
        store = Neo4jStore(server.bolt_uri, *server.auth)
        try:
            finish_import(store, artifact, report, hub_sample)
        except BaseException:
            store.close()
            raise
    except BaseException:
        server.stop()
        raise
    report.seconds["total"] = time.perf_counter() - started
    return server, store, report


__all__ = ["BulkReport", "CSV_TABLES", "CsvTable", "ImportFiles", "admin_tool_command", "bulk_load_local",
           "csv_field", "finish_import", "import_arguments", "import_database", "import_heap_mb", "importer_command",
           "write_import_csvs"]
