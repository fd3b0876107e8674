"""``harness-g neo4j`` as a user runs it in the foreground: read what it prints until it says how to stop it."""
from __future__ import annotations

import subprocess
import time


def wait_until_ready(server: subprocess.Popen, timeout_s: float = 240) -> str:
    """The lines ``server`` printed up to its ``stop`` line (the server is then up), as one string; fails naming
    what it printed when it exits or ``timeout_s`` passes first."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    assert server.stdout is not None
    while not any(line.strip().startswith("stop") for line in lines):
        line = server.stdout.readline()
        assert line and time.monotonic() < deadline, f"harness-g neo4j did not come up: {lines}"
        lines.append(line)
    return "".join(lines)
