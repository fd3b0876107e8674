"""The embedded FalkorDB's watchdog: runs ``redis-server`` as its child and stops it when no process uses it.

Every process that starts or reuses the embedded server of a data directory adds a line ``PID START`` to
``DATA_DIR/falkordb.users`` (:func:`register_user`; START is the process's start time from ``/proc``, so a reused
pid is not taken for the dead user) and removes it when it stops using the server (:func:`unregister_user`), both
holding the data directory's lock. A user killed with SIGKILL never removes its line; the watchdog does: every
``CHECK_INTERVAL_S`` seconds it takes the lock (without waiting: a process starting, stopping or attaching holds it),
drops the lines of dead processes and, when none is left, stops the server with SIGTERM (which saves the snapshot:
the server runs with ``shutdown-on-sigterm save``), removes its pid file, hand-over mark and socket, and exits.
It exits with the server's exit code when the server stops for any other reason. The server gets SIGTERM if the
watchdog itself dies (``PR_SET_PDEATHSIG``), so killing the watchdog stops the server too.

This file runs as a script (``python falkordb_watchdog.py ...``, see :func:`watchdog_argv`) and imports only the
standard library, so it starts in tens of milliseconds and holds no model or driver memory.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

USERS_FILE = "falkordb.users"
#: seconds between the watchdog's checks of the users: a server outlives its last user by about this much
CHECK_INTERVAL_S = 1.0
#: how long the watchdog waits for the server to save and exit after SIGTERM before it kills it (seconds)
STOP_TIMEOUT_S = 60.0


def pid_alive(pid: int) -> bool:
    """True when ``pid`` runs and is not a zombie (a killed, unreaped child still answers kill 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22); "-" where unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "-"


def _user_alive(line: str) -> bool:
    parts = line.split()
    if len(parts) != 2 or not parts[0].isdigit():
        return False
    pid = int(parts[0])
    return pid_alive(pid) and parts[1] in ("-", start_time(pid))


def _read_users(data_dir: Path) -> list[str]:
    try:
        return [ln.strip() for ln in (data_dir / USERS_FILE).read_text().splitlines() if ln.strip()]
    except OSError:
        return []


def _write_users(data_dir: Path, users: list[str]) -> None:
    tmp = data_dir / (USERS_FILE + ".tmp")
    tmp.write_text("".join(u + "\n" for u in users))
    os.replace(tmp, data_dir / USERS_FILE)


def register_user(data_dir: Path) -> None:
    """Add this process as a user of the server of ``data_dir`` (one line per call; call holding the dir lock)."""
    pid = os.getpid()
    _write_users(data_dir, [u for u in _read_users(data_dir) if _user_alive(u)] + [f"{pid} {start_time(pid)}"])


def unregister_user(data_dir: Path) -> None:
    """Remove one line of this process (call holding the dir lock); a missing directory is nothing to do."""
    mine = f"{os.getpid()} {start_time(os.getpid())}"
    users = _read_users(data_dir)
    if mine in users:
        users.remove(mine)
        try:
            _write_users(data_dir, users)
        except OSError:
            pass


def live_users(data_dir: Path) -> list[str]:
    """The users whose processes still run (the file is rewritten without the others; call holding the dir lock)."""
    users = _read_users(data_dir)
    live = [u for u in users if _user_alive(u)]
    if live != users:
        _write_users(data_dir, live)
    return live


def watchdog_argv(data_dir: Path, lock_file: Path, socket_path: Path, pid_file: Path, handover_file: Path,
                  server_argv: list[str]) -> list[str]:
    """The command line that runs ``server_argv`` under a watchdog for ``data_dir``."""
    return [sys.executable, "-I", str(Path(__file__).resolve()), str(data_dir), str(lock_file), str(socket_path),
            str(pid_file), str(handover_file), "--", *server_argv]


def _die_with_parent(parent: int) -> None:
    """In the server's child process before exec: SIGTERM when the watchdog dies (Linux; a no-op elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the watchdog died before the prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _remove_if_pid(path: Path, pid: int) -> None:
    try:
        if int(path.read_text().split()[0]) == pid:
            path.unlink()
    except (OSError, ValueError, IndexError):
        pass


def _stop(server: subprocess.Popen, socket_path: Path, pid_file: Path, handover_file: Path, *, save: bool) -> int:
    """SIGTERM (the server saves) or, with ``save`` False, SIGKILL; then its files go. Returns the exit code."""
    server.send_signal(signal.SIGTERM if save else signal.SIGKILL)
    try:
        server.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    if save:  # with save False the directory was deleted: the files at its path may be a new server's
        _remove_if_pid(pid_file, server.pid)
        _remove_if_pid(handover_file, server.pid)
        socket_path.unlink(missing_ok=True)
    return 0


def _dir_identity(data_dir: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(data_dir)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _round(data_dir: Path, identity: tuple[int, int] | None, lock_file: Path, server: subprocess.Popen,
           socket_path: Path, pid_file: Path, handover_file: Path) -> bool:
    """One check: under the data directory's lock (not waited for: a process starting, stopping or attaching holds
    it, and the next round checks again), stop the server when no user is left. Returns whether it stopped.

    The stop happens under the lock, so a process attaching meanwhile waits, then finds no server and starts its own.
    A deleted data directory (gone, or another directory at its path) has nothing left to save into: its server is
    killed and the files at the path, which may be a new server's, are left alone."""
    if _dir_identity(data_dir) != identity:
        _stop(server, socket_path, pid_file, handover_file, save=False)
        return True
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:  # deleted between the two checks: the next round sees it
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if server.poll() is not None or live_users(data_dir):
            return False
        _stop(server, socket_path, pid_file, handover_file, save=True)
        return True
    finally:
        os.close(fd)  # releases the lock


def watch(data_dir: Path, lock_file: Path, socket_path: Path, pid_file: Path, handover_file: Path,
          server_argv: list[str]) -> int:
    """Run the server and watch its users until it stops; returns the server's exit code (128 + signal when a
    signal ended it; 0 when the watchdog stopped it)."""
    me, identity = os.getpid(), _dir_identity(data_dir)
    # the server reads the watchdog's stdin (its starter writes the password there: never on a command line)
    server = subprocess.Popen(server_argv, stdin=None, stdout=subprocess.DEVNULL,
                              preexec_fn=lambda: _die_with_parent(me))
    signal.signal(signal.SIGTERM, lambda *_: _exit_with(server))
    while True:
        try:
            code = server.wait(CHECK_INTERVAL_S)
            return code if code >= 0 else 128 - code
        except subprocess.TimeoutExpired:
            pass
        if _round(data_dir, identity, lock_file, server, socket_path, pid_file, handover_file):
            return 0


def _exit_with(server: subprocess.Popen) -> None:
    """SIGTERM to the watchdog: pass it on (the server saves and stops), then exit with it."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        server.kill()
    os._exit(0)


def main(argv: list[str]) -> int:
    if len(argv) < 7 or argv[5] != "--":
        print("usage: falkordb_watchdog.py DATA_DIR LOCK_FILE SOCKET PID_FILE HANDOVER_FILE -- SERVER ARGS...",
              file=sys.stderr)
        return 2
    data_dir, lock_file, socket_path, pid_file, handover_file = (Path(a) for a in argv[:5])
    return watch(data_dir, lock_file, socket_path, pid_file, handover_file, argv[6:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
