"""Evaluate a policy on a question set: resumable, one JSON record per question, a summary at the end.

``DIR/records.jsonl`` gets one line per finished question (flushed immediately), so an
interrupted run loses nothing: re-running with the same DIR skips finished ids.
``DIR/summary.json`` holds macro averages ×100 and counts; ``DIR/config.json`` the resolved run config (eval
options, environment config, the policy's name and every setting it reports, the graph version, the query encoder
(model and backend), the store kind, the question set and its content): a resumed run must match it (except the
question limit) or is refused with the differences listed.

The run stops with :class:`GraphChangedError` when the graph in its store changes under it (another command
loading another graph there, a rebuild of this one): the store's GraphMeta is compared after every question with
the one the run started on, and the question in progress is not recorded.
"""
from __future__ import annotations

import json
import time
import weakref
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from tqdm.auto import tqdm

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.trajectory import Trajectory, json_line
from harness_g.agent.eval import metrics as M
from harness_g.agent.eval.config import EvalConfig  # EvalConfig: declared with the other agent configs
from harness_g.agent.eval.reachability import menu_reachability
from harness_g.agent.policies.base import Policy
from harness_g.config_diff import differences
from harness_g.config_loader import sources
from harness_g.errors import ConfigError, HarnessError, StoreError, os_error_reason
from harness_g.graph.types import QAItem

RECORDS = "records.jsonl"
SUMMARY = "summary.json"


def gold_texts(view: GraphView, item: QAItem) -> list[str]:
    """Texts of the gold evidence: gold sentences, else whole gold paragraphs."""
    if item.gold_sentence_ids:
        infos = view.sentences(list(item.gold_sentence_ids))
        return [infos[s].text for s in item.gold_sentence_ids if s in infos]
    if item.gold_paragraph_ids:
        ids = view.paragraph_sentences(list(item.gold_paragraph_ids))
        infos = view.sentences(ids)
        return [infos[s].text for s in ids if s in infos]
    return []


_RS_ENCODERS: "weakref.WeakKeyDictionary[GraphView, M.EvidenceEncoder]" = weakref.WeakKeyDictionary()


def rs_encoder(view: GraphView) -> M.EvidenceEncoder:
    """Enc(·) of R-S for ``view``: its shared encoder (see ``metrics.EvidenceEncoder``), one per view."""
    enc = _RS_ENCODERS.get(view)
    if enc is None:
        enc = _RS_ENCODERS[view] = M.EvidenceEncoder.from_view(view)
    return enc


def score_trajectory(view: GraphView, item: QAItem, traj: Trajectory) -> dict[str, Any]:
    """Per-question metrics in [0, 1] (R-S is a cosine)."""
    answers = list(item.answers)
    evidence = [t for _, t in (lambda infos: [(infos[s].title, infos[s].text) for s in traj.committed if s in infos])(view.sentences(traj.committed))]
    units = M.gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    gold = gold_texts(view, item)
    rs = None
    if gold:  # R-S over the *retrieved* evidence, per sentence, no window truncation (agent/eval/metrics.py)
        retrieved_ids = M.retrieved_evidence(traj)
        infos = view.sentences(retrieved_ids)
        retrieved = [infos[s].text for s in retrieved_ids if s in infos]
        rs = M.evidence_similarity(retrieved, gold, rs_encoder(view))
    return {
        "em": M.exact_match(traj.answer or "", answers) if answers else None,
        "f1": M.token_f1(traj.answer or "", answers) if answers else None,
        "rs": rs,
        "evidence_recall": M.evidence_recall(units, traj.committed),
        "evidence_precision": M.evidence_precision(units, traj.committed),
        "answer_in_evidence": float(M.answer_in_evidence(answers, evidence)) if answers else None,
        "turns": traj.turns,
        "invalid_turns": traj.invalid_turns,
        "seconds": traj.seconds.get("total"),
    }


#: the per-question scores the summary averages; a record is *scored* when at least one of them is not None
SCORE_KEYS = ("em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence")


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Macro averages over the records. ``scored``: records with at least one score (gold answers or gold evidence
    to compare with); ``unscored``: records played without error that have neither; ``errors``: failed records."""
    ok = [r for r in records if "error" not in r]
    keys = list(SCORE_KEYS)
    scored = sum(1 for r in ok if any(r["metrics"].get(k) is not None for k in keys))
    summary: dict[str, Any] = {"questions": len(records), "scored": scored, "unscored": len(ok) - scored,
                               "errors": len(records) - len(ok)}
    for k in keys:
        v = M.mean(r["metrics"].get(k) for r in ok)
        summary[k] = None if v is None else round(100 * v, 2)
    for k in ("turns", "invalid_turns"):
        v = M.mean(r["metrics"].get(k) for r in ok)
        summary[f"mean_{k}"] = None if v is None else round(v, 4)
    summary.update(mean_timings(ok))
    reach = [r["reachability"]["status"] for r in ok if r.get("reachability")]
    if reach:
        decided = [s for s in reach if s in ("reachable", "unreachable")]
        summary["reachability"] = {s: reach.count(s) for s in sorted(set(reach))}
        summary["reachability_causes"] = {c: [r["reachability"].get("cause") for r in ok if r.get("reachability")].count(c) for c in sorted({r["reachability"].get("cause") for r in ok if r.get("reachability")} - {None})}
        summary["reachable_rate"] = round(100 * reach.count("reachable") / len(decided), 2) if decided else None
    types: dict[str, int] = {}
    for r in ok:
        for s in r["trajectory"]["steps"]:
            types[s["action_type"] or "INVALID"] = types.get(s["action_type"] or "INVALID", 0) + 1
    summary["action_mix"] = types
    judged = [r for r in ok if r.get("judge")]
    if judged:  # G-E = 10/(7N) sum_i sum_d s_id over successfully judged questions; failures counted
        v = M.mean(r["metrics"].get("ge") for r in judged)
        summary["ge"] = None if v is None else round(100 * v, 2)
        summary["ge_failures"] = sum(1 for r in judged if "scores" not in r["judge"])
    return summary


def mean_timings(records: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Seconds per question, averaged over ``records`` (those played without error). ``mean_seconds``: everything
    the run did for a question (the episode, scoring, judging, the reachability search: the record's wall-clock
    ``seconds``); ``mean_episode_seconds``: the episode alone (policy and environment, ``metrics.seconds``); and,
    where records have them, ``mean_reachability_seconds`` and ``mean_judge_seconds`` (``record["timing"]``)."""
    def mean(values: Iterable[Any]) -> float | None:
        v = M.mean(values)
        return None if v is None else round(v, 4)

    out = {"mean_seconds": mean(r.get("seconds", r["metrics"].get("seconds")) for r in records),
           "mean_episode_seconds": mean(r["metrics"].get("seconds") for r in records)}
    for part in ("reachability", "judge"):
        v = mean((r.get("timing") or {}).get(part) for r in records)
        if v is not None:
            out[f"mean_{part}_seconds"] = v
    return out


#: settings a resumed run may change: the question limit (re-run with a larger --limit to extend a run), whether
#: reachability is added to new records (a diagnostic; the summary counts the records that have it), the store-error
#: tolerance, and the graph's path (a moved artifact; its content is pinned by graph_version)
RESUMABLE = frozenset({"eval.limit", "eval.reachability", "eval.max_consecutive_store_errors", "eval.max_consecutive_errors",
                       "graph"})


def question_set(questions: Sequence[QAItem]) -> dict[str, Any]:
    """``{"count", "sha256", "content_sha256"}``: the question ids in order (which questions a run is over) and a
    hash of what is scored against (question text, gold answers, gold sentence and paragraph ids), so the same ids
    read from another file or with another ``--format`` are not taken for the same set."""
    import hashlib

    content = [[q.id, q.question, list(q.answers), list(q.gold_sentence_ids), list(q.gold_paragraph_ids)] for q in questions]
    return {"count": len(questions), "sha256": hashlib.sha256("\n".join(q.id for q in questions).encode("utf-8")).hexdigest(),
            "content_sha256": hashlib.sha256(json.dumps(content, ensure_ascii=False).encode("utf-8")).hexdigest()}


def query_encoder(view: GraphView) -> dict[str, str]:
    """The encoder that embeds queries (menus, retrieval) and R-S evidence: ``{"model", "backend"}``. The backend
    changes the vectors (onnx-int8 is approximate), so it is part of a run's config like any other setting."""
    return {"model": str(view.embedder.name), "backend": str(getattr(view.embedder, "backend", "torch"))}


class GraphChangedError(HarnessError):
    """The store's graph is not the one the evaluation started on."""


_UNREADABLE = object()  # the store could not be asked (a failure the next question's queries report)


def _store_graph(view: GraphView) -> Any:
    """The store's GraphMeta row now; None for an empty store; ``_UNREADABLE`` when the store cannot be reached."""
    try:
        return view.store.meta()
    except StoreError:
        return _UNREADABLE


def _graph_at_start(view: GraphView) -> dict[str, Any]:
    """The GraphMeta the run starts on; GraphChangedError unless the store holds the view's graph, complete."""
    meta = _store_graph(view)
    if meta is _UNREADABLE:
        return view.store.meta()  # raises the store's own error
    if not meta or meta.get("complete") is not True or meta.get("content_hash") != view.version:
        raise GraphChangedError(_changed_message(view, meta, "no longer holds"))
    return meta


def _changed_message(view: GraphView, meta: Any, verb: str) -> str:
    from harness_g.graph.load import describe_graph

    now = describe_graph(meta) if meta else "no graph"
    return (f"{view.store.where} {verb} {view.artifact.path} (content hash {view.version[:12]}): it now holds {now}. "
            f"Another command loaded another graph there, or this one was rebuilt; to keep both, "
            f"{view.store.other_graph_hint()}")


def _check_graph_unchanged(view: GraphView, start: dict[str, Any], records_path: Path) -> None:
    """GraphChangedError when the store's GraphMeta differs from the one the run started on (another content hash,
    another load of it, another GRAPH_DIR); one cheap query per question."""
    meta = _store_graph(view)
    if meta is _UNREADABLE or meta == start:
        return
    raise GraphChangedError(
        f"stopped: the graph changed during the eval: {_changed_message(view, meta, 'was evaluating')}. The question in "
        f"progress was not recorded; {len(_done_ids(records_path))} finished questions are kept in {records_path}; "
        "re-run the same command to resume once the store holds this graph again")


def check_resume(out: Path, resolved: dict[str, Any]) -> None:
    """Refuse to add records to a run directory whose records were made with other settings.

    ``resolved`` is the new run's complete config (what ``config.json`` gets). Every setting the old ``config.json``
    recorded is compared (settings a newer version added are not: an older run cannot have differed in them), except
    :data:`RESUMABLE`; the error lists each difference as ``key: old -> new``."""
    cfg, recs = out / "config.json", out / RECORDS
    if not (recs.exists() and recs.stat().st_size):
        return
    try:
        old = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{out} holds records but no readable config.json ({exc.__class__.__name__}); "
                           "use another --out") from exc
    diffs = differences(old, json.loads(json.dumps(resolved, default=str)), allowed=RESUMABLE)
    if diffs:
        shown = "; ".join(diffs[:8]) + (f"; and {len(diffs) - 8} more" if len(diffs) > 8 else "")
        raise ConfigError(f"{out} holds a run made with other settings ({shown}); re-run with the same settings to "
                          "resume it, or use another --out")


def read_records(path: str | Path, *, include_errors: bool = True) -> dict[str, dict[str, Any]]:
    """Records of a run by question id (the latest line wins); a line cut by a crash is skipped (eval re-runs it)."""
    records: dict[str, dict[str, Any]] = {}
    path = Path(path)
    if not path.exists():
        return records
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if include_errors or "error" not in rec:
                records[str(rec.get("id"))] = rec
    return records


def _done_ids(path: Path) -> dict[str, dict[str, Any]]:
    """Finished (error-free) records: what a resumed run skips."""
    return read_records(path, include_errors=False)


def _holding_run_dir_lock(func: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """Hold ``RUN_DIR/.lock`` (:mod:`harness_g.graph.locks`) for the whole run: a second eval into the
    same ``--out`` is refused at once with a one-line error naming the first (pid, start, command)."""
    from functools import wraps

    @wraps(func)
    def locked(view: GraphView, policy: Policy, questions: Sequence[QAItem], out_dir: str | Path, *args: Any,
               **kwargs: Any) -> dict[str, Any]:
        from harness_g.graph.locks import exclusive_lock

        with exclusive_lock(out_dir, "--out directory"):
            return func(view, policy, questions, out_dir, *args, **kwargs)

    return locked


@_holding_run_dir_lock
def run_eval(
    view: GraphView,
    policy: Policy,
    questions: Sequence[QAItem],
    out_dir: str | Path,
    *,
    env_config: EnvConfig | None = None,
    config: EvalConfig | None = None,
    progress: bool = True,
    extra_config: dict[str, Any] | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    judge: Any | None = None,
) -> dict[str, Any]:
    """``judge``: an optional :class:`harness_g.agent.eval.judge.Judge` for G-E (failures are counted, never fatal)."""
    from harness_g.agent.eval.interfaces import make_interface

    config = config or EvalConfig()
    env_config = env_config or EnvConfig()
    # before anything is written: a graph of another preset is refused here (MenuEnv), with the run directory untouched
    runner = make_interface(config.interface, view, policy, env_config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    resolved = _resolved_config(view, policy, questions, config, env_config, judge, extra_config)
    check_resume(out, resolved)
    start = _graph_at_start(view)  # compared after every question: the graph must not change under the run
    with _writing(out / "config.json", out):
        (out / "config.json").write_text(json.dumps(resolved, indent=2, sort_keys=True, default=str), encoding="utf-8")
    if config.limit is not None:
        questions = list(questions)[: config.limit]
    records_path = out / RECORDS
    done = _resume_records(view, records_path, out, judge)
    todo = [q for q in questions if q.id not in done]
    bar = tqdm(total=len(questions), initial=len(questions) - len(todo), desc=f"eval {policy.name}", unit="q", disable=not progress)
    if progress:  # within a question too: an LLM turn on CPU takes seconds to minutes
        runner.on_turn = lambda turn, max_turns: bar.set_postfix_str(f"turn {turn}/{max_turns}", refresh=True)
    try:
        _run_questions(view, runner, todo, _RunFiles(out, records_path, start), config, env_config, judge, on_record,
                       bar.update)
    finally:
        bar.close()
    return _write_summary(view, policy, config, questions, records_path, out)


def _resolved_config(view: GraphView, policy: Policy, questions: Sequence[QAItem], config: EvalConfig,
                     env_config: EnvConfig, judge: Any | None, extra_config: dict[str, Any] | None) -> dict[str, Any]:
    """The run's ``config.json``: everything a resumed run must match (see :func:`check_resume`)."""
    return {"eval": asdict(config), "env": env_config.to_dict(), "graph": str(view.artifact.path),
            "config_sources": {f"env.{k}": v for k, v in sources(env_config).items()},
            "graph_version": view.version, "dataset": view.artifact.manifest.get("dataset"),
            "encoder": query_encoder(view), "store": view.store.dialect,
            "interface": config.interface, "judge_model": getattr(judge, "model", None),
            "policy": {"name": policy.name, **policy.settings()}, "questions": question_set(questions),
            **(extra_config or {})}


def _resume_records(view: GraphView, records_path: Path, out: Path, judge: Any | None) -> dict[str, dict[str, Any]]:
    """The finished records of an earlier run (id -> record), judged where they were not yet, with the file
    rewritten to hold exactly them (failed and cut lines dropped, so the resumed file holds each id once)."""
    done = _done_ids(records_path)
    if judge is not None:  # resumed runs: judge records that were never judged or whose judging failed
        from harness_g.agent.eval.judge import evidence_texts, needs_judging

        for rec in done.values():
            if needs_judging(rec):
                judge.judge_record(rec, evidence_texts(view, rec))
    with _writing(records_path, out), open(records_path, "w", encoding="utf-8") as fh:
        for rec in done.values():
            fh.write(json_line(rec) + "\n")
    return done


class _RunFiles:
    """Where one run writes (``out``, its records file) and the graph it started on (``start``)."""

    def __init__(self, out: Path, records_path: Path, start: dict[str, Any]):
        self.out, self.records_path, self.start = out, records_path, start

    def same_graph(self, view: GraphView) -> None:
        """Raise :class:`GraphChangedError` when the store's graph is no longer the one the run started on."""
        _check_graph_unchanged(view, self.start, self.records_path)

    def append(self, fh: Any, line: str) -> None:
        _append(fh, self.records_path, self.out, line)

    def kept(self) -> int:
        """How many finished questions the records file holds."""
        return len(_done_ids(self.records_path))


def _run_questions(view: GraphView, runner: Any, todo: Sequence[QAItem], files: _RunFiles, config: EvalConfig,
                   env_config: EnvConfig, judge: Any | None, on_record: Callable[[dict[str, Any]], None] | None,
                   advance: Callable[[int], Any]) -> None:
    """Run and record each question of ``todo`` in order; a failing question gets an error record, and the run
    stops after ``max_consecutive_store_errors`` store failures or ``max_consecutive_errors`` failures in a row."""
    store_errors = failures = 0
    with open(files.records_path, "a", encoding="utf-8") as fh:
        for item in todo:
            t0 = time.perf_counter()
            try:
                record = _question_record(view, runner, item, config, env_config, judge)
                store_errors = 0
            except StoreError as exc:
                files.same_graph(view)  # a graph swapped mid-question explains the failure
                store_errors += 1
                record = {"id": item.id, "question": item.question, "error": f"store: {exc}"}
                if store_errors >= config.max_consecutive_store_errors:
                    files.append(fh, json.dumps(record))
                    raise StoreError(
                        f"{exc} — stopped after {store_errors} store failures in a row; {files.kept()} finished "
                        f"questions are kept in {files.records_path}; re-run the same command to resume"
                    ) from exc
            except HarnessError as exc:
                record = {"id": item.id, "question": item.question, "error": str(exc)}
                failures += 1
                if failures >= config.max_consecutive_errors:
                    record["seconds"] = time.perf_counter() - t0
                    files.append(fh, json_line(record))
                    raise HarnessError(
                        f"stopped after {failures} questions failed in a row (last: {exc}); {files.kept()} "
                        f"finished questions are kept in {files.records_path}; fix the cause and re-run the same "
                        f"command to resume"
                    ) from exc
            else:
                failures = 0
            files.same_graph(view)  # before the record: it may come from another graph
            record["seconds"] = time.perf_counter() - t0
            files.append(fh, json_line(record))  # always UTF-8-encodable (lone surrogates escaped)
            if on_record:
                on_record(record)
            advance(1)


def _question_record(view: GraphView, runner: Any, item: QAItem, config: EvalConfig, env_config: EnvConfig,
                     judge: Any | None) -> dict[str, Any]:
    """Run one question's episode and score it: the record without ``seconds`` (the caller times the question)."""
    traj = runner.run(item)
    record: dict[str, Any] = {"id": item.id, "question": item.question, "answers": list(item.answers),
                              "prediction": traj.answer, "metrics": score_trajectory(view, item, traj),
                              "trajectory": traj.to_json(), "dataset": item.dataset, "interface": config.interface,
                              "gold": {"sentence_ids": list(item.gold_sentence_ids),
                                       "paragraph_ids": list(item.gold_paragraph_ids)}}
    timing: dict[str, float] = {}
    if judge is not None:
        from harness_g.agent.eval.judge import evidence_texts

        t_part = time.perf_counter()
        judge.judge_record(record, evidence_texts(view, record))
        timing["judge"] = time.perf_counter() - t_part
    if config.reachability:
        t_part = time.perf_counter()
        record["reachability"] = asdict(menu_reachability(view, item, env_config, budget=config.reach_budget))
        timing["reachability"] = time.perf_counter() - t_part
    if timing:  # the parts of record["seconds"] (the whole question) besides the episode (metrics.seconds)
        record["timing"] = timing
    return record


def _write_summary(view: GraphView, policy: Policy, config: EvalConfig, questions: Sequence[QAItem],
                   records_path: Path, out: Path) -> dict[str, Any]:
    """Summarize the latest record of each asked question into ``out/summary.json``; returns the summary."""
    all_records = []
    with open(records_path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                all_records.append(json.loads(line))
    wanted = {q.id for q in questions}
    latest = {r["id"]: r for r in all_records if r["id"] in wanted}
    summary = summarize(list(latest.values()))
    summary.update({"policy": policy.name, "graph": str(view.artifact.path), "graph_version": view.version,
                    "env_cache": view.cache_stats()})
    summary.update({"interface": config.interface, "dataset": view.artifact.manifest.get("dataset"),
                    "rs_encoder": rs_encoder(view).name, "rs_evidence": M.RS_EVIDENCE})
    with _writing(out / SUMMARY, out):
        (out / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True, default=float), encoding="utf-8")
    return summary


@contextmanager
def _writing(path: Path, out: Path) -> Iterator[None]:
    """An OSError while writing ``path`` (a full disk, a quota) as one line naming it; what ``out`` already holds
    stays, and a re-run of the same command resumes from it."""
    try:
        yield
    except OSError as exc:
        raise HarnessError(f"cannot write {path}: {os_error_reason(exc, path)}; the finished questions in {out} "
                           "are kept: free space and re-run the same command to resume") from exc


def _append(fh: Any, path: Path, out: Path, line: str) -> None:
    """One record line, flushed (a record is on disk before the next question starts)."""
    try:
        with _writing(path, out):
            fh.write(line + "\n")
            fh.flush()
    except HarnessError:
        try:  # drop what the disk refused, so that closing the file on the way out raises nothing more
            fh.close()
        except OSError:
            pass
        raise
