"""A real Neo4j 5.26 (the LTS) on loopback, started by harness-g itself: no Docker, no installer.

The server is Neo4j's own in-process test harness (``org.neo4j.test:neo4j-harness``) with the Bolt
connector and the HTTP server (Neo4j Browser at ``/browser``), launched by the small Maven project in
``neo4j_launcher/`` (shipped as package data). The first start builds that project with Maven, which
fetches Neo4j from Maven Central into ``~/.m2`` (about 200 MB, a minute); later starts reuse the
build cached under ``$HARNESS_G_CACHE/neo4j-launcher/<hash>`` (default ``~/.cache/harness-g``) and take
10-15 s (JVM start plus database creation).

The database lives in a temporary directory that is deleted when the server stops: it is for tests,
benchmarks and trying harness-g against Neo4j (``harness-g neo4j``), not for keeping data. Loads are
idempotent and artifacts are cached in GRAPH_DIR, so re-loading a graph into a fresh server takes
seconds. The JVM is started with ``--stop-on-stdin-eof``: if the Python process that started it dies,
its stdin closes and the server stops, so nothing is left behind.

Authentication is always on: user ``neo4j`` with the configured password, or a generated one
(:attr:`LocalNeo4j.password`). The launcher reads it from a file in the server's private work directory (never
from its command line). Once the server is up, the credentials are stored for harness-g's own later commands in
``/tmp/harness-g-<uid>/neo4j-<bolt port>.json`` (mode 0600, in a folder only this user can enter; see
:mod:`harness_g.graph.stores.private`) and removed when it stops; ``connect_store`` finds them through
:func:`local_credentials` for a ``bolt://127.0.0.1:PORT`` spec when ``NEO4J_PASSWORD`` is not set. The HTTP API sends
no wildcard CORS (``Access-Control-Allow-Origin`` is the server's own origin, where Neo4j Browser is served), and
``LOAD CSV`` can read no file and fetch no URL (see ``neo4j_launcher/.../LocalNeo4j.java``).

Needs Java 17+ (``java``) and Maven (``mvn``) on PATH; without them :class:`LocalNeo4jError` says what is
missing and how to install it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Callable
from urllib.parse import urlsplit

from harness_g.errors import ConfigError, HarnessError
from harness_g.graph.locks import exclusive_lock
from harness_g.graph.stores.private import new_password, read_private, runtime_dir, write_private

#: the Neo4j version the launcher's pom pins (checked against what the server reports)
NEO4J_VERSION = "5.26.30"
READY_PREFIX = "HARNESS_G_NEO4J_READY "
FAILED_PREFIX = "HARNESS_G_NEO4J_FAILED "
_LAUNCHER_FILES = ("pom.xml", "src/main/java/dev/harnessg/LocalNeo4j.java")
_MAIN_CLASS = "dev.harnessg.LocalNeo4j"
#: how long a build waits for another process building the same launcher (a first Maven build takes ~1 min)
BUILD_LOCK_WAIT_S = 900.0
#: the one user of the local server
USER = "neo4j"
#: hosts a bolt URI may name for :func:`local_credentials` to answer (the server listens on 127.0.0.1 only)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_BOLT_PORT = 7687
#: smallest JVM heap (MiB) the server and the bulk importer are started with (``--heap-mb``): below it Neo4j 5.26's
#: in-process server and ``neo4j-admin``'s importer run out of heap before doing any work
MIN_HEAP_MB = 256
#: environment variable holding extra JVM options (whitespace-separated) for the local server and its bulk importer,
#: e.g. ``-XX:TieredStopAtLevel=1``: the JIT's first tier only, so a short-lived server starts and warms up on about
#: half the CPU (the test suite sets it; a long-running server is better off without it)
JAVA_OPTIONS_ENV = "HARNESS_G_NEO4J_JAVA_OPTIONS"
#: JVM options harness-g sets itself: the heap (``heap_mb``) and the classpath, refused among the extra options
_OWN_JAVA_OPTIONS = ("-Xmx", "-cp", "-classpath", "--class-path", "-jar")
#: where the memory limit of this process's cgroup is read (v2, then v1); the JVM sizes itself by it too
_CGROUP_MEMORY_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


class LocalNeo4jError(HarnessError):
    """Java or Maven is missing, the launcher did not build, or the server did not start."""


@dataclass(frozen=True)
class LocalNeo4jConfig:
    """How to run the local server.

    Attributes:
        bolt_port: Bolt port on 127.0.0.1; 0 = any free port.
        http_port: HTTP port on 127.0.0.1 (Neo4j Browser at ``/browser``); 0 = any free port.
        password: password of user ``neo4j``; None = a generated one (authentication is always on).
        heap_mb: JVM maximum heap in MiB, of the server and of a bulk import before it: :data:`MIN_HEAP_MB` up to
            this machine's memory (:func:`check_heap_mb`, checked at construction).
        page_cache_mb: Neo4j page cache in MiB.
        start_timeout_s: how long to wait for the server to report ready (seconds).
        java_options: extra JVM options of the server and of a bulk import before it, each starting with ``-``
            (:func:`check_java_options`); default: ``$HARNESS_G_NEO4J_JAVA_OPTIONS`` split on whitespace, else none.
    """

    bolt_port: int = 0
    http_port: int = 0
    password: str | None = None
    heap_mb: int = 1024
    page_cache_mb: int = 256
    start_timeout_s: float = 180.0
    java_options: tuple[str, ...] = field(default_factory=lambda: java_options_from_env())

    def __post_init__(self) -> None:
        check_heap_mb(self.heap_mb, "LocalNeo4jConfig.heap_mb")
        check_java_options(self.java_options, "LocalNeo4jConfig.java_options")


def java_options_from_env() -> tuple[str, ...]:
    """``$HARNESS_G_NEO4J_JAVA_OPTIONS`` split on whitespace (empty when unset), checked by
    :func:`check_java_options`."""
    return check_java_options(tuple(os.environ.get(JAVA_OPTIONS_ENV, "").split()), f"${JAVA_OPTIONS_ENV}")


def check_java_options(options: object, name: str) -> tuple[str, ...]:
    """``options`` as a tuple when each is a JVM option harness-g can pass on: a string starting with ``-`` that
    sets neither the heap (``heap_mb`` / ``--heap-mb`` does) nor the classpath or a jar (the launcher's). Else
    ConfigError, one line naming ``name`` and the option."""
    if isinstance(options, str) or not isinstance(options, (tuple, list)):
        raise ConfigError(f"{name} must be a list of JVM options such as '-XX:TieredStopAtLevel=1'; got {options!r}")
    for option in options:
        if not isinstance(option, str) or not option.startswith("-") or any(c.isspace() for c in option):
            raise ConfigError(f"{name}: a JVM option starts with '-' and has no spaces; got {option!r}")
        own = next((o for o in _OWN_JAVA_OPTIONS if option == o or (o == "-Xmx" and option.startswith(o))), None)
        if own is not None:
            what = "the heap is --heap-mb (heap_mb)" if own == "-Xmx" else "harness-g sets the classpath itself"
            raise ConfigError(f"{name}: {option!r} cannot be passed on ({what})")
    return tuple(options)


def machine_memory_mb() -> int | None:
    """This machine's memory in MiB as a JVM started here sees it: the physical memory, or the cgroup's memory limit
    when that is lower; None when neither can be read."""
    found: list[int] = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20)
    except (ValueError, OSError, AttributeError):
        pass
    for path in _CGROUP_MEMORY_LIMITS:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" (v2) means no limit; v1 writes a huge number instead
            found.append(int(text) >> 20)
        break
    found = [mb for mb in found if mb > 0]
    return min(found) if found else None


def check_heap_mb(heap_mb: object, name: str = "--heap-mb") -> int:
    """``heap_mb`` when a JVM heap of that many MiB can work here: an int from :data:`MIN_HEAP_MB` to
    :func:`machine_memory_mb` (no upper bound when the memory cannot be read). Else ConfigError, one line naming
    ``name`` (the flag or field), the allowed range and the value."""
    memory = machine_memory_mb()
    allowed = f"{MIN_HEAP_MB} to {memory} MiB (this machine's memory)" if memory else f"at least {MIN_HEAP_MB} MiB"
    if isinstance(heap_mb, bool) or not isinstance(heap_mb, int):
        raise ConfigError(f"{name} must be a whole number of MiB, {allowed}; got {heap_mb!r}")
    if heap_mb < MIN_HEAP_MB or (memory is not None and heap_mb > memory):
        raise ConfigError(f"{name} must be {allowed}; got {heap_mb}")
    return heap_mb


def cache_root() -> Path:
    root = os.environ.get("HARNESS_G_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "harness-g"


def credentials_file(bolt_port: int) -> Path:
    """Where a local server on ``bolt_port`` stores its credentials for harness-g: ``/tmp/harness-g-<uid>/neo4j-<port>.json``."""
    return runtime_dir() / f"neo4j-{int(bolt_port)}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def local_credentials(uri: str) -> tuple[str, str] | None:
    """(user, password) of the running local Neo4j that serves ``uri`` (a loopback bolt/neo4j URI), from the file it
    stored for harness-g; None for any other URI, or when no live local server stored one for that port."""
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port or DEFAULT_BOLT_PORT
    except ValueError:
        return None
    if host not in LOOPBACK_HOSTS:
        return None
    text = read_private(credentials_file(port))
    if text is None:
        return None
    try:
        record = json.loads(text)
        pid, user, password = int(record["pid"]), str(record["user"]), str(record["password"])
    except (ValueError, KeyError, TypeError):
        return None
    return (user, password) if _alive(pid) else None  # a SIGKILLed server's file names a dead JVM


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise LocalNeo4jError(f"starting a local Neo4j needs `{name}` on PATH ({hint})")
    return path


def _launcher_sources() -> dict[str, bytes]:
    root = resources.files("harness_g.graph.stores").joinpath("neo4j_launcher")
    sources = {}
    for rel in _LAUNCHER_FILES:
        node = root
        for part in rel.split("/"):
            node = node.joinpath(part)
        sources[rel] = node.read_bytes()
    return sources


def launcher_dir() -> Path:
    """Where the launcher for these sources is (or will be) built: one directory per source hash."""
    sources = _launcher_sources()
    digest = hashlib.sha256(b"".join(k.encode() + b"\0" + v for k, v in sorted(sources.items()))).hexdigest()[:16]
    return cache_root() / "neo4j-launcher" / digest


def build_launcher(*, quiet: bool = True) -> tuple[Path, str]:
    """Build the launcher once (Maven fetches Neo4j from Maven Central); returns (classes dir, classpath).

    Concurrent callers wait on the build directory's lock (:mod:`harness_g.graph.locks`), so two test sessions
    never build into one directory at once.
    """
    _require_tool("java", "install a Java 17+ runtime, e.g. `apt-get install openjdk-17-jre-headless`")
    directory = launcher_dir()
    classes, classpath_file = directory / "target" / "classes", directory / "target" / "classpath.txt"
    done = directory / "BUILT"
    if not done.exists():
        mvn = _require_tool("mvn", "install Maven, e.g. `apt-get install maven`")
        # another process building the same launcher (a second test session) finishes first; then ours is done
        with exclusive_lock(directory, "Neo4j launcher build directory", wait_s=BUILD_LOCK_WAIT_S):
            if not done.exists():
                for rel, data in _launcher_sources().items():
                    target = directory / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                if not quiet:
                    print(f"neo4j: fetching Neo4j {NEO4J_VERSION} from Maven Central and building the launcher "
                          f"(first time only, ~1 min) in {directory}", flush=True)
                cmd = [mvn, "-B", "-q", "-f", str(directory / "pom.xml"), "package", "-DskipTests"]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
                    raise LocalNeo4jError(f"Maven could not build the Neo4j launcher in {directory} "
                                          f"(exit {proc.returncode}; is Maven Central reachable?): {tail}")
                done.write_text(NEO4J_VERSION + "\n", encoding="utf-8")
    return classes, classpath_file.read_text(encoding="utf-8").strip()


class LocalNeo4j:
    """One running local Neo4j server. Use as a context manager, or call :meth:`start` / :meth:`stop`.

    >>> with LocalNeo4j() as neo4j:          # doctest: +SKIP
    ...     store = Neo4jStore(neo4j.bolt_uri)
    """

    def __init__(self, config: LocalNeo4jConfig | None = None, *, quiet: bool = True,
                 seed: Callable[[Path, str], Path] | None = None):
        """``seed``: fills the database before the server starts, instead of a fresh empty one: called by :meth:`start`
        with (an empty directory inside the server's work directory, the launcher's Java classpath), it writes a Neo4j
        data directory there (``neo4j-admin database import full``: :mod:`~harness_g.graph.stores.neo4j_bulk`) and
        returns it; the server opens it, and :meth:`stop` deletes it with the rest of the work directory."""
        self.config = config or LocalNeo4jConfig()
        self.quiet = quiet
        self._seed = seed
        #: user and password every client must present (the password is generated when the config names none)
        self.user = USER
        self.password = self.config.password or new_password()
        #: where the credentials are stored for harness-g's own commands while the server runs
        self.credentials_path: Path | None = None
        self.bolt_uri: str = ""
        self.http_uri: str = ""
        self.version: str = ""
        self._proc: subprocess.Popen[str] | None = None
        self._workdir: Path | None = None
        self._log_tail: list[str] = []

    @property
    def browser_url(self) -> str:
        return f"{self.http_uri}/browser/"

    @property
    def auth(self) -> tuple[str, str]:
        """(user, password), e.g. for ``neo4j.GraphDatabase.driver(uri, auth=server.auth)``."""
        return self.user, self.password

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> "LocalNeo4j":
        if self.running:
            return self
        for name, port in (("Bolt", self.config.bolt_port), ("HTTP", self.config.http_port)):
            if port and _port_in_use(port):  # fail now, not after a JVM start
                raise LocalNeo4jError(f"{name} port {port} on 127.0.0.1 is in use (another Neo4j?); "
                                      "choose another port, or 0 for any free one")
        classes, classpath = build_launcher(quiet=self.quiet)
        java = _require_tool("java", "install a Java 17+ runtime")
        self._workdir = Path(tempfile.mkdtemp(prefix="harness-g-neo4j-"))  # mode 0700
        data_dir = self._seed_database(classpath)
        password_file = self._workdir / "password"  # the launcher reads it, then deletes it
        write_private(password_file, self.password + "\n")
        cmd = self.server_command(java, f"{classes}{os.pathsep}{classpath}", self._workdir, password_file, data_dir)
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, encoding="utf-8", errors="replace", start_new_session=True)
        ready = self._wait_ready(self._proc.stdout, self.config.start_timeout_s)
        self.bolt_uri, self.http_uri, self.version = ready["bolt"], ready["http"], ready["version"]
        self._store_credentials()
        # keep draining the server's output so a chatty log never blocks it on a full pipe
        threading.Thread(target=self._drain, args=(self._proc.stdout,), daemon=True, name="neo4j-log").start()
        return self

    def server_command(self, java: str, classpath: str, workdir: Path, password_file: Path,
                       data_dir: Path | None = None) -> list[str]:
        """The launcher's command line: the JVM (heap ``heap_mb``, serial GC, then ``java_options``), the launcher's
        class over ``classpath``, and its flags (work directory, ports, page cache, password file, ``data_dir`` when
        the database was seeded)."""
        cfg = self.config
        cmd = [java, f"-Xmx{cfg.heap_mb}m", "-XX:+UseSerialGC", *cfg.java_options, "-cp", classpath, _MAIN_CLASS,
               "--dir", str(workdir), "--bolt-port", str(cfg.bolt_port), "--http-port", str(cfg.http_port),
               "--page-cache-mb", str(cfg.page_cache_mb), "--password-file", str(password_file), "--stop-on-stdin-eof"]
        return cmd + ["--data-dir", str(data_dir)] if data_dir is not None else cmd

    def _seed_database(self, classpath: str) -> Path | None:
        """Run the ``seed`` callback (see ``__init__``) in ``WORKDIR/seed``: the data directory it wrote, or None
        without one. A seed that fails removes the work directory and re-raises."""
        if self._seed is None:
            return None
        assert self._workdir is not None
        seed_dir = self._workdir / "seed"
        seed_dir.mkdir()
        try:
            return self._seed(seed_dir, classpath)
        except BaseException:
            self.stop()
            raise

    def _store_credentials(self) -> None:
        """Write the credentials file of :func:`credentials_file` (0600) for harness-g's later commands."""
        assert self._proc is not None
        path = credentials_file(int(self.bolt_uri.rsplit(":", 1)[1]))
        record = {"bolt": self.bolt_uri, "http": self.http_uri, "user": self.user, "password": self.password,
                  "pid": self._proc.pid}
        write_private(path, json.dumps(record) + "\n")
        self.credentials_path = path

    def _remove_credentials(self) -> None:
        """Delete the credentials file, unless another server has taken the port (and the file) since."""
        path, self.credentials_path = self.credentials_path, None
        if path is None:
            return
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("password") == self.password:
                path.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass

    def _wait_ready(self, stream: IO[str] | None, timeout_s: float) -> dict[str, str]:
        assert stream is not None and self._proc is not None
        found: dict[str, str] = {}

        failure: list[str] = []

        def read() -> None:
            for line in stream:
                if line.startswith(READY_PREFIX):
                    found.update(json.loads(line[len(READY_PREFIX):]))
                    return
                if line.startswith(FAILED_PREFIX):  # the launcher's own one-line reason (root cause)
                    failure.append(line[len(FAILED_PREFIX):].strip())
                    return
                self._log_tail = (self._log_tail + [line.rstrip()])[-20:]

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not found:
            code = self._proc.poll()
            self.stop()
            if failure:
                raise LocalNeo4jError(f"local Neo4j failed to start: {failure[0]}")
            tail = " | ".join(line for line in self._log_tail[-6:] if line.strip())
            why = f"exited with code {code}" if code is not None else f"not ready after {timeout_s:.0f} s"
            raise LocalNeo4jError(f"local Neo4j {why}: {tail or 'no output'}")
        return found

    def _drain(self, stream: IO[str] | None) -> None:
        if stream is None:
            return
        for line in stream:
            self._log_tail = (self._log_tail + [line.rstrip()])[-20:]

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server (closing its stdin, then SIGTERM, then SIGKILL), delete its database and its stored
        credentials."""
        self._remove_credentials()
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=timeout_s)
            except (subprocess.TimeoutExpired, OSError):
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> "LocalNeo4j":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalNeo4j(bolt={self.bolt_uri!r}, http={self.http_uri!r}, running={self.running})"

