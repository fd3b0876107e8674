"""A full disk (issue 28 item 9): a small real tmpfs, filled to the last page with a filler file, under a fresh build,
a rebuild, an eval and the embedded FalkorDB's snapshot. Each used to end in a traceback (or, for the snapshot,
"cannot save FalkorDB snapshot in …: " with an empty reason); each is now one line naming the path and the reason,
the old artifact stays, and a re-run after freeing space finishes the work.

Mounting a tmpfs needs root (CAP_SYS_ADMIN); where it cannot be mounted these tests are skipped, saying so. No
mock: the kernel answers ENOSPC (or a short write) exactly as on a full disk.
"""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.paths import TEST_DATA

from harness_g.errors import StoreError
from harness_g.graph.artifact import MANIFEST, Artifact
from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB

CORPUS = TEST_DATA / "generic" / "corpus.jsonl"
HOTPOT = TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"
PAGE = 4096


class SmallDisk:
    """A tmpfs of ``size`` bytes at ``path``; :meth:`fill` leaves ``leave`` bytes free, :meth:`free` undoes it."""

    def __init__(self, path: Path):
        self.path = path
        self.filler = path / ".filler"

    def fill(self, leave: int = 0) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            while True:
                os.write(fd, b"\0" * PAGE)
        except OSError:  # ENOSPC: the disk is full
            pass
        finally:
            os.close(fd)
        os.truncate(self.filler, max(0, self.filler.stat().st_size - leave))

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        yield SmallDisk(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _build(capsys, out: Path, *extra: str) -> tuple[int, str, str]:  # noqa: ANN001
    return run(capsys, "build", "--format", "jsonl", "--input", CORPUS, "--out", out, "-q", *extra)


def test_fresh_build_on_a_full_disk_is_one_line_and_leaves_nothing(small_disk: SmallDisk, capsys) -> None:
    out = small_disk.path / "g"
    small_disk.fill(leave=0)  # not even the lock file's line fits
    rc, _, err = _build(capsys, out)
    assert_one_line_error(rc, err, f"cannot write the lock file {out}/.lock: No space left on device")
    assert not out.exists()
    small_disk.free()
    small_disk.fill(leave=2 * PAGE)  # the lock fits, the artifact does not
    rc, _, err = _build(capsys, out)
    assert_one_line_error(rc, err, f"cannot write the graph artifact in {out}/.staging-", "No space left on device",
                          "nothing was published")
    assert not out.exists()
    small_disk.free()
    rc, _, err = _build(capsys, out)  # with space again, the same command builds
    assert rc == 0, err
    Artifact.open(out, verify=True)


def test_rebuild_on_a_full_disk_keeps_the_old_artifact(small_disk: SmallDisk, capsys) -> None:
    out = small_disk.path / "g"
    rc, _, err = _build(capsys, out, "--limit", "2")
    assert rc == 0, err
    old = json.loads((out / MANIFEST).read_text())["content_hash"]
    small_disk.fill(leave=2 * PAGE)
    rc, _, err = _build(capsys, out)  # all 4 documents: another graph
    assert_one_line_error(rc, err, f"cannot write the graph artifact in {out}/.staging-", "No space left on device",
                          f"{out} keeps its previous graph")
    assert Artifact.open(out, verify=True).manifest["content_hash"] == old  # every file the one the manifest names
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]
    small_disk.free()
    rc, _, err = _build(capsys, out)
    assert rc == 0, err
    assert json.loads((out / MANIFEST).read_text())["content_hash"] != old


@pytest.fixture(scope="module")
def hotpot_graph(tmp_path_factory) -> Path:
    from harness_g.cli import main

    out = tmp_path_factory.mktemp("full-disk") / "hotpot"
    assert main(["build", "--format", "hotpotqa", "--input", str(HOTPOT), "--limit", "3", "--out", str(out), "-q"]) == 0
    return out


def test_eval_on_a_full_disk_stops_with_one_line_and_resumes(hotpot_graph: Path, small_disk: SmallDisk, capsys) -> None:
    run_dir = small_disk.path / "run"
    rc, _, err = run(capsys, "eval", hotpot_graph, "--out", run_dir, "--limit", "1", "-q")
    assert rc == 0, err
    small_disk.fill(leave=PAGE)  # the lock's line fits; the next records do not
    rc, _, err = run(capsys, "eval", hotpot_graph, "--out", run_dir, "--limit", "3", "-q")
    assert_one_line_error(rc, err, f"cannot write {run_dir}/records.jsonl: No space left on device",
                          f"the finished questions in {run_dir} are kept", "re-run the same command to resume")
    small_disk.free()
    rc, out, err = run(capsys, "eval", hotpot_graph, "--out", run_dir, "--limit", "3", "-q")
    assert rc == 0, err
    ids = [json.loads(line)["id"] for line in (run_dir / "records.jsonl").read_text().splitlines() if line.strip()]
    assert len(ids) == len(set(ids)) == 3  # each question once: the cut record was recomputed
    assert json.loads((run_dir / "summary.json").read_text())["scored"] == 3


def test_falkordb_snapshot_on_a_full_disk_names_the_reason(small_disk: SmallDisk) -> None:
    server = EmbeddedFalkorDB(small_disk.path / "store")
    try:
        import redis

        client = redis.Redis(**server.client_kwargs())
        client.execute_command("GRAPH.QUERY", "g", "UNWIND range(1, 2000) AS i CREATE (:N {i: i, s: 'some text'})")
        client.close()
        small_disk.fill(leave=0)
        with pytest.raises(StoreError) as info:
            server.save()
        message = str(info.value)
        assert message.startswith(f"cannot save FalkorDB snapshot in {small_disk.path / 'store'}: ")
        assert "No space left on device" in message and "\n" not in message, message
    finally:
        small_disk.free()
        server.stop()
