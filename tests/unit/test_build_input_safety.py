"""Inputs that used to corrupt or lose a graph, refused while reading, before anything is built: a character no
store holds (NUL, controls, lone surrogates, non-characters), a paragraph spaCy cannot take (5 MB without
whitespace), an over-long folder paragraph, repeated document ids, and inputs that exhausted the machine or ended in
a traceback (issue 28 item 9: /dev/zero, a line longer than the record limit, 50,000-deep JSON). The builds, crashes and locks around them:
tests/e2e/test_build_safety.py.
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path

import pytest
from helpers.build_corpora import DOCS, write_jsonl
from helpers.paths import TEST_DATA
from helpers.cli_checks import assert_one_line_error, run

from harness_g.errors import InputError
from harness_g.graph.readers import read_dataset
from harness_g.graph.readers.common import MAX_PARAGRAPH_CHARS, MAX_RECORD_BYTES


@pytest.mark.parametrize("char, name", [("\u0000", "NUL"), ("\u000c", "FORM FEED"), ("\u001f", "U+001F"),
                                        ("\ud800", "lone surrogate U+D800"), ("\uffff", "non-character U+FFFF")])
def test_every_reader_refuses_unstorable_characters(tmp_path: Path, char: str, name: str) -> None:
    bad = f"Alice met Bob{char} in Paris."
    # JSON Lines (ensure_ascii escapes the character, as real files do for controls and surrogates)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text(json.dumps(DOCS[0]) + "\n" + json.dumps({"id": "x", "title": "T", "text": bad}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"c\.jsonl:2: field 'text' holds .*{re.escape(name)}.* at character 13"):
        read_dataset("jsonl", jsonl)
    # a JSON array (HotpotQA): a sentence of a context paragraph
    record = {"_id": "q1", "question": "Who?", "answer": "Bob", "supporting_facts": [],
              "context": [["Alice", ["Alice is a chemist.", bad]]]}
    hotpot = tmp_path / "h.json"
    hotpot.write_text(json.dumps([record]), encoding="utf-8")
    with pytest.raises(InputError, match=rf"h\.json: record 0: field 'context\[0\]\[1\]\[1\]' holds .*{re.escape(name)}"):
        read_dataset("hotpotqa", hotpot)
    # a question field too
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": bad, "answer": "Bob"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"q\.jsonl:1: field 'question' holds .*{re.escape(name)}"):
        read_dataset("questions", questions)
    if "surrogate" in name:
        return  # a folder file is UTF-8: it cannot hold a lone surrogate
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("First paragraph.\n\nSecond line\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"a\.txt:4: holds .*{re.escape(name)}.* at column 14, "):
        read_dataset("folder", folder)


def test_tab_newline_and_cr_are_accepted(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "ok.jsonl", [{"id": "a", "text": "Alice\tmet Bob.\r\nThey went to Paris.\n"}])
    assert len(read_dataset("jsonl", jsonl).paragraphs) == 1


# -- 4. inputs a model cannot take, repeated ids -----------------------------------------------------
def test_a_5mb_paragraph_without_whitespace_is_refused_before_ner(tmp_path: Path, capsys) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text(json.dumps(DOCS[0]) + "\n" + json.dumps({"id": "blob", "text": "x" * 5_000_000}) + "\n", encoding="utf-8")
    out = tmp_path / "g"
    t0 = time.monotonic()
    rc, _, err = run(capsys, "build", "--format", "jsonl", "--input", big, "--out", out, "-q")
    assert_one_line_error(rc, err, f"{big}:2:", "5000000 characters", f"limit {MAX_PARAGRAPH_CHARS}",
                          "longest run without whitespace has 5000000")
    assert time.monotonic() - t0 < 10
    assert not out.exists()  # nothing built, no empty GRAPH_DIR left behind
    # long texts with whitespace are chunked, not refused
    long = write_jsonl(tmp_path / "long.jsonl", [{"id": "w", "text": " ".join(f"w{i}" for i in range(300_000))}])
    assert len(read_dataset("jsonl", long).paragraphs) > 200


def test_a_long_folder_paragraph_is_refused_at_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Title\n\nFirst.\n\n\nSecond\n" + "y" * (MAX_PARAGRAPH_CHARS + 1) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"a\.md:6: paragraph 'Title' has 100008 characters"):
        read_dataset("folder", folder)


def test_repeated_document_ids_keep_the_first_and_warn_once(tmp_path: Path, caplog) -> None:
    docs = [DOCS[0], DOCS[1], {**DOCS[0], "text": "Another Alice text."}, DOCS[1], DOCS[2], {**DOCS[0], "title": "Other"}]
    path = write_jsonl(tmp_path / "dups.jsonl", docs)
    with caplog.at_level(logging.WARNING):
        ds = read_dataset("jsonl", path)
    assert [p.source for p in ds.paragraphs] == ["alice", "bob", "paris"]
    assert ds.paragraphs[0].text == DOCS[0]["text"]  # the first document with the id is kept
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    assert warnings[0].startswith(f"{path}: 3 document(s) repeat an earlier id (2 distinct id(s)), 2 of them with a different "
                                  "title or text; the first document with each id is kept"), warnings
    assert "id 'alice': line 1 kept, line 3 skipped" in warnings[0]


# -- 5. inputs that exhausted the machine or ended in a traceback (issue 28 item 9) -----------------------------
def test_dev_zero_and_a_fifo_are_refused_before_anything_is_read(tmp_path: Path, capsys) -> None:
    """``--input /dev/zero`` read until the OOM killer (22.7 GB): a non-regular file is refused, naming what it is."""
    out = tmp_path / "g"
    t0 = time.monotonic()
    rc, _, err = run(capsys, "build", "--format", "jsonl", "--input", "/dev/zero", "--out", out, "-q")
    assert_one_line_error(rc, err, "/dev/zero: is not a regular file (a character device)")
    assert time.monotonic() - t0 < 30 and not out.exists()
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # opening it to read would block until a writer comes: it must not be opened at all
    with pytest.raises(InputError, match=rf"^{re.escape(str(fifo))}: is not a regular file \(a FIFO\)"):
        read_dataset("flashrag", fifo)


def test_a_line_over_the_record_limit_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    with path.open("wb") as fh:
        fh.write(json.dumps(DOCS[0]).encode() + b"\n")
        fh.write(b'{"id": "blob", "text": "' + b"x " * (MAX_RECORD_BYTES // 2) + b'"}\n')
    assert_raises_one_line(f"{path}:2: line is longer than {MAX_RECORD_BYTES} bytes, the limit for one record "
                           "(is this a JSON Lines file?)",
                           read_dataset, "jsonl", path)
    array = tmp_path / "long.json"  # a JSON array record over the limit: HotpotQA-style
    record = {"_id": "q", "question": "Who?", "answer": "x", "supporting_facts": [],
              "context": [["T", ["x " * (MAX_RECORD_BYTES // 2)]]]}
    array.write_text(json.dumps([record]), encoding="utf-8")
    assert_raises_one_line(re.compile(re.escape(f"{array}:1: record 0: malformed JSON: record is ") + r"\d+ characters "
                                      rf"long, over the limit of {MAX_RECORD_BYTES} for one record \(column 2\)"),
                           read_dataset, "hotpotqa", array)


def test_50000_deep_json_is_a_one_line_error_naming_the_file(tmp_path: Path, capsys) -> None:
    """It ended in RecursionError."""
    deep = "[" * 50_000 + "]" * 50_000
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text(json.dumps({"question": "Who?", "answers": ["x"]}) + "\n" + '{"question": "Q", "answers": '
                     + deep + "}\n", encoding="utf-8")
    out = tmp_path / "g"
    rc, _, err = run(capsys, "build", "--format", "questions", "--input", jsonl, "--corpus", f"jsonl:{CORPUS}",
                     "--out", out, "-q")
    assert_one_line_error(rc, err, f"{jsonl}:2: malformed JSON: nested too deeply")
    array = tmp_path / "deep.json"
    array.write_text("[" + deep + "]", encoding="utf-8")
    assert_raises_one_line(f"{array}:1: record 0: malformed JSON: nested too deeply (thousands of levels of "
                           "arrays/objects) (column 2)", read_dataset, "hotpotqa", array)
    top = tmp_path / "top.json"
    top.write_text('{"a":' * 50_000 + "1" + "}" * 50_000, encoding="utf-8")
    assert_raises_one_line(f"{top}: expected a JSON array of records, got JSON nested too deeply",
                           read_dataset, "hotpotqa", top)


CORPUS = TEST_DATA / "generic" / "corpus.jsonl"


def assert_raises_one_line(message: str | re.Pattern[str], fn, *args) -> None:  # noqa: ANN001
    with pytest.raises(InputError) as info:
        fn(*args)
    text = str(info.value)
    assert "\n" not in text
    assert (message.fullmatch(text) if isinstance(message, re.Pattern) else text == message), text
