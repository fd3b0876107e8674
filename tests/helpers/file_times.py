"""Per-file wall times of a test run, so the suite's schedule can be measured and balanced.

With ``HARNESS_G_TEST_FILE_TIMES=PATH`` set, the controlling pytest process (the xdist controller, or the only
process with ``-n 0``) writes ``PATH`` when the session ends: one JSON object per test file (its path relative to
the repository root), with

- ``seconds``: the sum of its tests' setup, call and teardown durations (s). Session and module fixtures count in
  the test that first needs them, so a file that starts the worker's Neo4j carries that start-up;
- ``worker``: the xdist worker that ran it (``gw0``, ``gw1``; ``main`` without xdist);
- ``start`` / ``stop``: wall-clock seconds since the session started, of its first test's start and its last test's
  end;
- ``tests``: how many test reports of the call phase it had.

``python tests/helpers/file_times.py PATH`` prints per worker its busy seconds and when its last file ended (how
even the schedule was), and the heaviest files. Measured on 2026-12-04 (a CI-like `.ci/run` of 9af0e79 on a quiet
2-core host): gw0 busy 650 s, last file ended at 678 s; gw1 658 s, 685 s: xdist's ``loadfile`` order left 7 s of
imbalance, so it is kept as it is.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: where the controller writes the per-file times; unset: nothing is recorded
FILE_TIMES_ENV = "HARNESS_G_TEST_FILE_TIMES"

_SESSION_START = time.time()
_FILES: dict[str, dict[str, Any]] = {}


def record(report: pytest.TestReport) -> None:
    """Add one report (any phase) to its file's entry."""
    path = report.nodeid.split("::", 1)[0]
    node = getattr(report, "node", None)  # the xdist WorkerController on the controller
    worker = node.gateway.id if node is not None else "main"
    entry = _FILES.setdefault(path, {"seconds": 0.0, "worker": worker, "start": None, "stop": None, "tests": 0})
    entry["seconds"] += float(report.duration)
    start, stop = getattr(report, "start", None), getattr(report, "stop", None)
    if start is not None:
        rel = start - _SESSION_START
        entry["start"] = rel if entry["start"] is None else min(entry["start"], rel)
    if stop is not None:
        rel = stop - _SESSION_START
        entry["stop"] = rel if entry["stop"] is None else max(entry["stop"], rel)
    if report.when == "call":
        entry["tests"] += 1


def write(config: pytest.Config) -> None:
    """Write the recorded times to ``$HARNESS_G_TEST_FILE_TIMES`` (controller only)."""
    out = os.environ.get(FILE_TIMES_ENV)
    if not out or hasattr(config, "workerinput"):
        return
    rounded = {path: {k: (round(v, 2) if isinstance(v, float) else v) for k, v in entry.items()}
               for path, entry in sorted(_FILES.items())}
    Path(out).write_text(json.dumps(rounded, indent=1) + "\n", encoding="utf-8")


def worker_summary(times: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per worker: ``files``, ``busy`` (summed file seconds) and ``last_stop`` (when its last file ended, s)."""
    out: dict[str, dict[str, float]] = {}
    for entry in times.values():
        row = out.setdefault(entry["worker"], {"files": 0, "busy": 0.0, "last_stop": 0.0})
        row["files"] += 1
        row["busy"] = round(row["busy"] + entry["seconds"], 2)
        row["last_stop"] = max(row["last_stop"], entry["stop"] or 0.0)
    return dict(sorted(out.items()))


if __name__ == "__main__":  # python tests/helpers/file_times.py TIMES.json
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/helpers/file_times.py TIMES.json  (a $HARNESS_G_TEST_FILE_TIMES file)")
    recorded = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    for worker, row in worker_summary(recorded).items():
        print(f"{worker}: {row['files']} files, busy {row['busy']:.0f} s, last file ended at {row['last_stop']:.0f} s")
    for path, entry in sorted(recorded.items(), key=lambda kv: -kv[1]["seconds"])[:10]:
        print(f"  {entry['seconds']:7.1f} s  {entry['tests']:3d} tests  {entry['worker']}  {path}")
