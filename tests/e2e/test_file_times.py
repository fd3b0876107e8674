"""``HARNESS_G_TEST_FILE_TIMES`` (tests/helpers/file_times.py) on real pytest-xdist workers: a toy suite of two
files run by two workers, timed by our conftest's hooks on the controller."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.file_times import worker_summary
from helpers.paths import REPO_ROOT

CONFTEST = f"""
import os, sys
sys.path.insert(0, {str(REPO_ROOT / "tests")!r})
from helpers import file_times

def pytest_runtest_logreport(report):
    file_times.record(report)

def pytest_sessionfinish(session):
    file_times.write(session.config)
"""


def test_the_controller_writes_each_files_time_worker_and_span(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_slow.py").write_text("import time\ndef test_a():\n    time.sleep(1.0)\n"
                                           "def test_b():\n    time.sleep(0.5)\n", encoding="utf-8")
    (tmp_path / "test_quick.py").write_text("def test_c():\n    assert True\n", encoding="utf-8")
    out = tmp_path / "times.json"
    env = {**os.environ, "HARNESS_G_TEST_FILE_TIMES": str(out)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p",
                           "no:cacheprovider", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    times = json.loads(out.read_text(encoding="utf-8"))
    assert set(times) == {"test_slow.py", "test_quick.py"}
    slow, quick = times["test_slow.py"], times["test_quick.py"]
    assert slow["tests"] == 2 and quick["tests"] == 1
    assert 1.5 <= slow["seconds"] < 10 and quick["seconds"] < 1.0
    # start and stop are each rounded to 0.01 s, so their difference may fall up to 0.01 s short of the 1.5 s slept
    # (CI once read 2.26 - 0.76, which is 1.4999999999999998 in floating point)
    assert slow["stop"] - slow["start"] >= 1.5 - 0.011
    assert {slow["worker"], quick["worker"]} <= {"gw0", "gw1"}
    summary = worker_summary(times)
    assert sum(row["files"] for row in summary.values()) == 2
    assert max(row["last_stop"] for row in summary.values()) == max(slow["stop"], quick["stop"])
