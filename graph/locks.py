"""One writer per directory: an exclusive, non-blocking ``fcntl.flock`` on ``DIR/.lock``.

``harness-g build`` (and the load that follows it) holds ``GRAPH_DIR/.lock``; ``harness-g eval``
holds ``RUN_DIR/.lock`` for the whole run. A second writer is refused at once with a one-line
:class:`BusyError` naming the holder: its pid, start time and command line, which the holder
writes into the lock file once it has the lock.

The kernel drops a flock when its holder dies (even on SIGKILL), so there is no stale lock to
clean up: the lock file itself stays (it is never deleted, which would let two processes lock
two different inodes) and only its content says who held it last. Within one process the lock
is re-entrant (a build that loads, or a caller wrapping several steps, takes it once per
nesting level); another thread of the same process shares it.
"""
from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from harness_g.errors import HarnessError

LOCK_FILE = ".lock"

_held: dict[Path, list] = {}  # resolved dir -> [fd, depth]
_guard = threading.Lock()


class BusyError(HarnessError):
    """Another process holds the directory's lock."""


def _holder_line() -> str:
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime())
    cmd = " ".join([os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python", *sys.argv[1:]])
    cmd = " ".join(cmd.split())  # one line, whatever the arguments held
    if len(cmd) > 300:
        cmd = cmd[:297] + "..."
    return f"pid {os.getpid()}, started {started}, command: {cmd}"


def _read_holder(fd: int) -> str:
    for _ in range(10):  # the holder writes its line right after locking: give it a moment
        try:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        if text:
            return " ".join(text.split())
        time.sleep(0.02)
    return "holder unknown (it has just started)"


def _flock_within(fd: int, wait_s: float, on_wait: Callable[[str], None] | None) -> None:
    """Take the flock, retrying for up to ``wait_s`` seconds (0 = one try); BlockingIOError when still held."""
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise
            if on_wait is not None and not told:
                on_wait(_read_holder(fd))
                told = True
            time.sleep(0.2)


@contextmanager
def exclusive_lock(directory: str | Path, what: str = "directory", *, wait_s: float = 0.0,
                   on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold ``directory/.lock`` (the directory is created) for the ``with`` block, or raise BusyError.

    ``wait_s`` > 0 waits up to that many seconds for the holder to finish (``on_wait(holder)`` is called
    once when waiting starts): for work that is safe to do after the holder, such as an idempotent load.
    """
    root = Path(directory)
    if root.exists() and not root.is_dir():
        from harness_g.errors import InputError

        raise InputError("exists and is not a directory", str(root))
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    key = root.resolve()
    with _guard:
        entry = _held.get(key)
        if entry is not None:
            entry[1] += 1
        else:
            fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                _flock_within(fd, wait_s, on_wait)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise BusyError(f"{root} is in use by another harness-g process ({holder}); "
                                f"wait for it to finish or use another {what}") from None
            except BaseException:
                os.close(fd)
                raise
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, (_holder_line() + "\n").encode("utf-8"), 0)
            except OSError as exc:  # a full disk: one line naming the file, and no directory left behind
                os.close(fd)
                if created:
                    _remove_if_only_the_lock(key)
                from harness_g.errors import HarnessError, os_error_reason

                raise HarnessError(f"cannot write the lock file {key / LOCK_FILE}: {os_error_reason(exc)}") from exc
            _held[key] = entry = [fd, 1]
    failed = True
    try:
        yield key
        failed = False
    finally:
        with _guard:
            entry[1] -= 1
            if entry[1] == 0:
                del _held[key]
                try:
                    os.ftruncate(entry[0], 0)  # nobody holds it now
                finally:
                    os.close(entry[0])  # closing the only descriptor releases the flock
        if failed and created:
            _remove_if_only_the_lock(key)


def _remove_if_only_the_lock(directory: Path) -> None:
    """A directory this lock created for work that then failed (e.g. a typo in --format) is not left behind."""
    try:
        if {p.name for p in directory.iterdir()} <= {LOCK_FILE}:
            (directory / LOCK_FILE).unlink(missing_ok=True)
            directory.rmdir()
    except OSError:
        pass  # someone else started using it: leave it
