"""The Ray Data build (issue 35 item 2): ``harness-g build ... --engine ray --ray-address ADDR``.

A REAL Ray cluster of two nodes on loopback (``ray start --head`` and a second ``ray start --address``, one CPU each,
no dashboard), started here and stopped in the fixture's finaliser; real spaCy and all-MiniLM-L6-v2 on the packaged
2Wiki dev slice. The Ray-built graph equals the local one: the same content hash, every table equal (synonym scores to
``SCORE_TOLERANCE``), sentence vectors to ``build_ray.EMBEDDING_TOLERANCE``; its shards carry per-shard sha256, and the
stores load it like a local build. Skipped only when Ray is not installed (CI installs the ``scale`` extra).
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from helpers.cli_checks import assert_one_line_error, run

from harness_g.cli import main
from harness_g.errors import InputError
from harness_g.graph.artifact import Artifact

SLICE = Path(__file__).resolve().parents[2] / "harness_g" / "examples" / "2wiki-dev-slice" / "dev.subset.json"
#: how far a Ray-built embedding SYNONYM score may be from the local one: the exact top-k similarity products run with
#: other BLAS thread counts on a Ray worker (the 6th decimal of a few scores moves)
SCORE_TOLERANCE = 1e-5
TABLES = ("paragraphs", "sentences", "entities", "mentions")
ray_missing = importlib.util.find_spec("ray") is None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive_nodes(ray_bin: Path, address: str) -> int:
    """Alive nodes of the cluster at ``address`` by ``ray status`` (0 while it does not answer)."""
    done = subprocess.run([str(ray_bin), "status", "--address", address], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return 0
    active = done.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
    return sum(1 for line in active.splitlines() if line.strip().startswith("1 node_"))


def _stop(proc: subprocess.Popen) -> None:
    """Stop the process group of one ``ray start --block`` we started (its own session: the GCS, the raylet, the
    workers and actors it launched): SIGTERM, then SIGKILL what is left after 10 s (a head keeps its actors)."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _group_alive(proc.pid):
            proc.poll()
            time.sleep(0.5)
        if not _group_alive(proc.pid):
            break
    proc.wait(30)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a two-node Ray cluster (head + one more node, one CPU each), stopped at the end."""
    if ray_missing:
        pytest.skip("ray is not installed: pip install 'harness-g[scale]' (ray[data]==2.60.0); CI installs it")
    ray_bin = Path(sys.executable).with_name("ray")
    temp = tempfile.mkdtemp(prefix="hgray")  # short: Ray's socket paths must stay under 107 bytes
    # Ray's token authentication, with a token of this cluster's own: every node, `ray status` and the build's driver
    # (this process) present it; a client without it is refused
    token = Path(temp) / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--block", "--num-cpus", "1", "--num-gpus", "0", "--node-ip-address", "127.0.0.1",
              "--disable-usage-stats"]
    procs: list[subprocess.Popen] = []
    logs = []

    def start(*args: str) -> None:
        log = open(Path(temp) / f"start-{len(procs)}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen([str(ray_bin), "start", *args, *common,
                                       "--dashboard-agent-listen-port", str(_free_port())],
                                      stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

    try:
        start("--head", "--port", str(port), "--include-dashboard", "false", "--dashboard-host", "127.0.0.1",
              "--ray-client-server-port", str(_free_port()), "--temp-dir", temp)
        _wait(lambda: _alive_nodes(ray_bin, address) >= 1, procs, temp)
        start("--address", address)
        _wait(lambda: _alive_nodes(ray_bin, address) >= 2, procs, temp)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)
        for log in logs:
            log.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp, ignore_errors=True)


def _wait(ready, procs: list[subprocess.Popen], temp: str, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            text = "\n".join(p.read_text()[-2000:] for p in [*sorted(Path(temp).glob("start-*.log")),
                                                             *Path(temp).glob("session_*/logs/ray_process_exit.log")])
            raise AssertionError(f"the Ray cluster did not start:\n{text}")
        time.sleep(1.0)


def _build(out: Path, *extra: str) -> None:
    rc = main(["build", "--format", "2wiki", "--input", str(SLICE), "--out", str(out), "--no-load", "-q", *extra])
    assert rc == 0


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory, ray_cluster: str) -> dict[str, Path]:
    """The slice built locally and on the two-node cluster (the CLI, in this process)."""
    from harness_g.graph import build_ray

    root = tmp_path_factory.mktemp("ray-build")
    _build(root / "local")
    # smaller NER and embedding batches than the local build's (execution-only settings, out of the hash): several
    # batches per stage, several sentence shards
    # and shards of at most 100 rows: several per table
    default, build_ray.SHARD_ROWS = build_ray.SHARD_ROWS, 100
    try:
        _build(root / "ray", "--engine", "ray", "--ray-address", ray_cluster, "--set", "ner_batch_size=64",
               "--set", "embed_batch_size=16")
    finally:
        build_ray.SHARD_ROWS = default
    return {"local": root / "local", "ray": root / "ray"}


@pytest.mark.slow
def test_the_ray_build_on_two_nodes_is_the_local_graph(graphs: dict[str, Path]) -> None:
    from harness_g.graph.build_ray import EMBEDDING_TOLERANCE

    here, ray = Artifact.open(graphs["local"], verify=True), Artifact.open(graphs["ray"], verify=True)
    assert ray.manifest["engine"] == "ray" and ray.manifest["ray"]["nodes"] == 2, ray.manifest.get("ray")
    assert ray.content_hash == here.content_hash
    assert ray.counts == here.counts and here.counts["mentions"] > 500, here.counts
    for name in TABLES:  # row for row, in the same order
        assert ray.table(name).equals(here.table(name)), name
    ours, theirs = ray.table("synonyms").to_pylist(), here.table("synonyms").to_pylist()
    assert [(r["src"], r["dst"], r["kind"]) for r in ours] == [(r["src"], r["dst"], r["kind"]) for r in theirs]
    assert max(abs(a["score"] - b["score"]) for a, b in zip(ours, theirs)) <= SCORE_TOLERANCE
    assert np.abs(ray.embeddings(mmap=False) - here.embeddings(mmap=False)).max() <= EMBEDDING_TOLERANCE
    assert np.abs(ray.entity_embeddings() - here.entity_embeddings()).max() <= EMBEDDING_TOLERANCE
    assert ray.questions() == here.questions()


@pytest.mark.slow
def test_the_link_stage_ran_its_top_k_as_several_tasks(graphs: dict[str, Path]) -> None:
    """The embedding links' exact top-k ran as row-range tasks over the shared name matrix (the equality test above:
    merged, they are the local build's synonyms), not as one task."""
    ray = Artifact.open(graphs["ray"]).manifest["ray"]
    assert ray["link_tasks"] >= 2, ray


@pytest.mark.slow
def test_the_shards_carry_their_sha256_and_pair_sentences_with_vectors(graphs: dict[str, Path], tmp_path: Path) -> None:
    from harness_g.graph.build_ray import verify_shards

    shards = verify_shards(graphs["ray"])
    files = shards["files"]
    assert len(files["sentences"]) >= 3 and len(files["mentions"]) >= 8  # 240 sentences, 793 mentions, <= 100 rows each
    manifest = Artifact.open(graphs["ray"]).manifest
    for table in ("paragraphs", "sentences", "entities", "mentions", "synonyms"):
        assert sum(e["rows"] for e in files[table]) == manifest["counts"][table], table
    parts = [np.load(graphs["ray"] / "shards" / e["file"]) for e in files["sentence_embeddings"]]
    assert np.array_equal(np.concatenate(parts), Artifact.open(graphs["ray"]).embeddings(mmap=False))
    # a changed shard is found, by name
    copy = tmp_path / "copy"
    shutil.copytree(graphs["ray"], copy)
    victim = copy / "shards" / files["mentions"][0]["file"]
    victim.write_bytes(victim.read_bytes()[:-1] + b"\0")
    with pytest.raises(InputError, match=f"shard {files['mentions'][0]['file']} does not match its sha256"):
        verify_shards(copy)


@pytest.mark.slow
def test_a_rebuild_is_a_cache_hit_and_a_local_rebuild_drops_the_shards(graphs: dict[str, Path], ray_cluster: str,
                                                                          tmp_path: Path, capsys) -> None:
    rc, out, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", graphs["ray"], "--no-load",
                       "-q", "--engine", "ray", "--ray-address", ray_cluster)
    assert rc == 0 and out.startswith("cache hit"), (out, err)
    copy = tmp_path / "copy"
    shutil.copytree(graphs["ray"], copy)
    rc, out, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", copy, "--no-load", "-q",
                       "--force")
    assert rc == 0 and out.startswith("built"), err
    assert not (copy / "shards").exists() and "shards" not in Artifact.open(copy).manifest


@pytest.mark.slow
def test_the_stores_load_the_ray_graph(graphs: dict[str, Path], request: pytest.FixtureRequest, store_kind: str) -> None:
    from harness_g.graph.load import load_graph

    spec = None
    if store_kind == "neo4j":
        request.getfixturevalue("neo4j_store").clear()
        spec = request.getfixturevalue("neo4j_server").bolt_uri
    counts = Artifact.open(graphs["local"]).counts
    store, _ = load_graph(graphs["ray"], spec, progress=False, remember=False, replace=True)
    with store:
        stats = store.stats()
        assert {k: stats["nodes"][k] for k in ("Paragraph", "Sentence", "Entity")} == {
            "Paragraph": counts["paragraphs"], "Sentence": counts["sentences"], "Entity": counts["entities"]}
        assert stats["relationships"]["MENTIONS"] == counts["mentions"]
        assert stats["relationships"]["SYNONYM"] == counts["synonyms"]
        mentions = Artifact.open(graphs["local"]).table("mentions").to_pylist()
        top = max({m["entity_id"] for m in mentions}, key=lambda e: (sum(m["entity_id"] == e for m in mentions), e))
        rows = store.run_cypher("MATCH (e:Entity {id: $id})<-[:MENTIONS]-(s:Sentence) RETURN DISTINCT s.id ORDER BY s.id",
                                {"id": top}).rows
        assert [r[0] for r in rows] == sorted({m["sentence_id"] for m in mentions if m["entity_id"] == top}) != []


@pytest.mark.slow
def test_an_encoder_that_fails_on_the_actors_is_one_line_and_publishes_nothing(ray_cluster: str, tmp_path: Path,
                                                                             capsys) -> None:
    out = tmp_path / "g"
    rc, _, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", out, "--no-load", "-q",
                     "--engine", "ray", "--ray-address", ray_cluster, "--embedding-model", "/nonexistent/model")
    # Ray's own log lines may precede it; the command's error is its last line, the encoder's message alone
    assert rc == 2 and err.strip().splitlines()[-1].startswith(
        "harness-g: error: cannot load embedding model '/nonexistent/model'"), err[-2000:]
    assert not out.exists()  # the build created the directory: it is gone again, nothing published


def test_ray_flags_are_checked_before_any_work(capsys, tmp_path: Path) -> None:
    rc, _, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", tmp_path / "g",
                     "--ray-address", "127.0.0.1:1")
    assert_one_line_error(rc, err, "--ray-address needs --engine ray")
    rc, _, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", tmp_path / "g", "--append",
                     "--engine", "ray")
    assert_one_line_error(rc, err, "--append runs on the local engine")
    rc, _, err = run(capsys, "build", "--format", "2wiki", "--input", SLICE, "--out", tmp_path / "g", "--no-load",
                     "--engine", "ray", "--preset", "extended")
    assert_one_line_error(rc, err, "person_alias_merge is not supported by --engine ray")
    assert not (tmp_path / "g").exists()  # nothing was written
