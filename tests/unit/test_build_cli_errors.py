"""`harness-g build` input errors and the bare `harness-g` help, through ``harness_g.cli.main`` (in-process): each
refused before anything is read or built (the builds themselves: tests/e2e/test_build_cli.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run

from graph_fixtures import HOTPOT_FILE, TRIVIAQA_FILE


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["--format", "nope", "--input", HOTPOT_FILE], ["unknown format 'nope'", "hotpotqa", "musique", "triviaqa", "2wiki"]),
        (["--format", "hotpotqa", "--input", "/no/such/file.json"], ["/no/such/file.json"]),
        (["--format", "triviaqa", "--input", TRIVIAQA_FILE], ["empty corpus", "--corpus FORMAT:PATH"]),
        (["--input", HOTPOT_FILE], ["--input needs --format"]),
        (["--corpus", "hotpotqa"], ["--corpus expects FORMAT:PATH"]),
        (["--format", "hotpotqa", "--input", HOTPOT_FILE, "--store", "bogus"], ["malformed store spec 'bogus'", "embedded:PORT"]),
        (["--format", "hotpotqa", "--input", HOTPOT_FILE, "--store", "embedded:99999"], ["port '99999'"]),
    ],
)
def test_build_input_errors(tmp_path: Path, capsys, argv: list, needles: list[str]) -> None:
    out = tmp_path / "g"
    rc, _, err = run(capsys, "build", *argv, "--out", out, "-q")
    assert_one_line_error(rc, err, *needles)
    assert not (out / "manifest.json").exists()  # nothing was built


def test_no_command_prints_help(capsys) -> None:
    rc, stdout, _ = run(capsys)
    assert rc == 2 and "usage: harness-g" in stdout and "build" in stdout and "eval" in stdout
