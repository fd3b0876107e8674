"""The on-disk graph artifact: Parquet tables + embeddings + a manifest, in a GRAPH_DIR.

A GRAPH_DIR is the handle every command takes. Layout::

    GRAPH_DIR/
      manifest.json            counts, model names, build config, content hash, timings
      paragraphs.parquet       id, title, text, source
      sentences.parquet        id, paragraph_id, position, title, text   (row i <-> embeddings[i])
      sentence_embeddings.npy  float32 [n_sentences, dim], L2-normalised
      entity_embeddings.npy    float32 [n_entities, dim]: display-name vectors of lookup-able entities
                               (zero rows for the others), row i <-> entities.parquet row i
      entities.parquet         id, name, surface, label, lookupable, reject_reason, mentions
      mentions.parquet         sentence_id, entity_id, surface, start, end, kind ('ner'|'title'|'title_mention')
      synonyms.parquet         src, dst, kind ('canonical'|'title'|'abbreviation'|'embedding'|'alias'), score
      questions.jsonl          QA items read with the corpus (may be empty)
      store/                   the embedded FalkorDB's data (created on first load)
      store.json               the store spec the last build/load used
      .lock                    held by the build/load writing this directory (see graph/locks.py)

A build writes the whole new artifact into a fresh ``GRAPH_DIR/.staging-<pid>/`` (manifest
last), then publishes it (:func:`publish`) with one atomic rename as the commit: the new manifest,
marked ``"data_dir": ".staging-<pid>"`` (its files are read from there), replaces the old one; then
the files are hard-linked into GRAPH_DIR over the old ones and the unmarked manifest is renamed over
the marked one. ``store/`` and ``store.json`` stay in place (the idempotent store load replaces the
old graph when the content hash changed). So at every instant, a crash (even SIGKILL) included,
GRAPH_DIR opens as the old artifact or the new one, each complete: before the commit the old files
are untouched, after it the new manifest reads the complete staging copy. The next build (holding the
lock) finishes a publish a crash interrupted (:func:`finish_publish`) and removes leftover staging
directories.

The manifest records each file's size and sha256 (``files``). :meth:`Artifact.open` always
checks that every listed file exists with its recorded size (a few stat calls) and, with
``verify=True``, its sha256 too (about 1 s per few hundred MB) -- the build's cache-hit check and
the store load open that way -- so files from two builds never pass for one artifact: such a
directory is refused with an error saying to rebuild it (``harness-g build ... --force``).
Manifests without ``files`` (hand-made ones, graphs built before the field existed) are opened
without these checks.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness_g.errors import InputError
from harness_g.graph.types import QAItem

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
EMBEDDINGS = "sentence_embeddings.npy"
ENTITY_EMBEDDINGS = "entity_embeddings.npy"
QUESTIONS = "questions.jsonl"

SCHEMAS: dict[str, pa.Schema] = {
    "paragraphs": pa.schema([("id", pa.string()), ("title", pa.string()), ("text", pa.string()), ("source", pa.string())]),
    "sentences": pa.schema(
        [("id", pa.string()), ("paragraph_id", pa.string()), ("position", pa.int32()), ("title", pa.string()), ("text", pa.string())]
    ),
    "entities": pa.schema(
        [
            ("id", pa.string()),
            ("name", pa.string()),
            ("surface", pa.string()),
            ("label", pa.string()),
            ("lookupable", pa.bool_()),
            ("reject_reason", pa.string()),
            ("mentions", pa.int32()),
        ]
    ),
    "mentions": pa.schema(
        [
            ("sentence_id", pa.string()),
            ("entity_id", pa.string()),
            ("surface", pa.string()),
            ("start", pa.int32()),
            ("end", pa.int32()),
            ("kind", pa.string()),
        ]
    ),
    "synonyms": pa.schema([("src", pa.string()), ("dst", pa.string()), ("kind", pa.string()), ("score", pa.float32())]),
}
TABLES = tuple(SCHEMAS)
#: every data file of an artifact (the manifest aside); their sizes and sha256 go into the manifest
ARTIFACT_FILES = (*(f"{name}.parquet" for name in TABLES), EMBEDDINGS, ENTITY_EMBEDDINGS, QUESTIONS)
STAGING_PREFIX = ".staging-"
#: the Ray engine's sharded copy of the artifact (graph/build_ray.py): a folder in GRAPH_DIR, listed with per-shard
#: sha256 under the manifest's ``shards`` key; published with the artifact, removed when a new artifact has none
SHARDS = "shards"
#: manifest key set only between a publish's commit and its end: the staging directory (a name in GRAPH_DIR)
#: that holds the artifact's files meanwhile
DATA_DIR = "data_dir"


def _atomic_path(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def write_table(graph_dir: Path, name: str, columns: dict[str, list[Any]]) -> int:
    """Write one table (column name -> values) with its fixed schema; returns the row count."""
    table = pa.Table.from_pydict(columns, schema=SCHEMAS[name])
    target = graph_dir / f"{name}.parquet"
    tmp = _atomic_path(target)
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, target)
    return table.num_rows


def write_embeddings(graph_dir: Path, matrix: np.ndarray, name: str = EMBEDDINGS) -> None:
    target = graph_dir / name
    tmp = _atomic_path(target)
    with open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(matrix, dtype=np.float32))
    os.replace(tmp, target)


def write_questions(graph_dir: Path, questions: tuple[QAItem, ...] | list[QAItem]) -> None:
    target = graph_dir / QUESTIONS
    tmp = _atomic_path(target)
    with open(tmp, "w", encoding="utf-8") as fh:
        for item in questions:
            fh.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
    os.replace(tmp, target)


def write_manifest(graph_dir: Path, manifest: dict[str, Any]) -> None:
    target = graph_dir / MANIFEST
    tmp = _atomic_path(target)
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digests(graph_dir: Path) -> dict[str, dict[str, Any]]:
    """``{file name: {"bytes", "sha256"}}`` of the artifact files present in ``graph_dir`` (for the manifest)."""
    out = {}
    for name in ARTIFACT_FILES:
        path = graph_dir / name
        if path.is_file():
            out[name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    return out


def staging_dir(graph_dir: Path) -> Path:
    """A fresh, empty directory inside ``graph_dir`` for the next artifact (see :func:`publish`)."""
    path = Path(graph_dir) / f"{STAGING_PREFIX}{os.getpid()}"
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def remove_staging(graph_dir: Path) -> None:
    """Finish a publish a crash interrupted, then delete the staging directories and publish temporaries left by
    builds that died (call it holding the GRAPH_DIR lock)."""
    graph_dir = Path(graph_dir)
    if graph_dir.is_dir():
        finish_publish(graph_dir)
        for path in graph_dir.glob(STAGING_PREFIX + "*"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:  # a publish's temporary file (see publish)
                path.unlink(missing_ok=True)


def publish(staging: Path, graph_dir: Path) -> None:
    """Make the complete artifact in ``staging`` (manifest included) the one ``graph_dir`` opens as; at no instant
    does it open as neither (see the module docstring).

    1. commit: the new manifest, marked ``"data_dir": staging.name``, is renamed over the old one (atomic);
    2. :func:`finish_publish`: every file is hard-linked (copied where links are unsupported) into ``graph_dir``
       over the old one, files of the old artifact that the new one lacks are removed, the unmarked manifest is
       renamed over the marked one and ``staging`` is removed.

    ``store/``, ``store.json`` and ``.lock`` are not touched. Call it holding the GRAPH_DIR lock.
    """
    staging, graph_dir = Path(staging), Path(graph_dir)
    if not (staging / MANIFEST).is_file():
        raise RuntimeError(f"{staging} holds no manifest: not a complete artifact")
    if staging.parent.resolve() != graph_dir.resolve() or not staging.name.startswith(STAGING_PREFIX):
        raise RuntimeError(f"{staging} is not a staging directory of {graph_dir}")
    manifest = json.loads((staging / MANIFEST).read_text(encoding="utf-8"))
    marked = graph_dir / f"{staging.name}.{MANIFEST}"  # a name remove_staging clears if we die before the rename
    marked.write_text(json.dumps({**manifest, DATA_DIR: staging.name}, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(marked, graph_dir / MANIFEST)  # the commit: from here on graph_dir opens as the new artifact
    finish_publish(graph_dir)


def _published_staging(graph_dir: Path) -> Path | None:
    """The staging directory the manifest of ``graph_dir`` reads its files from (a publish not finished), else None."""
    try:
        manifest = json.loads((graph_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = manifest.get(DATA_DIR) if isinstance(manifest, dict) else None
    return graph_dir / name if isinstance(name, str) and _is_staging_name(name) else None


def _is_staging_name(name: str) -> bool:
    return name.startswith(STAGING_PREFIX) and "/" not in name and "\\" not in name and name not in (".", "..")


def _link_in(src: Path, dst: Path) -> None:
    """``dst`` becomes a hard link to ``src`` (a copy where the filesystem has no links), replaced atomically."""
    tmp = dst.with_name(f"{src.parent.name}.{dst.name}")  # a staging-prefixed name: remove_staging clears it
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def finish_publish(graph_dir: Path) -> None:
    """Complete a committed publish (steps after the commit in :func:`publish`); a no-op when none is pending.
    Idempotent, so a publish killed part-way is finished by the next build (holding the GRAPH_DIR lock)."""
    graph_dir = Path(graph_dir)
    staging = _published_staging(graph_dir)
    if staging is None:
        return
    if not (staging / MANIFEST).is_file():
        return  # the staging copy is gone (deleted by hand): Artifact.open reports the missing files
    for name in ARTIFACT_FILES:
        if (staging / name).is_file():
            _link_in(staging / name, graph_dir / name)
        else:
            (graph_dir / name).unlink(missing_ok=True)
    _publish_shards(staging, graph_dir)
    os.replace(staging / MANIFEST, graph_dir / MANIFEST)  # unmarked: the files are read from graph_dir again
    shutil.rmtree(staging, ignore_errors=True)


def _publish_shards(staging: Path, graph_dir: Path) -> None:
    """Move ``staging/shards`` over ``graph_dir/shards`` when the new manifest lists shards; remove an old
    ``graph_dir/shards`` when it does not. Idempotent (a rerun after a crash finds the shards already moved)."""
    manifest = json.loads((staging / MANIFEST).read_text(encoding="utf-8"))
    target = graph_dir / SHARDS
    if not manifest.get(SHARDS):
        shutil.rmtree(target, ignore_errors=True)
    elif (staging / SHARDS).is_dir():
        old = graph_dir / f"{staging.name}.old-{SHARDS}"  # staging-prefixed: remove_staging clears it after a crash
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            os.replace(target, old)
        os.replace(staging / SHARDS, target)
        shutil.rmtree(old, ignore_errors=True)


def discard_staging(staging: Path, graph_dir: Path) -> None:
    """Remove a staging directory after a failed build, unless the published manifest reads its files (a publish
    that failed after its commit: it stays the artifact, and the next build finishes the publish)."""
    pending = _published_staging(Path(graph_dir))
    if pending is None or pending.resolve() != Path(staging).resolve():
        shutil.rmtree(staging, ignore_errors=True)


def data_file(graph_dir: Path, manifest: dict[str, Any], name: str) -> Path:
    """Where the artifact file ``name`` of ``manifest`` is read from: the staging directory the manifest names
    while its publish is being finished (``DATA_DIR``), else ``graph_dir``. A staging copy already removed means
    the publish finished, and ``graph_dir`` holds the same files."""
    staged = manifest.get(DATA_DIR)
    if isinstance(staged, str) and _is_staging_name(staged):
        path = graph_dir / staged / name
        if path.exists():
            return path
    return graph_dir / name


def _files_problem(path: Path, manifest: dict[str, Any], verify: bool) -> str | None:
    """What is wrong with the files a manifest lists (missing, other size, other sha256), or None."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        return None  # a manifest without per-file digests: nothing to check against
    for name, want in sorted(files.items()):
        fpath = data_file(path, manifest, name)
        if not fpath.is_file():
            return f"{name} is missing"
        size = fpath.stat().st_size
        if size != want.get("bytes"):
            return f"{name} has {size} bytes, the manifest says {want.get('bytes')}"
    if verify:
        for name, want in sorted(files.items()):
            if file_sha256(data_file(path, manifest, name)) != want.get("sha256"):
                return f"{name} does not match its sha256 in the manifest"
    return None


@dataclass
class Artifact:
    """Read access to a built GRAPH_DIR. Cheap to open: tables are read lazily."""

    path: Path
    manifest: dict[str, Any]

    @classmethod
    def open(cls, graph_dir: str | Path, *, verify: bool = False) -> "Artifact":
        """Open a GRAPH_DIR; sizes of the files the manifest lists are always checked, their sha256
        only with ``verify`` (see the module docstring)."""
        path = Path(graph_dir)
        if not path.exists():
            raise InputError("graph directory does not exist (build it with `harness-g build`)", str(path))
        if not path.is_dir():
            raise InputError("not a directory (expected a GRAPH_DIR made by `harness-g build`)", str(path))
        mpath = path / MANIFEST
        if not mpath.exists():
            raise InputError("no manifest.json: not a harness-g graph, or its build did not finish", str(path))
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"corrupt manifest ({exc.msg})", str(mpath), exc.lineno) from exc
        if manifest.get("format_version") != FORMAT_VERSION:
            raise InputError(
                f"graph format version {manifest.get('format_version')!r} is not supported (expected {FORMAT_VERSION}); rebuild it",
                str(mpath),
            )
        for name in TABLES:
            if not data_file(path, manifest, f"{name}.parquet").exists():
                raise InputError(f"missing table {name}.parquet; rebuild the graph", str(path))
        problem = _files_problem(path, manifest, verify)
        if problem:
            raise InputError(
                f"{problem}: the files are not the ones this manifest.json describes (an interrupted or concurrent "
                f"build?); rebuild the graph with `harness-g build ... --force`", str(path))
        return cls(path=path, manifest=manifest)

    # -- identity -------------------------------------------------------------------------
    @property
    def content_hash(self) -> str:
        """Hash of the inputs and build config; changes whenever the graph's content would."""
        return str(self.manifest["content_hash"])

    @property
    def embedding_model(self) -> str:
        return str(self.manifest["models"]["embedding"])

    @property
    def embedding_backend(self) -> str:
        """The encoder backend the sentences were embedded with (graphs built before backends existed: torch)."""
        return str(self.manifest["models"].get("embedding_backend", "torch"))

    @property
    def embedding_dim(self) -> int:
        return int(self.manifest["models"]["embedding_dim"])

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.manifest.get("counts", {}))

    # -- data -----------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        """The path of artifact file ``name`` (see :func:`data_file`)."""
        return data_file(self.path, self.manifest, name)

    def table(self, name: str, columns: list[str] | None = None) -> pa.Table:
        if name not in SCHEMAS:
            raise KeyError(f"unknown table {name!r}; known: {', '.join(TABLES)}")
        return pq.read_table(self.file(f"{name}.parquet"), columns=columns)

    def iter_rows(self, name: str, batch_size: int = 2000, columns: list[str] | None = None) -> Iterator[list[dict[str, Any]]]:
        """Yield the table as lists of row dicts of at most ``batch_size`` rows (file order)."""
        pf = pq.ParquetFile(self.file(f"{name}.parquet"))
        for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
            yield batch.to_pylist()

    def embeddings(self, mmap: bool = True) -> np.ndarray:
        """Sentence embeddings, float32 [n_sentences, dim], row i = sentences.parquet row i."""
        return np.load(self.file(EMBEDDINGS), mmap_mode="r" if mmap else None)

    def entity_embeddings(self) -> np.ndarray | None:
        """Entity display-name vectors float32 [n_entities, dim] (None for graphs built before they were stored)."""
        path = self.file(ENTITY_EMBEDDINGS)
        return np.load(path) if path.exists() else None

    def questions(self) -> list[QAItem]:
        qpath = self.file(QUESTIONS)
        if not qpath.exists():
            return []
        with open(qpath, encoding="utf-8") as fh:
            return [QAItem.from_json(json.loads(line)) for line in fh if line.strip()]

    @property
    def store_dir(self) -> Path:
        """Where the embedded store keeps its data for this graph."""
        return self.path / "store"
