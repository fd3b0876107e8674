"""Invalid-target filter (paper appendix "Invalid-Target Filter").

Decides whether an entity may be offered as a LOOKUP target. It never removes anything from the
graph: the mention stays in its sentence for SELECT and answering; only lookup-ability changes.

Reason codes, checked in this order (first hit wins), all on the *canonical* form
(:func:`harness_g.graph.text.canonical.canonicalize`):

``empty``            canonical is blank.
``label:<LABEL>``    NER label in DATE, TIME, CARDINAL, ORDINAL, QUANTITY, PERCENT, MONEY, NORP.
``pure_number``      digits with optional number punctuation ``. , : / - + %`` and spaces, and
                     an optional ordinal/decade suffix (``1892``, ``3.14``, ``1,000``, ``2nd``,
                     ``1990s``).
``single_char``      exactly one non-space character.
``quote_fragment``   contains a ``"`` (canonicalisation keeps only unbalanced ones) or starts/ends
                     with ``'`` (a leading ``'s`` is a truncated alias instead).
``truncated_alias``  (a) starts with ``'s`` or a dangling ``-``; (b) ends with a dangling ``-``;
                     (c) its last token is a connector in ``DANGLING_TAIL_WORDS``
                     (``harry potter and the``, ``university of``); (d) PERSON only, with
                     ``known_canonicals`` given: a single token that is the first token of a
                     known multi-token canonical and the last token of none
                     (``barack`` when ``barack obama`` is known; ``obama`` stays valid).
``name_initial``     PERSON only: at least two tokens and the last is a single letter
                     (``john f``, ``smith j``, ``j r``). A leading initial (``j smith``) is a
                     normal abbreviated name and stays valid.
``nationality``      canonical is in the demonym/ethnic lexicon (``american``, ``germans``),
                     whatever the label, since rule-based extraction gives no reliable type.

Known false positives (accepted): ``malcolm x`` (name_initial), ``'s hertogenbosch``
(truncated_alias).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from harness_g.graph.text.lexicon import DANGLING_TAIL_WORDS, NATIONALITIES

__all__ = ["REJECTED_LABELS", "LookupFilter", "lookup_rejection", "is_lookupable"]

REJECTED_LABELS: frozenset[str] = frozenset(
    {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "NORP"}
)
_PURE_NUMBER = re.compile(r"[\d.,:/+%\- ]*\d[\d.,:/+%\- ]*(?:st|nd|rd|th|s)?")


class LookupFilter:
    """Invalid-target filter with a precomputed index of known PERSON canonicals.

    ``known_canonicals``: canonical forms of known PERSON entities (pass PERSON entities only:
    with other labels ``kennedy`` would be rejected because of ``kennedy space center``).
    Build once, then call :meth:`rejection` per entity (O(1) per call).
    """

    def __init__(self, known_canonicals: Iterable[str] | None = None) -> None:
        firsts: set[str] = set()
        lasts: set[str] = set()
        for k in known_canonicals or ():
            toks = k.split()
            if len(toks) >= 2:
                firsts.add(toks[0])
                lasts.add(toks[-1])
        self._first_only = frozenset(firsts - lasts)

    def rejection(self, canonical: str, label: str) -> str | None:
        """Reason code why ``(canonical, label)`` is not lookup-able, or None if it is."""
        c = canonical.strip()
        if not c:
            return "empty"
        if label in REJECTED_LABELS:
            return f"label:{label}"
        if _PURE_NUMBER.fullmatch(c):
            return "pure_number"
        if len(c.replace(" ", "")) == 1:
            return "single_char"
        if c.startswith("'s") and (len(c) == 2 or not c[2].isalnum()):
            return "truncated_alias"
        if '"' in c or c.startswith("'") or c.endswith("'"):
            return "quote_fragment"
        toks = c.split()
        if c.startswith("-") or c.endswith("-") or toks[-1] in DANGLING_TAIL_WORDS:
            return "truncated_alias"
        if label == "PERSON":
            if len(toks) == 1 and c in self._first_only:
                return "truncated_alias"
            if len(toks) >= 2 and len(toks[-1]) == 1 and toks[-1].isalpha():
                return "name_initial"
        if c in NATIONALITIES:
            return "nationality"
        return None


_LAST_FILTER: list[tuple[object, int, LookupFilter]] = []  # one-entry cache (known set, len, filter)


def _filter_for(known: set[str] | None) -> LookupFilter:
    # Bulk callers pass the same set for every entity: index it once, not once per call.
    # The cache is keyed on the set's identity and size (a same-size mutation is not detected;
    # pass a fresh set or use LookupFilter directly if the set changes).
    if known is None:
        return _NO_KNOWN
    if _LAST_FILTER and _LAST_FILTER[0][0] is known and _LAST_FILTER[0][1] == len(known):
        return _LAST_FILTER[0][2]
    f = LookupFilter(known)
    _LAST_FILTER[:] = [(known, len(known), f)]
    return f


_NO_KNOWN = LookupFilter()


def lookup_rejection(
    canonical: str, label: str, *, known_canonicals: set[str] | None = None
) -> str | None:
    """Reason code why an entity is not a valid LOOKUP target, or None if it is lookup-able.

    ``known_canonicals`` (ideally PERSON canonicals only) enables the first-name-only
    truncated-alias rule. The index built from it is reused while the same set object (same
    size) is passed again, so calling this once per entity with one shared set is O(1) per call.
    """
    return _filter_for(known_canonicals).rejection(canonical, label)


def is_lookupable(canonical: str, label: str, *, known_canonicals: set[str] | None = None) -> bool:
    """Convenience: ``lookup_rejection(...) is None``."""
    return lookup_rejection(canonical, label, known_canonicals=known_canonicals) is None
