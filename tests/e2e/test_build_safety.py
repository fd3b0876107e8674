"""Regressions for inputs and events that used to corrupt or lose a graph:

1. a NUL (or another character no store holds) in the corpus: refused while reading, old graph intact;
2. a SIGKILL while a rebuild writes its tables: the old artifact stays whole (staging + publish), and a
   directory mixing two builds is refused, never a cache hit;
3. two writers into one GRAPH_DIR / RUN_DIR: the second is refused at once, naming the first.

Inputs refused while reading, before any build, are checked in tests/unit/test_build_input_safety.py.
Real builds use a 3-document corpus (spaCy + MiniLM: seconds each).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.build_corpora import DOCS, write_jsonl
from helpers.cli_checks import assert_one_line_error, run

from harness_g.cli import main
from harness_g.errors import InputError
from harness_g.graph import artifact as art
from harness_g.graph.artifact import Artifact
from harness_g.graph.locks import LOCK_FILE, BusyError, exclusive_lock
from harness_g.graph.stores.base import GraphStore, graph_identity
from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE

OTHER_DOCS = [
    {"id": "rome", "title": "Rome", "text": "Rome is the capital of Italy. The Colosseum stands in Rome."},
    {"id": "dante", "title": "Dante Alighieri", "text": "Dante Alighieri was a poet from Florence. He wrote the Divine Comedy."},
]


def stats(capsys, graph_dir: Path) -> dict:
    rc, out, err = run(capsys, "stats", graph_dir, "--json")
    assert rc == 0, err
    return json.loads(out)


def copy_artifact(src: Path, dst: Path) -> Path:
    """The artifact files of ``src`` (not its store) in a fresh ``dst``."""
    dst.mkdir(parents=True)
    for item in src.iterdir():
        if item.is_file() and (item.name == art.MANIFEST or item.name in art.ARTIFACT_FILES):
            shutil.copy2(item, dst / item.name)
    return dst


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpora")
    return {"good": write_jsonl(root / "good.jsonl", DOCS), "other": write_jsonl(root / "other.jsonl", OTHER_DOCS)}


@pytest.fixture(scope="module")
def loaded_graph(corpora: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GOOD built and loaded into its embedded store (each test that changes a graph uses a copy)."""
    graph_dir = tmp_path_factory.mktemp("loaded") / "g"
    assert main(["build", "--format", "jsonl", "--input", str(corpora["good"]), "--out", str(graph_dir), "-q"]) == 0
    return graph_dir


# -- 1. characters a store cannot hold ---------------------------------------------------------------
def test_nul_corpus_is_refused_and_the_old_graph_kept(loaded_graph: Path, tmp_path: Path, capsys) -> None:
    before = stats(capsys, loaded_graph)
    assert before["store"]["complete"] is True and before["store"]["nodes"]["Paragraph"] == 3
    manifest = (loaded_graph / art.MANIFEST).read_bytes()
    nul = tmp_path / "nul.jsonl"
    nul.write_text(json.dumps(DOCS[0]) + "\n" + json.dumps({"id": "x", "text": "NUL\u0000x Alice met Bob in Paris."}) + "\n",
                   encoding="utf-8")
    assert "\\u0000" in nul.read_text()  # the JSON escape, as the attack used it

    rc, _, err = run(capsys, "build", "--format", "jsonl", "--input", nul, "--out", loaded_graph, "-q")
    assert_one_line_error(rc, err, f"{nul}:2:", "'text'", "NUL")
    assert (loaded_graph / art.MANIFEST).read_bytes() == manifest
    Artifact.open(loaded_graph, verify=True)
    after = stats(capsys, loaded_graph)
    assert after["store"]["complete"] is True
    assert after["store"]["nodes"] == before["store"]["nodes"] and after["store"]["content_hash"] == before["store"]["content_hash"]


# -- 2. a crash during a rebuild ---------------------------------------------------------------------
KILL_AFTER_TWO_TABLES = textwrap.dedent("""
    import os, signal, sys
    from harness_g.graph import artifact
    written = []
    real = artifact.write_table
    def write_table(graph_dir, name, columns):
        n = real(graph_dir, name, columns)
        written.append(name)
        if len(written) == 2:  # SIGKILL in the middle of writing the tables (the 0.07-0.4 s window)
            os.kill(os.getpid(), signal.SIGKILL)
        return n
    artifact.write_table = write_table
    from harness_g.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def _table_texts(graph_dir: Path) -> list[str]:
    return pq.read_table(graph_dir / "paragraphs.parquet").column("text").to_pylist()


def test_sigkill_while_writing_tables_keeps_the_old_artifact(loaded_graph: Path, corpora: dict[str, Path], tmp_path: Path,
                                                             capsys) -> None:
    graph_dir = copy_artifact(loaded_graph, tmp_path / "g")
    old_hash, old_texts = Artifact.open(graph_dir).content_hash, _table_texts(graph_dir)
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_TWO_TABLES, "build", "--format", "jsonl", "--input",
                           str(corpora["other"]), "--out", str(graph_dir), "--no-load", "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(graph_dir.glob(art.STAGING_PREFIX + "*")), "the build was not killed while writing its tables"
    # the old artifact is whole: same manifest, and every file matches its sha256
    artifact = Artifact.open(graph_dir, verify=True)
    assert artifact.content_hash == old_hash and _table_texts(graph_dir) == old_texts
    rc, out, err = run(capsys, "build", "--format", "jsonl", "--input", corpora["good"], "--out", graph_dir, "--no-load", "-q")
    assert rc == 0 and out.startswith("cache hit"), err  # correct: the files are the old artifact's
    # the interrupted rebuild runs again, and the dead build's staging directory is cleaned up
    rc, out, err = run(capsys, "build", "--format", "jsonl", "--input", corpora["other"], "--out", graph_dir, "--no-load", "-q")
    assert rc == 0 and out.startswith("built:"), err
    assert not list(graph_dir.glob(art.STAGING_PREFIX + "*"))
    assert {t.split(" ")[0] for t in _table_texts(graph_dir)} == {"Rome", "Dante"}
    Artifact.open(graph_dir, verify=True)


def test_a_directory_mixing_two_builds_is_refused_and_never_a_cache_hit(loaded_graph: Path, corpora: dict[str, Path],
                                                                        tmp_path: Path, capsys) -> None:
    graph_dir = copy_artifact(loaded_graph, tmp_path / "g")
    # what an interrupted in-place rebuild used to leave: the old manifest beside new files of the same size
    matrix = np.load(graph_dir / art.EMBEDDINGS)
    matrix[0] = matrix[-1]
    art.write_embeddings(graph_dir, matrix)
    Artifact.open(graph_dir)  # sizes agree: a plain open (agent, stats) only stats the files
    with pytest.raises(InputError, match=r"sentence_embeddings\.npy does not match its sha256 in the manifest: .*"
                                         r"rebuild the graph with `harness-g build \.\.\. --force`"):
        Artifact.open(graph_dir, verify=True)  # the build's cache-hit check and the store load hash them
    table = pq.read_table(graph_dir / "sentences.parquet").to_pydict()
    table["text"] = [t.replace("Paris", "Rome") for t in table["text"]]
    art.write_table(graph_dir, "sentences", table)
    rc, out, err = run(capsys, "build", "--format", "jsonl", "--input", corpora["good"], "--out", graph_dir, "--no-load", "-q")
    assert rc == 0 and out.startswith("built:"), (out, err)  # rebuilt, not a cache hit on mixed files
    Artifact.open(graph_dir, verify=True)
    # a table of another size is caught by every open (a stat, no hashing): e.g. `stats`
    table = pq.read_table(graph_dir / "paragraphs.parquet").to_pydict()
    art.write_table(graph_dir, "paragraphs", {k: v[:1] for k, v in table.items()})
    rc, _, err = run(capsys, "stats", graph_dir, "--no-store")
    assert_one_line_error(rc, err, str(graph_dir), "paragraphs.parquet has", "--force")


def test_incomplete_load_with_the_same_hash_is_reloaded(scratch_store: GraphStore, tiny_artifact: Artifact) -> None:
    scratch_store.load(tiny_artifact, progress=False)
    assert scratch_store.load(tiny_artifact, progress=False).skipped  # complete and same hash: a no-op
    # a load that died after meta_begin: GraphMeta has the same hash but complete = false
    scratch_store.write("meta_begin", {"content_hash": tiny_artifact.content_hash, "embedding_model": tiny_artifact.embedding_model,
                                       "embedding_dim": tiny_artifact.embedding_dim, "loaded_at": "2000-01-01T00:00:00Z",
                                       "hub_sample": HUB_SAMPLE_SIZE, **graph_identity(tiny_artifact)})
    assert scratch_store.loaded_hash() is None and scratch_store.stats()["complete"] is False
    report = scratch_store.load(tiny_artifact, progress=False)
    assert not report.skipped and "total" in report.seconds
    assert scratch_store.loaded_hash() == tiny_artifact.content_hash and scratch_store.stats()["complete"] is True


def test_forced_load_replaces_what_the_store_holds_for_the_same_hash(scratch_store: GraphStore, tiny_artifact: Artifact) -> None:
    """A complete load of the same content hash is skipped, whatever the store holds: an edge added by hand (or by an
    older build of a code change that kept the hash) survives it. ``force`` (``build --force``) reloads exactly the
    artifact."""
    from harness_g.graph.stores.loader import table_counts

    scratch_store.load(tiny_artifact, progress=False)
    mention = tiny_artifact.table("mentions").to_pylist()[0]
    scratch_store.write_batch("load_mentions", [dict(mention, start=-7, end=-7, kind="stale")])
    expected = table_counts(tiny_artifact)["MENTIONS"]
    assert scratch_store.stats()["relationships"]["MENTIONS"] == expected + 1
    assert scratch_store.load(tiny_artifact, progress=False).skipped  # the stray edge stays
    report = scratch_store.load(tiny_artifact, progress=False, force=True)
    assert not report.skipped and "clear" in report.seconds
    assert scratch_store.stats()["relationships"]["MENTIONS"] == expected and scratch_store.stats()["complete"] is True


# -- 3. one writer per directory ---------------------------------------------------------------------
HOLD_LOCK = "import sys, time\nfrom harness_g.graph.locks import exclusive_lock\nwith exclusive_lock(sys.argv[1]):\n" \
            "    print('locked', flush=True)\n    time.sleep(600)\n"


class LockHolder:
    """A subprocess holding DIR/.lock until it is killed (SIGKILL: the kernel releases a flock on death)."""

    def __init__(self, directory: Path):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(directory)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def test_lock_is_reentrant_and_names_its_holder(tmp_path: Path) -> None:
    with exclusive_lock(tmp_path / "d") as root:
        with exclusive_lock(tmp_path / "d"):  # same process: re-entrant
            assert f"pid {os.getpid()}, started " in (root / LOCK_FILE).read_text()
        assert (root / LOCK_FILE).read_text()  # still held by the outer block
    assert (tmp_path / "d" / LOCK_FILE).read_text() == ""  # released
    holder = LockHolder(tmp_path / "d")
    try:
        with pytest.raises(BusyError, match=rf"in use by another harness-g process \(pid {holder.proc.pid}, started \S+, command: "):
            with exclusive_lock(tmp_path / "d"):
                pass
    finally:
        holder.kill()
    with exclusive_lock(tmp_path / "d"):  # a killed holder leaves no stale lock
        pass


def test_second_build_into_the_same_dir_is_refused(loaded_graph: Path, corpora: dict[str, Path], tmp_path: Path, capsys) -> None:
    graph_dir = copy_artifact(loaded_graph, tmp_path / "g")
    manifest = (graph_dir / art.MANIFEST).read_bytes()
    holder = LockHolder(graph_dir)
    try:
        t0 = time.monotonic()
        rc, _, err = run(capsys, "build", "--format", "jsonl", "--input", corpora["other"], "--out", graph_dir, "--no-load", "-q")
        assert_one_line_error(rc, err, str(graph_dir), "in use by another harness-g process", f"pid {holder.proc.pid}",
                              "command: ")
        assert time.monotonic() - t0 < 5  # refused at once, before reading or building anything
        assert (graph_dir / art.MANIFEST).read_bytes() == manifest
    finally:
        holder.kill()
    rc, out, err = run(capsys, "build", "--format", "jsonl", "--input", corpora["good"], "--out", graph_dir, "--no-load", "-q")
    assert rc == 0 and out.startswith("cache hit"), err


def test_second_eval_into_the_same_run_dir_is_refused(hotpot_graph_dir: Path, tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    holder = LockHolder(run_dir)
    argv = ["eval", hotpot_graph_dir, "--out", run_dir, "--limit", "1", "--max-turns", "1", "-q"]
    try:
        rc, _, err = run(capsys, *argv)
        # (the embedding model's loading bar may come first: eval opens the graph before run_eval takes the lock)
        err = err[err.index("harness-g: error: "):] if "harness-g: error: " in err else err
        assert_one_line_error(rc, err, str(run_dir), "in use by another harness-g process", f"pid {holder.proc.pid}")
        assert not (run_dir / "records.jsonl").exists()
    finally:
        holder.kill()
    rc, _, err = run(capsys, *argv)
    assert rc == 0, err
    assert len((run_dir / "records.jsonl").read_text().splitlines()) == 1
