"""``benchmarks/device/carry.py``: files bigger than one device call travel in numbered folders and come back
byte-identical, one folder per call, each call's folder gone before the next (as the device tool removes it)."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers.paths import load_script


def _carry():
    return load_script("benchmarks/device/carry.py")


@pytest.fixture()
def source(tmp_path):
    src = tmp_path / "src"
    (src / "model" / "__pycache__").mkdir(parents=True)
    (src / "model" / "weights.bin").write_bytes(os.urandom(2500))  # split over three folders of 1,000 bytes
    (src / "model" / "config.json").write_text('{"a": 1}')
    (src / "model" / "empty.txt").write_bytes(b"")
    (src / "model" / "__pycache__" / "x.pyc").write_bytes(b"cache")  # never carried
    (src / "graph" / "store").mkdir(parents=True)
    (src / "graph" / "manifest.json").write_text("{}")
    (src / "graph" / "store" / "dump.rdb").write_bytes(b"running store")  # never carried
    (src / "one.gguf").write_bytes(os.urandom(700))
    return src


def test_folders_unpacked_one_per_call_rebuild_every_file(source, tmp_path) -> None:
    carry = _carry()
    out, dest = tmp_path / ".carry", tmp_path / "dc"
    items = [f"m={source / 'model'}", f"g={source / 'graph'}", f"llm/one.gguf={source / 'one.gguf'}"]
    k = carry.pack(items, out, budget=1000, block=1)
    assert k == 4  # 2,500 + 8 + 0 + 2 + 700 bytes in folders of 1,000
    assert all(sum(p.stat().st_size for p in (out / str(i)).iterdir() if p.name != carry.MANIFEST) <= 1000
               for i in range(1, k + 1))
    for i in range(1, k + 1):
        call = tmp_path / f"call{i}"  # the device tool's copy of this call's folder, removed after the call
        shutil.copytree(out / str(i), call)
        done, missing = carry.unpack(call, dest)
        shutil.rmtree(call)
        assert bool(missing) == (i < k)
    assert sorted(done) == ["g/manifest.json", "llm/one.gguf", "m/config.json", "m/empty.txt", "m/weights.bin"]
    assert (dest / "m" / "weights.bin").read_bytes() == (source / "model" / "weights.bin").read_bytes()
    assert (dest / "llm" / "one.gguf").read_bytes() == (source / "one.gguf").read_bytes()
    assert (dest / "m" / "empty.txt").read_bytes() == b""
    assert not (dest / "m" / "__pycache__").exists() and not (dest / "g" / "store").exists()


def test_a_missing_folder_is_named_and_require_complete_fails(source, tmp_path, capsys) -> None:
    carry = _carry()
    out, dest = tmp_path / ".carry", tmp_path / "dc"
    carry.pack([f"m={source / 'model'}"], out, budget=1000, block=1)
    assert carry.main(["unpack", "--from", str(out / "1"), "--dest", str(dest)]) == 0
    rc = carry.main(["unpack", "--from", str(out / "3"), "--dest", str(dest), "--require-complete"])
    assert rc == 1
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert "m/weights.bin (folders [2])" in line, line


def test_a_corrupted_part_is_refused_in_one_line_and_keeps_the_finished_files(source, tmp_path, capsys) -> None:
    carry = _carry()
    out, dest = tmp_path / ".carry", tmp_path / "dc"
    carry.pack([f"g={source / 'graph'}", f"m={source / 'model'}"], out, budget=1000, block=1)
    manifest = json.loads((out / "1" / carry.MANIFEST).read_text())
    weights = next(f for f in manifest["files"] if f["path"] == "m/weights.bin")
    last = weights["parts"][-1]
    part = out / str(last["folder"]) / last["name"]
    part.write_bytes(bytes(b ^ 0xFF for b in part.read_bytes()))  # same size, other bytes
    for i in range(1, manifest["folders"]):
        assert carry.main(["unpack", "--from", str(out / str(i)), "--dest", str(dest)]) == 0
    rc = carry.main(["unpack", "--from", str(out / str(manifest["folders"])), "--dest", str(dest)])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err == "carry: error: m/weights.bin: sha256 of the assembled file does not match the manifest"
    assert (dest / "g" / "manifest.json").read_text() == "{}"  # what was assembled before stays
    assert not (dest / "m" / "weights.bin").exists()


def test_bad_items_are_one_line_errors(tmp_path, capsys) -> None:
    carry = _carry()
    assert carry.main(["pack", "no-equals-sign", "--out", str(tmp_path / "c"), "--budget-mb", "1"]) == 1
    assert capsys.readouterr().err.strip() == "carry: error: item 'no-equals-sign' is not NAME=PATH"
    assert carry.main(["pack", f"x={tmp_path / 'nope'}", "--out", str(tmp_path / "c"), "--budget-mb", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_folders_fit_the_budget_counted_in_disk_blocks(tmp_path):
    """The device counts what travels in whole 4 KiB blocks: many small files must not overflow a folder whose bytes
    alone would fit (2026-12-04: a tree of 14.8 MB in bytes was 20.4 MB in blocks and the call was refused)."""
    carry = _carry()
    source = tmp_path / "many"
    source.mkdir()
    for i in range(40):
        (source / f"f{i:02d}.txt").write_bytes(b"x" * 100)  # 4,000 bytes, 40 blocks
    out = tmp_path / "carry"
    k = carry.pack([f"s={source}"], out, budget=10 * carry.BLOCK)
    assert k == 4  # 10 one-block parts per folder, not all 40 in the first
    for folder in range(1, k + 1):
        parts = [p for p in (out / str(folder)).iterdir() if p.name != carry.MANIFEST]
        assert sum(carry.on_disk(p.stat().st_size) for p in parts) <= 10 * carry.BLOCK
