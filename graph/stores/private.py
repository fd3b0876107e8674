"""Private files of the local servers harness-g starts: generated passwords, the folder of FalkorDB sockets and of
local Neo4j credentials.

The runtime folder is ``/tmp/harness-g-<uid>/``: owned by this user and mode 0700 (a folder of that name that
another user owns is refused; one of ours with a wider mode is narrowed). Password files are written mode 0600 from
the first byte (``O_CREAT | O_EXCL`` with mode 0600, then an atomic rename), so no other user can ever read them;
a password file that others can read is refused rather than trusted.
"""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from harness_g.errors import StoreError

#: bytes of randomness in a generated password (URL-safe base64: 32 characters)
PASSWORD_BYTES = 24


def new_password() -> str:
    """A fresh random password (32 URL-safe characters)."""
    return secrets.token_urlsafe(PASSWORD_BYTES)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` mode 0700 (parents as needed), or check an existing one: it must be a folder this user owns
    (not a symlink); a wider mode is narrowed to 0700. Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path} is not a folder (a private folder for harness-g's server files is expected there)")
    if info.st_uid != os.getuid():
        raise StoreError(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}): harness-g keeps "
                         "server passwords and sockets there; remove it or set TMPDIR elsewhere")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def runtime_dir() -> Path:
    """``/tmp/harness-g-<uid>/``, created or checked by :func:`ensure_private_dir`."""
    return ensure_private_dir(Path("/tmp") / f"harness-g-{os.getuid()}")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable and writable by this user only (0600), atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_private(path: Path) -> str | None:
    """The text of a private file, None when it does not exist. Refuses one that other users can read or write, or
    that another user owns (its content could have been planted)."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise StoreError(f"{path} must be mode 0600 and yours (it holds a server password); it is "
                         f"{stat.S_IMODE(info.st_mode):04o}, uid {info.st_uid}: `chmod 600 {path}` or delete it")
    return path.read_text(encoding="utf-8")
