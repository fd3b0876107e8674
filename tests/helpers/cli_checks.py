"""Run ``harness-g`` in-process and check its one-line errors (shared by the CLI tests)."""
from __future__ import annotations

from harness_g.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:  # noqa: ANN001 - pytest's capsys
    """``harness-g ARGV`` in this process: (exit code, stdout, stderr)."""
    rc = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def assert_one_line_error(rc: int, err: str, *needles: str) -> None:
    """Exit code 2 and exactly one ``harness-g: error: …`` line containing every needle."""
    assert rc == 2, err
    assert err.startswith("harness-g: error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
