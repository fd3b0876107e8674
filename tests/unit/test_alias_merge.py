"""Truncated person aliases are merged into the entity they name, document-locally and conservatively."""
from __future__ import annotations

import random

import pytest

from harness_g.graph.build import TITLE_LABEL, _SentenceRows, build_entities
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.linking import link_entities, name_alias_of, person_aliases, title_name
from harness_g.graph.types import Mention, Paragraph, entity_id

POSITIVE = [  # (short, long): short is an alias of long
    ("Obama", "Barack Obama"),
    ("Sørensen", "S. P. L. Sørensen"),
    ("Peder Lauritz Sørensen", "S. P. L. Sørensen"),
    ("J. R. R. Tolkien", "John Ronald Reuel Tolkien"),
    ("J. Smith", "John Smith"),
    ("Lamont", "Charles Lamont"),
]
NEGATIVE = [
    ("Michelle Obama", "Barack Obama"),  # another given name
    ("Barack Obama", "Obama"),  # the longer name is never the alias
    ("John Adams", "John Quincy Adams"),  # a dropped middle name alone: father and son
    ("George Bush", "George W. Bush"),
    ("Obama", "Obama"),  # the same name is not an alias (canonical/title links cover it)
    ("Barack", "Barack Obama"),  # a first name is not a surname
    ("Obama", "Obama Foundation"),
    ("Andrew W. Sidaris", "Andy Sidaris"),  # nicknames are out of scope
    ("Smith", "Smith"),
    ("Jane Smith", "John Smith"),
]


@pytest.mark.parametrize("short,long", POSITIVE)
def test_name_alias_positive(short: str, long: str) -> None:
    assert name_alias_of(canonicalize(short), canonicalize(long))


@pytest.mark.parametrize("short,long", NEGATIVE)
def test_name_alias_negative(short: str, long: str) -> None:
    assert not name_alias_of(canonicalize(short), canonicalize(long))


def _names(*surfaces: str) -> list[tuple[str, str]]:
    return [(entity_id("PERSON", canonicalize(s)), canonicalize(s)) for s in surfaces]


def test_person_aliases_resolution() -> None:
    barack, obama = _names("Barack Obama", "Obama")
    assert person_aliases([barack, obama]) == {obama[0]: barack[0]}
    # the same surname for two people in one paragraph: ambiguous, left alone; nobody merges into anybody
    michelle, = _names("Michelle Obama")
    assert person_aliases([barack, michelle, obama]) == {}
    assert person_aliases([barack, michelle]) == {}
    # a chain ends at the article's title entity
    full, bare = _names("Peder Lauritz Sørensen", "Sørensen")
    title = (entity_id(TITLE_LABEL, canonicalize("S. P. L. Sørensen")), title_name("S. P. L. Sørensen"))
    assert person_aliases([full, bare], title) == {full[0]: title[0], bare[0]: title[0]}
    # the title's parenthetical is not part of the name
    assert title_name("John Smith (footballer)") == "john smith"
    smith, = _names("Smith")
    t = (entity_id(TITLE_LABEL, canonicalize("John Smith (footballer)")), title_name("John Smith (footballer)"))
    assert person_aliases([smith], t) == {smith[0]: t[0]}
    # deterministic: input order does not matter
    names = _names("Barack Obama", "Obama", "J. Smith", "John Smith", "Smith", "Jane Doe")
    expected = person_aliases(names)
    assert expected and all(person_aliases(random.Random(i).sample(names, len(names))) == expected for i in range(10))


def _rows(paragraphs: list[Paragraph]) -> _SentenceRows:
    rows = _SentenceRows()
    for p in paragraphs:
        for pos, text in enumerate(p.sentences or ()):
            rows.ids.append(f"{p.id}:{pos}")
            rows.paragraph_ids.append(p.id)
            rows.positions.append(pos)
            rows.titles.append(p.title)
            rows.texts.append(text)
    return rows


def _mentions(rows: _SentenceRows) -> list[list[Mention]]:
    out = []
    for text in rows.texts:
        found = []
        for name in ("Barack Obama", "Michelle Obama", "Obama"):
            start = text.find(name)
            # the longest name wins a span (as NER would report it)
            if start >= 0 and not any(m.start <= start < m.end for m in found):
                found.append(Mention(name, "PERSON", start, start + len(name)))
        out.append(found)
    return out


def test_build_entities_merges_aliases_document_locally() -> None:
    paragraphs = [
        Paragraph("p_a", "Presidency", "", ("Barack Obama was president.", "Obama was born in Hawaii.")),
        Paragraph("p_b", "Family", "", ("Barack Obama married Michelle Obama.", "Obama is a lawyer.")),
        Paragraph("p_c", "Elsewhere", "", ("Obama spoke.",)),
    ]
    rows = _rows(paragraphs)
    tables = build_entities(rows, _mentions(rows), paragraphs, merge_person_aliases=True)  # BuildConfig.person_alias_merge
    ment = tables.mentions
    by = {(sid, surface): eid for sid, eid, surface in zip(ment["sentence_id"], ment["entity_id"], ment["surface"])}
    barack, michelle, obama = (entity_id("PERSON", c) for c in ("barack obama", "michelle obama", "obama"))
    assert by[("p_a:1", "Obama")] == barack  # merged: the paragraph names one Obama
    assert by[("p_b:1", "Obama")] == obama  # ambiguous paragraph: left alone
    assert by[("p_c:0", "Obama")] == obama  # no long form in its paragraph: left alone
    assert by[("p_b:0", "Michelle Obama")] == michelle and by[("p_b:0", "Barack Obama")] == barack
    ents = dict(zip(tables.entities["id"], zip(tables.entities["surface"], tables.entities["mentions"])))
    assert ents[barack] == ("Barack Obama", 3)  # display form from its own surfaces only
    assert ents[obama] == ("Obama", 2)
    # the surviving alias keeps a link to the name it was merged into (an `alias` synonym edge at link time)
    assert tables.alias_pairs == [(obama, barack)]
    edges = link_entities(tables.records, title_ids=tables.title_ids, alias_pairs=tables.alias_pairs)
    assert [(e.kind, e.score) for e in edges if {e.src, e.dst} == {obama, barack}] == [("alias", 1.0)]
    assert not any({e.src, e.dst} == {michelle, barack} for e in edges)
    # an alias with every mention merged disappears
    solo = [Paragraph("p_a", "Presidency", "", ("Barack Obama was president.", "Obama was born in Hawaii."))]
    rows = _rows(solo)
    solo_tables = build_entities(rows, _mentions(rows), solo, merge_person_aliases=True)
    assert obama not in solo_tables.entities["id"] and solo_tables.alias_pairs == []


def test_without_the_switch_mentions_keep_their_own_entities() -> None:
    """The paper's build (``person_alias_merge`` off, the default): 'Obama' stays its own entity, a LOOKUP target of
    its own (a bare surname is a valid name to the invalid-target filter), and no 'alias' edge is made."""
    paragraphs = [Paragraph("p_a", "Presidency", "", ("Barack Obama was president.", "Obama was born in Hawaii."))]
    rows = _rows(paragraphs)
    tables = build_entities(rows, _mentions(rows), paragraphs)
    ment = tables.mentions
    by = {(sid, surface): eid for sid, eid, surface in zip(ment["sentence_id"], ment["entity_id"], ment["surface"])}
    obama = entity_id("PERSON", "obama")
    assert by[("p_a:1", "Obama")] == obama and tables.alias_pairs == []
    ents = dict(zip(tables.entities["id"], zip(tables.entities["lookupable"], tables.entities["reject_reason"])))
    assert ents[obama] == (True, "")
