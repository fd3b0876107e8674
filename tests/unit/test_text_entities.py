"""Canonical entity forms and the invalid-target filter (NER with the real spaCy model: tests/e2e/test_text_entities_ner.py)."""
from __future__ import annotations

import pytest

from harness_g.graph.text.canonical import canonicalize, display_form
from harness_g.graph.text.filters import LookupFilter, is_lookupable, lookup_rejection
from harness_g.graph.text.lexicon import NATIONALITIES


# ---------------------------------------------------------------- canonical forms

CANONICAL = [
    ("J. R. R. Tolkien", "j r r tolkien"),
    ("J.R.R. Tolkien", "jrr tolkien"),
    ("U.S.", "us"),
    ("U.S.A.", "usa"),
    ("Obama's", "obama"),
    ("Obama’s", "obama"),
    ("The Beatles'", "beatles"),
    ("  The   Hobbit ", "hobbit"),
    ("the", "the"),
    ('"Heroes"', "heroes"),
    ('Dwayne "The Rock" Johnson', "dwayne the rock johnson"),
    ('Heroes"', 'heroes"'),
    ("Spider-Man", "spider man"),
    ("1868–1939", "1868 1939"),
    ("Anglo-", "anglo-"),
    ("Paris (film)", "paris film"),
    ("Washington, D.C.", "washington dc"),
    ("3.14", "3.14"),
    ("O’Brien", "o'brien"),
    ("ＮＡＳＡ", "nasa"),
    ("AT&T", "at&t"),
    ("St. Louis", "st louis"),
    ("A  Tale\tof Two\nCities", "a tale of two cities"),
    ("   ", ""),
]


@pytest.mark.parametrize("surface,expected", CANONICAL)
def test_canonicalize(surface: str, expected: str) -> None:
    assert canonicalize(surface) == expected


def test_canonicalize_idempotent() -> None:
    for surface, expected in CANONICAL:
        if expected and not expected.startswith("the"):
            assert canonicalize(expected) == expected


def test_display_form() -> None:
    assert display_form(["Obama", "Barack Obama", "Barack Obama", "obama"]) == "Barack Obama"
    assert display_form(["USA", "U.S.A.", "U.S.A.", "USA"]) == "USA"  # tie -> shortest
    assert display_form(["Bb", "Ab"]) == "Ab"  # tie, same length -> lexicographic
    assert display_form([" Paris ", "Paris", ""]) == "Paris"
    with pytest.raises(ValueError):
        display_form(["", "  "])


# ---------------------------------------------------------------- invalid-target filter

FILTER = [
    # (canonical, label, known PERSON canonicals, expected reason)
    ("", "PERSON", None, "empty"),
    ("   ", "ORG", None, "empty"),
    ("1892", "DATE", None, "label:DATE"),
    ("1892", "CARDINAL", None, "label:CARDINAL"),
    ("noon", "TIME", None, "label:TIME"),
    ("first", "ORDINAL", None, "label:ORDINAL"),
    ("5 km", "QUANTITY", None, "label:QUANTITY"),
    ("10%", "PERCENT", None, "label:PERCENT"),
    ("$5 million", "MONEY", None, "label:MONEY"),
    ("american", "NORP", None, "label:NORP"),
    ("1892", "ORG", None, "pure_number"),
    ("3.14", "GPE", None, "pure_number"),
    ("1,000", "WORK_OF_ART", None, "pure_number"),
    ("1990s", "EVENT", None, "pure_number"),
    ("2nd", "ORG", None, "pure_number"),
    ("x", "PERSON", None, "single_char"),
    ("-", "ORG", None, "single_char"),
    ('heroes"', "WORK_OF_ART", None, "quote_fragment"),
    ("'heroes", "WORK_OF_ART", None, "quote_fragment"),
    ("'s gravenhage", "GPE", None, "truncated_alias"),
    ("harry potter and the", "WORK_OF_ART", None, "truncated_alias"),
    ("university of", "ORG", None, "truncated_alias"),
    ("anglo-", "NORP_LIKE", None, "truncated_alias"),
    ("barack", "PERSON", {"barack obama", "michelle obama"}, "truncated_alias"),
    ("john f", "PERSON", None, "name_initial"),
    ("smith j", "PERSON", None, "name_initial"),
    ("american", "ORG", None, "nationality"),
    ("americans", "GPE", None, "nationality"),
    ("british", "PERSON", None, "nationality"),
    ("european", "LOC", None, "nationality"),
    ("african american", "ORG", None, "nationality"),
    # lookup-able counter-examples
    ("new york", "GPE", None, None),
    ("america", "GPE", None, None),
    ("united states", "GPE", None, None),
    ("barack obama", "PERSON", {"barack obama"}, None),
    ("obama", "PERSON", {"barack obama"}, None),  # surname-only stays valid
    ("barack", "PERSON", None, None),  # no known longer name -> valid
    ("barack", "ORG", {"barack obama"}, None),  # first-name rule is PERSON-only
    ("michael", "PERSON", {"michael jordan", "george michael"}, None),  # also a known surname
    ("j smith", "PERSON", None, None),  # leading initial is a normal short name
    ("john f kennedy", "PERSON", None, None),
    ("plan b", "WORK_OF_ART", None, None),  # name_initial is PERSON-only
    ("apollo 11", "EVENT", None, None),
    ("lord of the rings", "WORK_OF_ART", None, None),
    ("o'brien", "PERSON", None, None),
    ("at&t", "ORG", None, None),
]


@pytest.mark.parametrize("canonical,label,known,expected", FILTER)
def test_lookup_rejection(canonical: str, label: str, known: set[str] | None, expected: str | None) -> None:
    assert lookup_rejection(canonical, label, known_canonicals=known) == expected
    assert LookupFilter(known).rejection(canonical, label) == expected
    assert is_lookupable(canonical, label, known_canonicals=known) is (expected is None)


def test_every_reason_code_covered() -> None:
    reasons = {r.split(":")[0] for _, _, _, r in FILTER if r}
    assert reasons == {"empty", "label", "pure_number", "single_char", "quote_fragment",
                       "truncated_alias", "name_initial", "nationality"}


def test_nationality_lexicon() -> None:
    assert len(NATIONALITIES) >= 150
    for word in ("american", "americans", "british", "european", "english", "french", "german",
                 "germans", "chinese", "jewish", "hispanic", "scots"):
        assert word in NATIONALITIES
    for country in ("america", "france", "germany", "china", "england", "new zealand"):
        assert country not in NATIONALITIES
    assert all(w == canonicalize(w) for w in NATIONALITIES)


def test_known_set_index_is_reused_but_tracks_changes() -> None:
    known = {"barack obama"}
    assert lookup_rejection("michelle", "PERSON", known_canonicals=known) is None
    known.add("michelle obama")  # size changed -> re-indexed
    assert lookup_rejection("michelle", "PERSON", known_canonicals=known) == "truncated_alias"
    other = {"barack obama"}  # another object -> its own index
    assert lookup_rejection("michelle", "PERSON", known_canonicals=other) is None
    assert lookup_rejection("barack", "PERSON", known_canonicals=other) == "truncated_alias"
    assert lookup_rejection("barack", "PERSON") is None
