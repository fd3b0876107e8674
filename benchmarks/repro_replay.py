"""Issue 31 items 1-2: a block of an earlier result folder's questions replayed from its caches into a folder of its
own, so a block played at another seed (or on another list block) has the same questions at the first seed to pair
and pool with, without sampling anything again.

    python benchmarks/repro_small.py replay --from SRC --skip-questions K --n-questions N --out DST

SRC is a folder ``repro_small.py equivalence`` (and ``credit``) wrote; it holds questions ``s+1 .. s+m`` of its list
(``s`` its ``--skip-questions``, ``m`` its questions). DST gets the cache files of questions ``K+1 .. K+N`` (both
arms' rollout groups and, where SRC has a ``credit.json``, the credit records), then ``equivalence`` and ``credit``
run there with SRC's settings and ``--skip-questions K --n-questions N``; every question is read from the copied
cache (a question with no cached record is refused, never sampled: :attr:`repro_small.Run.cache_only`), so no model
is loaded. The result is checked before DST exists: its per-question records equal SRC's for those questions, arm by
arm, its credit questions equal SRC's, and its ``settings.json`` equals SRC's but ``skip_questions`` (and the graph's
path, when ``--graph`` names the same graph content elsewhere). DST also gets ``replay.json``: the source, the
window and what was checked.

Refused, one line each, with nothing written: a DST that already holds files, a window outside SRC's questions, a
SRC without ``settings.json`` or ``equivalence.json``, a question of the window without a cache file in SRC, and a
replay whose records do not equal SRC's (SRC caught between runs, or its question order is not its list's).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import utc_stamp  # noqa: E402
from repro_small import ARMS, SETTINGS, Run, _safe, cmd_credit, cmd_equivalence  # noqa: E402

from harness_g.config_diff import differences  # noqa: E402
from harness_g.errors import ConfigError  # noqa: E402

REPLAY = "replay.json"
#: the cache sub-folders a question's records live in (``cache/<sub>/<question>.json.gz``)
ROLLOUTS = tuple(f"rollouts/{arm}" for arm in ARMS)
CREDIT = "credit"


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path.parent}: no {path.name} there; --from takes a folder repro_small.py equivalence wrote")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from None


def window(source: Path, skip: int, n: int) -> tuple[dict[str, Any], list[str], list[str]]:
    """SRC's settings and the window's question ids: ``(settings, equivalence ids, credit ids)`` for questions
    ``skip+1 .. skip+n`` of the list, refused when SRC does not hold all of them."""
    if skip < 0 or n < 1:
        raise ConfigError(f"--skip-questions must be >= 0 and --n-questions >= 1, got {skip} and {n}")
    settings = _read(source / SETTINGS)
    eq = _read(source / "equivalence.json")
    ids = [r["question_id"] for r in eq["per_question"][ARMS[0]]]
    for arm in ARMS[1:]:
        if [r["question_id"] for r in eq["per_question"][arm]] != ids:
            raise ConfigError(f"{source}/equivalence.json: the arms list other questions; it is not one run's result")
    first = int(settings.get("skip_questions", 0))
    if skip < first or skip + n > first + len(ids):
        raise ConfigError(f"--from {source} holds questions {first + 1}-{first + len(ids)} of its list, not "
                          f"{skip + 1}-{skip + n}")
    chosen = ids[skip - first: skip - first + n]
    wanted = set(chosen)
    credit_path = source / "credit.json"
    credit_ids = [] if not credit_path.is_file() else [q for q in _read(credit_path)["question_ids"] if q in wanted]
    return settings, chosen, credit_ids


def copy_caches(source: Path, dest: Path, ids: list[str], credit_ids: list[str]) -> int:
    """Copy the window's cache files from SRC into ``dest`` (every file checked present before any is copied);
    returns how many were copied."""
    pairs = [(source / "cache" / sub / f"{_safe(q)}.json.gz", dest / "cache" / sub / f"{_safe(q)}.json.gz")
             for sub in ROLLOUTS for q in ids]
    pairs += [(source / "cache" / CREDIT / f"{_safe(q)}.json.gz", dest / "cache" / CREDIT / f"{_safe(q)}.json.gz")
              for q in credit_ids]
    missing = [src for src, _ in pairs if not src.is_file()]
    if missing:
        raise ConfigError(f"--from {source}: {missing[0].relative_to(source)} is missing ({len(missing)} cache file(s) "
                          "of the window); a replay samples nothing, so it needs every one")
    for src, dst in pairs:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return len(pairs)


def run_from(settings: dict[str, Any], out: Path, skip: int, n: int, *, graph: Path | None, store: str | None) -> Run:
    """The :class:`Run` SRC's ``settings.json`` describes, on questions ``skip+1 .. skip+n``, writing into ``out``,
    reading caches only."""
    try:
        return Run(graph=graph or Path(settings["graph"]),
                   questions=Path(settings["questions"]) if settings.get("questions") else None,
                   fmt=settings.get("format"), n_questions=n, out=out, preset=settings["preset"],
                   model=settings["model"], group_size=int(settings["group_size"]), seed=int(settings["seed"]),
                   device=settings["device"], batch_questions=int(settings["batch_questions"]),
                   free_action_tokens=int(settings["free_action_tokens"]), sets=tuple(settings.get("sets", ())),
                   store=store, threads=1, skip_questions=skip, cache_only=True)
    except KeyError as exc:
        raise ConfigError(f"{SETTINGS} of --from lacks {exc.args[0]!r}; it was not written by repro_small.py") from None


def check_equal(source: Path, dest: Path, settings: dict[str, Any], ids: list[str], credit_ids: list[str]) -> list[str]:
    """Refuse (one line) a replay in ``dest`` whose records or settings differ from SRC's for the window; returns
    what was checked, for ``replay.json``."""
    src_eq, dst_eq = _read(source / "equivalence.json"), _read(dest / "equivalence.json")
    wanted = set(ids)
    for arm in ARMS:
        want = [r for r in src_eq["per_question"][arm] if r["question_id"] in wanted]
        if dst_eq["per_question"][arm] != want:
            raise ConfigError(f"replay of {source}: the {arm} arm's per-question records differ from the source's; "
                              "it is not a replay of those questions (nothing written)")
    checked = [f"per-question records of {', '.join(ARMS)} equal the source's ({len(ids)} questions)"]
    if credit_ids:
        got = _read(dest / "credit.json")["question_ids"]
        if got != credit_ids:
            raise ConfigError(f"replay of {source}: credit questions {got} are not the source's {credit_ids}")
        checked.append(f"credit questions equal the source's ({len(credit_ids)}; credit records copied unchanged)")
    mine = _read(dest / SETTINGS)
    moved = mine.get("graph") != settings.get("graph") and mine.get("content_hash") == settings.get("content_hash")
    allowed = ["skip_questions"] + (["graph"] if moved else [])  # the same graph content read from another path
    diffs = differences(settings, mine, allowed=allowed, added=True)
    if diffs:
        raise ConfigError(f"replay of {source}: settings differ beyond the window ({diffs[0]})")
    checked.append("settings equal the source's but " + " and ".join(allowed))
    return checked


def cmd_replay(source: Path, out: Path, skip: int, n: int, log: Callable[[str], None], *, graph: Path | None = None,
               store: str | None = None) -> dict[str, Any]:
    """Replay questions ``skip+1 .. skip+n`` of SRC into ``out`` (built in a sibling temporary folder, moved into
    place only once checked) and return ``replay.json``'s record."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out} already holds files; a replay writes a fresh folder")
    settings, ids, credit_ids = window(source, skip, n)
    tmp = out.with_name(f".{out.name}.replay-tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        copied = copy_caches(source, tmp, ids, credit_ids)
        run = run_from(settings, tmp, skip, n, graph=graph, store=store)
        cmd_equivalence(run, log)
        if credit_ids:
            cmd_credit(run, log)
        checked = check_equal(source, tmp, settings, ids, credit_ids)
        record = {"kind": "replay", "generated": utc_stamp(), "source": str(source),
                  "source_first_question": int(settings.get("skip_questions", 0)) + 1,
                  "first_question": skip + 1, "questions": ids, "credit_questions": credit_ids,
                  "cache_files_copied": copied, "checked": checked}
        (tmp / REPLAY).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty, checked above
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"replayed {len(ids)} questions of {source} into {out}: " + "; ".join(checked))
    return record
