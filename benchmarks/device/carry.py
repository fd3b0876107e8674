"""Carry files bigger than one device call allows onto the lent GPU machine, in parts, and put them back together.

The device tool sends the working tree plus at most 8 ignored paths per call, 64 MiB in all, and removes a carried
folder at the next call; ``/tmp`` on the machine persists while it stays warm. So a 98 MB GGUF, an 88 MB sentence
model and the dev graphs travel as numbered folders ``.carry/1 .. .carry/K``, one per call, each under the budget
left beside the tree; every call unpacks its folder into ``/tmp/dc``, and a file is assembled (and its sha256
checked) as soon as all its parts are there. Standard library only: it runs on the device before anything is
installed.

Here (repository root)::

    python benchmarks/device/carry.py pack NAME=PATH [NAME=PATH ...]     # -> .carry/1 .. .carry/K, prints the calls

Device, call i (``carry: [".carry/i"]``)::

    python3 benchmarks/device/carry.py unpack --from .carry/i --dest /tmp/dc [--require-complete]

Each folder holds ``carry.json`` (every file: size, sha256, its parts and the folder of each), so any call can say
what is still missing. Shapes: sizes in bytes; a part is at most the folder budget.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

MANIFEST = "carry.json"
DEVICE_LIMIT = 64 * 1024 * 1024  # bytes one call may carry, the working tree included (device README, Limits)
MARGIN = 1024 * 1024  # bytes kept free under the limit (the manifest, files that change before the call)
SKIP = {"__pycache__", ".lock", "store", "store.json"}  # never carried: caches, a graph's running store
#: the device tool counts what travels as disk space: every file in whole 4 KiB blocks (measured 2026-12-04: a tree
#: of 14.8 MB in bytes, 20.4 MB in blocks, beside a 51.3 MB folder, was refused as over 64 MiB)
BLOCK = 4096


def on_disk(size: int, block: int = BLOCK) -> int:
    """``size`` bytes rounded up to whole blocks of ``block`` bytes (what a file of that size counts for)."""
    return -(-size // block) * block


class CarryError(Exception):
    """A one-line problem with packing or unpacking (the CLI prints it and exits 1)."""


@dataclass
class Part:
    """One piece of a file: its bytes [offset, offset + size) live in folder ``folder`` as ``name``."""
    folder: int
    name: str
    offset: int
    size: int


@dataclass
class CarriedFile:
    """A file to rebuild at ``dest/path`` from ``parts``; ``size`` bytes with sha256 ``sha256``."""
    path: str
    size: int
    sha256: str
    parts: list[Part] = field(default_factory=list)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_files(repo: Path) -> list[str]:
    """What every call sends anyway, as paths relative to ``repo``: tracked files and untracked files git does not
    ignore (files only; a deleted tracked file is not sent)."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                         capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p and (repo / p).is_file()]


def tree_bytes(repo: Path) -> int:
    """Bytes of :func:`tree_files`, as the device counts them (whole blocks)."""
    return sum(on_disk((repo / p).stat().st_size) for p in tree_files(repo))


def sources(specs: list[str]) -> list[tuple[str, Path]]:
    """``NAME=PATH`` items -> (carried path, local file) for every file under each PATH (a file or a folder),
    sorted, skipping :data:`SKIP` names. CarryError on a missing PATH or a malformed item."""
    out: list[tuple[str, Path]] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise CarryError(f"item {spec!r} is not NAME=PATH")
        src = Path(path)
        if src.is_file():
            out.append((name, src))
        elif src.is_dir():
            for p in sorted(src.rglob("*")):
                rel = p.relative_to(src)
                if p.is_file() and not SKIP.intersection(rel.parts):
                    out.append((f"{name}/{rel.as_posix()}", p))
        else:
            raise CarryError(f"item {name}: {path} does not exist")
    return out


def plan_parts(files: list[tuple[str, Path]], budget: int, block: int = BLOCK) -> list[CarriedFile]:
    """Fill folders 1, 2, ... in order with whole files or pieces of them, each folder at most ``budget`` bytes on
    disk (every part counted in whole blocks of ``block`` bytes)."""
    budget -= budget % block
    if budget <= 0:
        raise CarryError(f"no room to carry anything: the budget per call is {budget} bytes")
    plan, folder, room = [], 1, budget
    for rel, src in files:
        size = src.stat().st_size
        carried = CarriedFile(rel, size, sha256_of(src))
        offset = 0
        while offset < size or (size == 0 and not carried.parts):
            if room == 0:
                folder, room = folder + 1, budget
            take = min(room, size - offset)
            carried.parts.append(Part(folder, f"{len(plan):05d}.{len(carried.parts):03d}", offset, take))
            offset, room = offset + take, room - on_disk(take, block)
        plan.append(carried)
    return plan


def pack(specs: list[str], out: Path, budget: int, block: int = BLOCK) -> int:
    """Write folders ``out/1 .. out/K`` (``out`` emptied first) and their manifest; returns K."""
    files = sources(specs)
    plan = plan_parts(files, budget, block)
    if out.exists():
        shutil.rmtree(out)
    folders = max((p.folder for f in plan for p in f.parts), default=1)
    for k in range(1, folders + 1):
        (out / str(k)).mkdir(parents=True)
    srcs = dict(files)
    for f in plan:
        with open(srcs[f.path], "rb") as fh:
            for p in f.parts:
                fh.seek(p.offset)
                (out / str(p.folder) / p.name).write_bytes(fh.read(p.size))
    manifest = {"folders": folders, "files": [asdict(f) for f in plan]}
    for k in range(1, folders + 1):
        (out / str(k) / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return folders


def unpack(src: Path, dest: Path) -> tuple[list[str], list[str]]:
    """Copy ``src``'s parts into ``dest/.parts`` and assemble every file whose parts are all there (sha256 checked,
    then its parts deleted). Returns (files complete in ``dest``, files still missing parts). CarryError on a
    part of the wrong size or a file whose checksum does not match (the bad file is removed, nothing else)."""
    manifest = json.loads((src / MANIFEST).read_text(encoding="utf-8"))
    files = [CarriedFile(f["path"], f["size"], f["sha256"], [Part(**p) for p in f["parts"]]) for f in manifest["files"]]
    parts_dir = dest / ".parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    for f in files:
        for p in f.parts:
            here = src / p.name
            if here.is_file():
                if here.stat().st_size != p.size:
                    raise CarryError(f"{here}: {here.stat().st_size} bytes, the manifest says {p.size}")
                shutil.copyfile(here, parts_dir / p.name)
    ledger = parts_dir / "verified.json"  # path -> sha256 of the files assembled and checked by earlier calls
    verified = json.loads(ledger.read_text(encoding="utf-8")) if ledger.is_file() else {}
    done, missing = [], []
    for f in files:
        target = dest / f.path
        if verified.get(f.path) == f.sha256 and target.is_file() and target.stat().st_size == f.size:
            done.append(f.path)  # assembled by an earlier call
            continue
        if not all((parts_dir / p.name).is_file() for p in f.parts):
            missing.append(f"{f.path} (folders {sorted({p.folder for p in f.parts if not (parts_dir / p.name).is_file()})})")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".carry-tmp")
        with open(tmp, "wb") as out:
            for p in f.parts:
                with open(parts_dir / p.name, "rb") as fh:
                    shutil.copyfileobj(fh, out)
        if sha256_of(tmp) != f.sha256:
            tmp.unlink()
            raise CarryError(f"{f.path}: sha256 of the assembled file does not match the manifest")
        os.replace(tmp, target)
        for p in f.parts:
            (parts_dir / p.name).unlink()
        verified[f.path] = f.sha256
        ledger.write_text(json.dumps(verified), encoding="utf-8")
        done.append(f.path)
    return done, missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="split NAME=PATH items into .carry/1 .. .carry/K")
    p.add_argument("items", nargs="+", metavar="NAME=PATH")
    p.add_argument("--out", type=Path, default=Path(".carry"), help="folder of the numbered folders (default .carry)")
    p.add_argument("--budget-mb", type=float, help="MiB per folder (default: 64 MiB less the working tree, less 1 MiB)")
    u = sub.add_parser("unpack", help="unpack one carried folder into --dest; assemble what is complete")
    u.add_argument("--from", dest="src", type=Path, required=True)
    u.add_argument("--dest", type=Path, default=Path("/tmp/dc"))
    u.add_argument("--require-complete", action="store_true", help="exit 1 unless every file is assembled")
    args = ap.parse_args(argv)
    try:
        if args.command == "pack":
            budget = int(args.budget_mb * 1024 * 1024) if args.budget_mb else DEVICE_LIMIT - tree_bytes(Path.cwd()) - MARGIN
            k = pack(args.items, args.out, budget)
            print(f"carry: {k} folder(s) of at most {budget / 2**20:.1f} MiB in {args.out}/; one device call each:")
            for i in range(1, k + 1):
                last = " --require-complete && <the run>" if i == k else ""
                print(f"  carry [\"{args.out}/{i}\"]: python3 benchmarks/device/carry.py unpack --from {args.out}/{i} "
                      f"--dest /tmp/dc{last}")
            return 0
        done, missing = unpack(args.src, args.dest)
        print(f"carry: {len(done)} file(s) complete in {args.dest}, {len(missing)} waiting"
              + (f": {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}" if missing else ""))
        return 1 if (missing and args.require_complete) else 0
    except (CarryError, OSError, json.JSONDecodeError) as exc:
        print(f"carry: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
