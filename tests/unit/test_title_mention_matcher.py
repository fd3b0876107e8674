"""Title mentions (``BuildConfig.title_mentions``): the pure matcher of graph/text/linking.py and the config's hash.
The build on a real corpus (PopQA occupation questions): tests/e2e/test_title_mentions.py."""
from __future__ import annotations

from harness_g.graph.config import BuildConfig
from harness_g.graph.text.linking import title_mention_index, title_mentions


def _find(text: str, titles: list[str]) -> list[str]:
    index = title_mention_index(titles)
    return title_mentions(text, index, max((len(k) for k in index), default=1))


def test_index_drops_the_parenthetical_and_names_too_short_numeric_or_shared() -> None:
    index = title_mention_index(["Politician", "John Finlay (Canadian politician)", "Hop (film)", "1984",
                                 "John Smith (footballer)", "John Smith (actor)", "Film director", "This (Darius Rucker song)",
                                 "Whatever Will Be", "Canadian", "Actor"])
    # "hop" < 4 characters; "1984" a number; John Smith shared; "this", "whatever will be" stop words; a nationality
    assert index == {("politician",): "Politician", ("john", "finlay"): "John Finlay (Canadian politician)",
                     ("film", "director"): "Film director", ("actor",): "Actor"}


def test_whole_words_case_insensitive_with_a_plural() -> None:
    titles = ["Politician", "Film director", "Physician"]
    assert _find("John Finlay was a Canadian politician.", titles) == ["Politician"]
    assert _find("Politicians represent the people.", titles) == ["Politician"]
    assert _find("He was also a PHYSICIAN and a film director.", titles) == ["Physician", "Film director"]
    assert _find("An apolitician is not a word; nor is politicianship.", titles) == []


def test_a_one_word_name_the_title_disambiguates_matches_only_capitalised_inside_the_text() -> None:
    titles = ["Star (2017 film)", "Wale (rapper)", "Actor"]
    assert _find("She became a star and an actor.", titles) == ["Actor"]  # the word, not the film
    assert _find("It features guest appearances from Wale and Olamide.", titles) == ["Wale (rapper)"]
    assert _find("Star is a 2017 film.", titles) == []  # the first word is capitalised anyway: no evidence
    assert _find("The film Star was released in 2017.", titles) == ["Star (2017 film)"]


def test_the_longest_overlapping_name_wins() -> None:
    titles = ["Film director", "Director", "Film"]
    assert _find("an American film director and producer", titles) == ["Film director"]
    assert _find("the director of the film", titles) == ["Director", "Film"]


def test_an_extension_of_the_extended_preset_and_part_of_the_content_hash() -> None:
    on, off = BuildConfig(preset="extended"), BuildConfig()
    assert on.title_mentions is True and off.title_mentions is False  # the paper preset (the default) anchors only
    assert on.hashed_fields()["title_mentions"] is True and off.hashed_fields()["title_mentions"] is False
    assert BuildConfig(title_mentions=True).title_mentions is True  # an explicit value beats the preset
