"""Canonical forms of entity surfaces (the key of an entity node) and display forms.

``canonicalize`` steps, in order:

1. Unicode NFKC; curly quotes -> ``'``/``"``; every dash/hyphen variant -> ``-``.
2. Strip surrounding whitespace and *wrapping* quote pairs (``"Heroes"`` -> ``Heroes``).
3. Strip a trailing possessive: ``Obama's`` -> ``Obama``, ``the Beatles'`` -> ``the Beatles``.
4. Lowercase.
5. Double quotes: an even number is decoration and is removed (``dwayne "the rock" johnson``);
   an odd number is kept, so the filter can flag the quote fragment.
6. Periods: between two letters removed (``U.S.`` -> ``us``, ``Ph.D`` -> ``phd``), between two
   digits kept (``3.14``), elsewhere -> space (``J. R. R. Tolkien`` -> ``j r r tolkien``).
7. Dashes: between word characters -> space (``spider-man`` -> ``spider man``); a dangling
   dash at the very start/end is kept (``anglo-``) so the filter can flag the truncation;
   any other dash -> space.
8. Other punctuation ``, ; : ! ? ( ) [ ] { } < > * / \\ | ~ ^ _`` -> space; ``&``, ``'`` inside
   words (``o'brien``), ``+``, ``#`` are kept.
9. Collapse whitespace; drop one leading ``the `` (only a leading "the", never other articles,
   and never when "the" is the whole surface).
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = ["canonicalize", "display_form"]

_CHAR_MAP = str.maketrans(
    {
        "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'", "´": "'",
        "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "«": '"', "»": '"',
        "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "﹘": "-",
    }
)
_POSSESSIVE = re.compile(r"(?:(?<=\w)'s|(?<=[sS])')$")
_PERIOD_LETTERS = re.compile(r"(?<=[^\W\d_])\.(?=[^\W\d_])")
_PERIOD_DIGITS = re.compile(r"(?<=\d)\.(?=\d)")
_INNER_DASH = re.compile(r"(?<=\w)-(?=\w)")
_OTHER_PUNCT = re.compile(r"[,;:!?()\[\]{}<>*/\\|~^_]")
_SPACES = re.compile(r"\s+")
_WRAPPERS = (('"', '"'), ("'", "'"), ("(", ")"), ("[", "]"))


def _strip_wrappers(s: str) -> str:
    changed = True
    while changed and len(s) >= 2:
        changed = False
        for left, right in _WRAPPERS:
            if s[0] == left and s[-1] == right and len(s) > 2:
                s = s[1:-1].strip()
                changed = True
    return s


def canonicalize(surface: str) -> str:
    """Canonical key of an entity surface (lowercase, single-spaced; '' for junk-only input)."""
    s = unicodedata.normalize("NFKC", surface).translate(_CHAR_MAP).strip()
    s = _strip_wrappers(s)
    s = _POSSESSIVE.sub("", s).lower()
    if s.count('"') % 2 == 0:
        s = s.replace('"', " ")
    # Periods: protect decimals, join dotted acronyms, the rest become spaces.
    s = _PERIOD_DIGITS.sub("\x00", s)
    s = _PERIOD_LETTERS.sub("", s)
    s = s.replace(".", " ").replace("\x00", ".")
    s = _INNER_DASH.sub(" ", s)
    s = _OTHER_PUNCT.sub(" ", s)
    s = _SPACES.sub(" ", s).strip()
    # Dangling dashes at the ends survive (truncation marker); inner free-standing ones do not.
    lead, trail = s.startswith("-"), s.endswith("-") and len(s) > 1
    core = _SPACES.sub(" ", s.replace("-", " ")).strip()
    if not core:
        return "-" if lead or trail else ""
    s = ("-" if lead else "") + core + ("-" if trail else "")
    if s.startswith("the ") and len(s) > 4:
        s = s[4:]
    return s


def display_form(surfaces: Iterable[str]) -> str:
    """Most frequent surface (whitespace-stripped); ties -> shortest, then lexicographic.

    Raises ``ValueError`` when no non-empty surface is given.
    """
    counts = Counter(s.strip() for s in surfaces if s and s.strip())
    if not counts:
        raise ValueError("display_form needs at least one non-empty surface")
    return min(counts, key=lambda s: (-counts[s], len(s), s))
