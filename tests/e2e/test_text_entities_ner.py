"""NER with the real spaCy model, and the invalid-target filter on its mentions (canonical forms and the filter's
rules: tests/unit/test_text_entities.py)."""
from __future__ import annotations

import pytest

from harness_g.errors import ConfigError
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.filters import lookup_rejection
from harness_g.graph.text.ner import DEFAULT_LABELS, EntityRecognizer


@pytest.fixture(scope="module")
def recognizer() -> EntityRecognizer:
    return EntityRecognizer()


# ---------------------------------------------------------------- NER

def test_ner_finds_person_gpe_org(recognizer: EntityRecognizer) -> None:
    texts = [
        "Barack Obama was born in Honolulu, Hawaii.",
        "Apple Inc. is headquartered in Cupertino, California.",
        "",
        "Angela Merkel led Germany and met officials of the United Nations in New York.",
    ]
    out = list(recognizer.extract(texts))
    assert len(out) == len(texts)  # one list per input, in order
    labelled = [{(m.surface, m.label) for m in ms} for ms in out]
    assert ("Barack Obama", "PERSON") in labelled[0]
    assert ("Honolulu", "GPE") in labelled[0]
    assert ("Apple Inc.", "ORG") in labelled[1]
    assert out[2] == []
    assert ("Angela Merkel", "PERSON") in labelled[3]
    assert ("Germany", "GPE") in labelled[3]
    assert ("the United Nations", "ORG") in labelled[3] or ("United Nations", "ORG") in labelled[3]
    for text, ms in zip(texts, out):
        for m in ms:
            assert text[m.start : m.end] == m.surface  # offsets are into the input text
            assert m.label in DEFAULT_LABELS


def test_ner_runs_only_ner_and_names_model(recognizer: EntityRecognizer) -> None:
    assert recognizer.active_pipes == ["ner"]
    assert recognizer.model_name.startswith("en_core_web_sm")
    assert recognizer.model_name.endswith("-" + recognizer.nlp.meta["version"])


def test_ner_label_subset() -> None:
    rec = EntityRecognizer(labels=("PERSON",))
    (ms,) = list(rec.extract(["Barack Obama visited Paris in 2009."]))
    assert [m.label for m in ms] == ["PERSON"]


def test_ner_same_entities_as_full_pipeline(recognizer: EntityRecognizer) -> None:
    """Disabling tagger/parser/lemmatizer must not change NER output."""
    import spacy

    full = spacy.load(recognizer.nlp.meta["lang"] + "_" + recognizer.nlp.meta["name"])
    texts = ["J. R. R. Tolkien wrote The Lord of the Rings in Oxford during World War II.",
             "The Eiffel Tower in Paris was completed in 1889 for the World's Fair."]
    ours = [[(m.surface, m.label) for m in ms] for ms in recognizer.extract(texts)]
    ref = [[(e.text, e.label_) for e in d.ents if e.label_ in DEFAULT_LABELS] for d in full.pipe(texts)]
    assert ours == ref


def test_ner_missing_model_is_config_error() -> None:
    with pytest.raises(ConfigError, match="no_such_model_xyz"):
        EntityRecognizer("no_such_model_xyz")


def test_filter_on_real_mentions(recognizer: EntityRecognizer) -> None:
    """End to end: NER -> canonical -> filter keeps places/people, rejects dates/demonyms."""
    (ms,) = list(recognizer.extract(["The American writer Ernest Hemingway moved to Paris in 1921."]))
    verdict = {m.surface: lookup_rejection(canonicalize(m.surface), m.label) for m in ms}
    assert verdict["Ernest Hemingway"] is None
    assert verdict["Paris"] is None
    assert verdict["American"] in {"label:NORP", "nationality"}
    assert verdict["1921"] == "label:DATE"
