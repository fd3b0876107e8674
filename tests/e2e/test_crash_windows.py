"""Crash windows and lost processes (issue 28 §8), with real SIGKILLs:

1. a SIGKILL at every filesystem step of ``publish()``: the graph directory always opens as the old artifact or the
   new one, each complete (sha256-verified), and the next build finishes or discards the interrupted publish;
2. two ``harness-g train --out RUN`` at once: the second is refused, naming the first;
3. a SIGKILLed process that started (or reused) the embedded FalkorDB: its ``redis-server`` stops (and saves) once
   the last process using it is gone, within a bounded time; a process still using it keeps it.
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

import pytest
from helpers.paths import TEST_DATA
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.graph import artifact as art
from harness_g.graph.artifact import Artifact
from harness_g.graph.locks import LOCK_FILE

# -- 1. publish --------------------------------------------------------------------------------------


def _with_digests(graph_dir: Path) -> Path:
    """The tiny artifact's manifest with each file's size and sha256, as a real build writes it (so files of
    two builds never pass for one artifact)."""
    manifest = json.loads((graph_dir / art.MANIFEST).read_text())
    art.write_manifest(graph_dir, {**manifest, "files": art.file_digests(graph_dir)})
    return graph_dir


#: In a child process: publish ``new`` over ``old`` and SIGKILL itself right before filesystem operation number K
#: (os.replace / link / unlink / rename / rmdir, as publish and shutil.rmtree call them), for K = 0, 1, ... until a
#: publish runs to the end; after each kill the parent opens the directory (sha256-verified), then lets the next
#: build's clean-up (remove_staging) run and opens it again.
PUBLISH_SWEEP = textwrap.dedent("""
    import json, os, shutil, signal, sys
    from pathlib import Path
    from harness_g.graph import artifact as art

    root = Path(sys.argv[1])

    def opened(graph_dir):
        try:
            a = art.Artifact.open(graph_dir, verify=True)
            return {"hash": a.content_hash, "questions": len(a.questions()), "rows": a.table("sentences").num_rows}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    results, k = [], 0
    while True:
        graph_dir = root / f"k{k}" / "g"
        shutil.copytree(root / "old", graph_dir)
        shutil.copytree(root / "new", graph_dir / ".staging-4242")
        pid = os.fork()
        if pid == 0:
            count = [0]
            def counting(fn):
                def op(*args, **kwargs):
                    if count[0] == k:
                        os.kill(os.getpid(), signal.SIGKILL)
                    count[0] += 1
                    return fn(*args, **kwargs)
                return op
            for name in ("replace", "link", "unlink", "rename", "rmdir"):
                setattr(os, name, counting(getattr(os, name)))
            art.publish(graph_dir / ".staging-4242", graph_dir)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        row = {"k": k, "killed": killed, "after_kill": opened(graph_dir)}
        art.remove_staging(graph_dir)  # what the next build does first, holding the lock
        row["after_cleanup"] = opened(graph_dir)
        row["left"] = sorted(p.name for p in graph_dir.iterdir())
        manifest = graph_dir / art.MANIFEST
        row["marked"] = manifest.exists() and "data_dir" in json.loads(manifest.read_text())
        results.append(row)
        if not killed or k > 200:
            break
        k += 1
    print(json.dumps(results))
""")


def test_sigkill_at_every_step_of_publish_leaves_the_old_or_the_new_artifact(tmp_path: Path) -> None:
    """Before, publish() unlinked the old manifest first: a SIGKILL before the new one was moved in left a graph
    that did not open ("no manifest.json") beside the complete new artifact in .staging-PID."""
    old = _with_digests(build_tiny_artifact(tmp_path / "old", content_hash="tiny-old"))
    new = _with_digests(build_tiny_artifact(tmp_path / "new", content_hash="tiny-new", paragraphs=("p_curie", "p_paris")))
    expected = {"tiny-old": {"hash": "tiny-old", "questions": 1, "rows": 10},
                "tiny-new": {"hash": "tiny-new", "questions": 1, "rows": 7}}
    assert Artifact.open(old, verify=True).content_hash == "tiny-old" and Artifact.open(new).content_hash == "tiny-new"
    proc = subprocess.run([sys.executable, "-c", PUBLISH_SWEEP, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) > 10 and [r["killed"] for r in rows] == [True] * (len(rows) - 1) + [False]
    for row in rows:
        seen = row["after_kill"]
        assert seen in expected.values(), f"killed before operation {row['k']}: {seen}"
        # the clean-up keeps what was committed: the new artifact once its manifest was in, else the old one
        assert row["after_cleanup"] == seen, row
        assert row["left"] == sorted([art.MANIFEST, *(n for n in art.ARTIFACT_FILES if (tmp_path / seen["hash"][5:] / n).exists())])
        assert not row["marked"], row
    hashes = [r["after_kill"]["hash"] for r in rows[:-1]]
    # the sweep crossed the commit: killed early -> old, every later kill -> new (never back to old)
    assert hashes[0] == "tiny-old" and hashes[-1] == "tiny-new"
    assert hashes == sorted(hashes, key=lambda h: h == "tiny-new")
    assert rows[-1]["after_kill"] == expected["tiny-new"]


# -- 2. one training run per run directory -----------------------------------------------------------
SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"


def _train_argv(run: Path, graph_dir: Path) -> list[str]:
    sets = {"model.name": "tiny-random", "data.graph_dir": str(graph_dir), "rollout.group_size": 2,
            "rollout.questions_per_step": 1, "rollout.max_turns": 2, "optim.steps": 200, "log.tensorboard": False}
    argv = [sys.executable, "-m", "harness_g", "train", "--out", str(run), "-q"]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    return argv


def _wait_for(check, timeout_s: float, what: str, poll_s: float = 0.1):  # noqa: ANN001, ANN202 - small test helper
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def test_a_second_train_into_the_same_run_dir_is_refused(tmp_path: Path) -> None:
    """Before, two `harness-g train --out RUN` ran side by side, both accepted, every step logged twice."""
    graph_dir, run = tmp_path / "graph", tmp_path / "run"
    subprocess.run([sys.executable, "-m", "harness_g", "build", "--format", "2wiki", "--input", str(SLICE), "--limit", "4",
                    "--out", str(graph_dir), "-q"], check=True, capture_output=True, timeout=600)
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "TOKENIZERS_PARALLELISM": "false"}
    first = subprocess.Popen(_train_argv(run, graph_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        # the first run is under way: it holds the lock, or (without one) has started training
        _wait_for(lambda: (run / LOCK_FILE).exists() and (run / LOCK_FILE).read_text().strip()
                  or (run / "config.yaml").exists() or first.poll() is not None, 180, "the first run to start")
        assert first.poll() is None, first.stderr.read()
        try:
            second = subprocess.run(_train_argv(run, graph_dir), capture_output=True, text=True, env=env, timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the second run into the same --out was accepted: still training beside the first after 120 s")
        assert second.returncode == 2, second.stderr
        err = second.stderr.strip()
        assert len(err.splitlines()) == 1 and err.startswith("harness-g: error: "), err
        assert f"{run} is in use by another harness-g process (pid {first.pid}, started" in err and " train " in err, err
        assert first.poll() is None, "the refused run disturbed the first one"
    finally:
        first.kill()
        first.wait(timeout=60)
    # the kernel dropped the killed run's lock: the directory can be taken (resumed) at once
    from harness_g.graph.locks import exclusive_lock

    with exclusive_lock(run, "--out directory"):
        pass


# -- 3. the embedded FalkorDB outlives no process that used it ---------------------------------------
#: Opens the embedded store of argv[1], writes one node when argv[2] == "write", prints the server's pid and
#: whether this process started it, then waits to be killed.
STORE_USER = textwrap.dedent("""
    import json, sys, time
    from harness_g.graph.stores.falkordb_store import FalkorDBStore
    store = FalkorDBStore.from_embedded(sys.argv[1])
    if sys.argv[2] == "write":
        store._execute("CREATE (:Marker {name: 'kept'})", None, write=True, what="test write")
    print(json.dumps({"pid": store.server.pid, "owned": store.server.owned}), flush=True)
    time.sleep(600)
""")


def _store_user(data_dir: Path, write: bool = False) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, "-c", STORE_USER, str(data_dir), "write" if write else "read"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return proc, json.loads(line)


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


#: the watchdog checks the users of a server every second; a save and shutdown of a small graph take well under one
STOP_WITHIN_S = 20.0


def test_a_sigkilled_starter_leaves_no_redis_server_behind_and_loses_nothing(tmp_path: Path) -> None:
    """Before, a SIGKILLed build, eval or train left its embedded redis-server running forever (parent gone)."""
    data_dir = tmp_path / "store"
    starter, info = _store_user(data_dir, write=True)
    assert info["owned"]
    pid = info["pid"]
    assert not _gone(pid)
    starter.kill()
    starter.wait(timeout=30)
    _wait_for(lambda: _gone(pid), STOP_WITHIN_S, f"redis-server {pid} to stop after its only user was SIGKILLed")
    from harness_g.graph.stores.falkordb_server import PID_FILE, socket_path_for
    from harness_g.graph.stores.falkordb_store import FalkorDBStore

    assert not (data_dir / PID_FILE).exists() and not socket_path_for(data_dir).exists()
    with FalkorDBStore.from_embedded(data_dir) as again:  # it saved on the way out: the write is kept
        assert again.server is not None and again.server.owned and again.server.pid != pid
        rows = again.run_cypher("MATCH (m:Marker) RETURN m.name").rows
        assert rows == [["kept"]]


def test_a_server_stays_while_a_reusing_process_lives_and_stops_after_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    starter, info = _store_user(data_dir)
    reuser, seen = _store_user(data_dir)
    try:
        assert info["owned"] and not seen["owned"] and seen["pid"] == info["pid"]
        starter.kill()
        starter.wait(timeout=30)
        time.sleep(3.0)  # three watchdog rounds: the reusing process still uses the server
        assert not _gone(info["pid"])
        third, again = _store_user(data_dir)  # a later process still attaches to the running server
        assert not again["owned"] and again["pid"] == info["pid"]
        third.kill()
        third.wait(timeout=30)
    finally:
        reuser.kill()
        reuser.wait(timeout=30)
    _wait_for(lambda: _gone(info["pid"]), STOP_WITHIN_S, "redis-server to stop after its last user was SIGKILLed")


@pytest.mark.parametrize("how", ["close", "sigterm"])
def test_a_server_stopped_normally_takes_its_watchdog_with_it(tmp_path: Path, how: str) -> None:
    """The watchdog is no extra process left behind: it exits with the server, however the server stops."""
    from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB

    server = EmbeddedFalkorDB(tmp_path / "store")
    assert server.owned and server._process is not None
    watchdog = server._process.pid
    assert server.pid != watchdog and not _gone(watchdog)
    if how == "close":
        server.stop()
    else:
        os.kill(server.pid, signal.SIGTERM)
    _wait_for(lambda: server._process.poll() is not None, 15, "the watchdog to exit with its server")
    assert _gone(server.pid)
    server.stop()
    shutil.rmtree(tmp_path / "store")
