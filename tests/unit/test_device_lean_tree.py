"""``benchmarks/device/lean_tree.sh``: the committed results leave what a device call sends (git's tracked and
untracked-not-ignored files, as ``carry.tree_bytes`` counts them) and come back unchanged; every refusal changes
nothing. Run in a real temporary git repository holding a copy of the script."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from helpers.paths import REPO_ROOT, load_script


def _git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _lean(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(repo / "benchmarks/device/lean_tree.sh"), *args], capture_output=True, text=True)


@pytest.fixture()
def repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "benchmarks/device").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "benchmarks/device/lean_tree.sh", repo / "benchmarks/device/lean_tree.sh")
    (repo / "code.py").write_text("x = 1\n")
    for i in range(5):  # a result folder: small files, each one 4 KiB block on the device's count
        (repo / "benchmarks/results/run/cache").mkdir(parents=True, exist_ok=True)
        (repo / f"benchmarks/results/run/cache/q{i}.json.gz").write_bytes(os.urandom(3000))
    (repo / "benchmarks/results/page.html").write_text("<p>page</p>")
    _git(repo.parent, "init", "-q", str(repo))
    for key, value in (("user.email", "t@example.org"), ("user.name", "t"), ("commit.gpgsign", "false")):
        _git(repo, "config", key, value)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def test_hide_takes_results_out_of_what_travels_and_restore_brings_them_back(repo) -> None:
    carry = load_script("benchmarks/device/carry.py")
    before = carry.tree_bytes(repo)
    snapshot = {p: (repo / p).read_bytes() for p in _git(repo, "ls-files").split()}
    done = _lean(repo, "hide")
    assert done.returncode == 0, done.stderr
    assert "hid 6 tracked file(s)" in done.stdout
    assert not (repo / "benchmarks/results").exists()
    assert carry.tree_bytes(repo) == before - 6 * 4096  # six files of one block each no longer sent
    assert _git(repo, "ls-files", "-co", "--exclude-standard", "--", "benchmarks/results") == ""
    assert "hidden: benchmarks/results" in _lean(repo, "status").stdout
    assert _git(repo, "rev-parse", "HEAD").strip() in _lean(repo, "status").stdout
    back = _lean(repo, "restore")
    assert back.returncode == 0, back.stderr
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # clean: nothing staged, nothing new
    assert {p: (repo / p).read_bytes() for p in snapshot} == snapshot
    assert carry.tree_bytes(repo) == before
    assert _lean(repo, "status").stdout.strip() == "not hidden"


def test_hide_refused_with_nothing_removed_when_results_differ_from_head(repo) -> None:
    (repo / "benchmarks/results/run/new.json").write_text("{}")  # an untracked result: it would travel anyway
    done = _lean(repo, "hide")
    assert done.returncode == 1
    assert done.stderr.strip() == ("lean_tree: benchmarks/results: 1 changed or untracked file(s); commit or move "
                                   "them first (nothing hidden)")
    assert (repo / "benchmarks/results/run/cache/q0.json.gz").is_file()
    assert _git(repo, "status", "--porcelain") == "?? benchmarks/results/run/new.json\n"
    (repo / "benchmarks/results/run/new.json").unlink()
    (repo / "benchmarks/results/page.html").write_text("<p>edited</p>")  # a change not committed: would be lost
    assert _lean(repo, "hide").returncode == 1
    assert (repo / "benchmarks/results/page.html").read_text() == "<p>edited</p>"


def test_second_hide_and_restore_without_hide_refused(repo) -> None:
    none = _lean(repo, "restore")
    assert none.returncode == 1 and none.stderr.startswith("lean_tree: nothing hidden")
    assert _lean(repo, "hide").returncode == 0
    again = _lean(repo, "hide")
    assert again.returncode == 1 and "already hidden at" in again.stderr
    assert _lean(repo, "restore").returncode == 0
    wrong = _lean(repo, "unhide")
    assert wrong.returncode == 1 and wrong.stderr.strip() == "lean_tree: usage: lean_tree.sh hide|restore|status (got 'unhide')"


def test_restore_refused_when_files_were_written_there_meanwhile(repo) -> None:
    assert _lean(repo, "hide").returncode == 0
    (repo / "benchmarks/results/run").mkdir(parents=True)
    (repo / "benchmarks/results/run/learn.json").write_text('{"new": true}')  # a lease's result, unpacked too early
    refused = _lean(repo, "restore")
    assert refused.returncode == 1
    assert "1 file(s) written there while hidden" in refused.stderr
    assert (repo / "benchmarks/results/run/learn.json").read_text() == '{"new": true}'
    assert not (repo / "benchmarks/results/run/cache").exists()  # nothing restored over it
    (repo / "benchmarks/results/run/learn.json").unlink()
    assert _lean(repo, "restore").returncode == 0
    assert (repo / "benchmarks/results/run/cache/q4.json.gz").is_file()


def test_commit_made_while_hidden_loses_nothing_on_restore(repo) -> None:
    head = _git(repo, "rev-parse", "HEAD").strip()
    assert _lean(repo, "hide").returncode == 0
    (repo / "code.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "made while hidden: deletes the results too")
    assert _git(repo, "ls-files", "benchmarks/results") == ""
    assert _lean(repo, "restore").returncode == 0
    assert _git(repo, "diff", "--cached", "--name-only", "--diff-filter=A").split() == sorted(
        _git(repo, "ls-tree", "-r", "--name-only", head, "benchmarks/results").split())  # staged to be re-added
    assert (repo / "benchmarks/results/page.html").read_text() == "<p>page</p>"


def test_hide_refused_when_lean_paths_hold_no_tracked_file(repo) -> None:
    env = {**os.environ, "LEAN_PATHS": "benchmarks/nothing-here"}
    done = subprocess.run(["bash", str(repo / "benchmarks/device/lean_tree.sh"), "hide"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == "lean_tree: benchmarks/nothing-here: no tracked files to hide"
    assert "not hidden" in _lean(repo, "status").stdout  # no mark left behind
    assert _git(repo, "status", "--porcelain") == ""
