"""Entity-entity SYNONYM edges: canonical, title, alias, abbreviation and embedding links.

Every edge is undirected and stored once with ``src < dst`` (string order). A pair linked by
several rules keeps the first kind in the priority ``title > canonical > alias > abbreviation >
embedding``; rule edges score 1.0, embedding edges their cosine (rounded to 6 decimals).
The output is sorted by ``(src, dst)`` and does not depend on the input order.

*alias* edges come from the build's document-local person-alias merge (:func:`person_aliases`): a
truncated name (``Schneider``) whose mentions in one article were re-pointed at the full name
(``Helge Schneider``) but which is still mentioned elsewhere keeps a link to that full name, so the
corpus-wide identity the shared surname gave is not lost.
"""
from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.lexicon import INITIALS_STOPWORDS, NATIONALITIES

__all__ = ["EntityRecord", "SynonymEdge", "link_entities", "abbreviation_key", "add_embedding_candidates",
           "embedding_block_rows", "embedding_candidates", "embedding_candidates_of", "embedding_rows",
           "excluded_columns", "initials", "name_alias_of", "person_aliases", "rule_edges", "spelling_key",
           "title_mention_index", "title_mentions", "title_name"]

KINDS: tuple[str, ...] = ("title", "canonical", "alias", "abbreviation", "embedding")
_PRIORITY = {k: i for i, k in enumerate(KINDS)}
_TRAILING_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
# Cap on one similarity block (rows x candidates float32 values): 2**25 -> 128 MiB.
_BLOCK_VALUES = 1 << 25


@dataclass(frozen=True)
class EntityRecord:
    """One entity node: id, canonical key, NER label (titles may use any label), a surface."""

    id: str
    canonical: str
    label: str
    surface: str


@dataclass(frozen=True)
class SynonymEdge:
    """Undirected synonym link, ``src < dst``; ``kind`` in :data:`KINDS`; ``score`` in [0, 1]."""

    src: str
    dst: str
    kind: str
    score: float


def abbreviation_key(surface: str) -> str | None:
    """Lowercase letters of an abbreviation-like surface, else None.

    Abbreviation-like: after removing periods, 2-6 letters, all uppercase
    (``NASA`` -> ``nasa``, ``U.S.`` -> ``us``, ``U.S.A.`` -> ``usa``; ``Nasa``/``US Army`` -> None).
    """
    s = surface.strip().replace(".", "")
    if 2 <= len(s) <= 6 and s.isalpha() and s.isupper():
        return s.lower()
    return None


def initials(canonical: str) -> set[str]:
    """Initial-letter keys of a multi-word canonical: content words only, and all words.

    ``national aeronautics and space administration`` -> {``nasa``, ``naasa``};
    ``department of defense`` -> {``dd``, ``dod``}. Empty for single-token canonicals.
    """
    toks = [t for t in canonical.split() if t[:1].isalpha()]
    if len(toks) < 2:
        return set()
    content = [t for t in toks if t not in INITIALS_STOPWORDS]
    keys = {"".join(t[0] for t in toks)}
    if len(content) >= 2:
        keys.add("".join(t[0] for t in content))
    return {k for k in keys if 2 <= len(k) <= 6}


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _add(edges: dict[tuple[str, str], SynonymEdge], a: str, b: str, kind: str, score: float) -> None:
    if a == b:
        return
    key = _pair(a, b)
    old = edges.get(key)
    if old is None or _PRIORITY[kind] < _PRIORITY[old.kind]:
        edges[key] = SynonymEdge(key[0], key[1], kind, score)


#: shortest spelling key (:func:`spelling_key`) a title is linked by: shorter ones ("li na" / "lina") are too
#: often different names
_MIN_SPELLING_KEY = 6


def spelling_key(canonical: str) -> str:
    """``canonical`` without diacritics, spaces and hyphens: one key for the spellings of one name that differ only
    there ("andré de toth" and "andre detoth" -> "andredetoth")."""
    decomposed = unicodedata.normalize("NFKD", canonical)
    return "".join(c for c in decomposed if not unicodedata.combining(c) and c not in " -")


def _title_edges(ents: Sequence[EntityRecord], title_ids: Collection[str], edges: dict, spelling: bool = False) -> None:
    """'title' edges from each title entity to the entities its article title names: the same canonical, the
    canonical without a trailing parenthetical ("Paris (film)" -> "paris") and, with ``spelling``
    (``BuildConfig.spelling_links``), the same :func:`spelling_key` (the article "Andre DeToth" and the PERSON
    "André De Toth" a film article credits)."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for e in ents:
        if e.id not in title_ids and e.canonical:
            by_key[e.canonical].append(e.id)
            folded = spelling_key(e.canonical)
            if spelling and folded != e.canonical and len(folded) >= _MIN_SPELLING_KEY:
                by_key[folded].append(e.id)
    for t in ents:
        if t.id not in title_ids:
            continue
        keys = {t.canonical}
        base = _TRAILING_PAREN.sub("", t.surface) if t.surface else ""
        if base and base != t.surface:
            keys.add(canonicalize(base))  # "Paris (film)" -> "paris"
        if spelling:
            keys |= {folded for folded in map(spelling_key, keys) if len(folded) >= _MIN_SPELLING_KEY}
        for key in keys:
            for eid in by_key.get(key, ()) if key else ():
                _add(edges, t.id, eid, "title", 1.0)


def _canonical_edges(ents: Sequence[EntityRecord], edges: dict) -> None:
    groups: dict[str, list[str]] = defaultdict(list)
    for e in ents:
        if e.canonical:
            groups[e.canonical].append(e.id)
    for ids in groups.values():
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                _add(edges, a, b, "canonical", 1.0)


def _abbreviation_edges(ents: Sequence[EntityRecord], edges: dict) -> None:
    long_forms: dict[str, list[EntityRecord]] = defaultdict(list)
    for e in ents:
        for key in initials(e.canonical):
            long_forms[key].append(e)
    for e in ents:
        key = abbreviation_key(e.surface) if e.surface else None
        if key is None:
            continue
        for long in long_forms.get(key, ()):
            # "US Steel" is not an expansion of "US": the short form must not be a token of it.
            if key not in long.canonical.split():
                _add(edges, e.id, long.id, "abbreviation", 1.0)


def embedding_block_rows(m: int) -> int:
    """Rows per similarity block of an [m, d] name matrix: about 128 MiB of float32 similarities
    (``_BLOCK_VALUES``), at most 4096 rows, at least 1."""
    return max(1, min(4096, _BLOCK_VALUES // max(1, m)))


def excluded_columns(ids: Sequence[str], linked: Collection[tuple[str, str]]) -> dict[int, list[int]]:
    """``{row: [columns]}`` of the pairs in ``linked`` (rule edges, ``(src, dst)`` ids) between two of ``ids``, both
    ways: the columns :func:`embedding_candidates` never proposes for a row. Indexes into the id-sorted ``ids``."""
    pos = {eid: i for i, eid in enumerate(ids)}
    excluded: dict[int, list[int]] = defaultdict(list)
    for a, b in linked:
        if a in pos and b in pos:
            excluded[pos[a]].append(pos[b])
            excluded[pos[b]].append(pos[a])
    return dict(excluded)


def embedding_candidates(
    emb: np.ndarray,
    excluded: Mapping[int, Sequence[int]],
    r0: int,
    r1: int,
    top_k: int,
    min_cosine: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The embedding-link candidates of rows ``[r0, r1)``: each row's ``top_k`` most similar other rows of ``emb``
    with cosine >= ``min_cosine``, columns in ``excluded[row]`` (rule-linked) left out; ties -> the smaller column.

    ``emb``: [m, d] float32, L2-normalised, rows in id order (a column index is an id rank). Pure: any split of
    ``[0, m)`` into ranges gives, concatenated in range order, the candidates of one call over ``[0, m)``; the
    similarities are computed in blocks of :func:`embedding_block_rows` rows starting at ``r0``. Returns (rows, cols,
    scores): int64 absolute row and column indexes and float32 cosines, sorted by row, then score descending, then
    column. :func:`embedding_candidates_of` over ``range(r0, r1)``.
    """
    return embedding_candidates_of(emb, excluded, np.arange(r0, max(r0, r1), dtype=np.int64), top_k, min_cosine)


def embedding_candidates_of(
    emb: np.ndarray,
    excluded: Mapping[int, Sequence[int]],
    rows: Sequence[int] | np.ndarray,
    top_k: int,
    min_cosine: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`embedding_candidates` of the given ``rows`` only (strictly increasing indexes into ``emb``; any subset of
    ``[0, m)``): each one's top-``top_k`` columns among *all* rows of ``emb``, by the same rule. ``graph/append.py``
    re-ranks the entities an append affects with it. A row's candidates do not depend on which other rows are asked
    for, up to the float32 product's ulps (the similarities are computed in blocks of :func:`embedding_block_rows`
    of the given rows). Returns (rows, cols, scores) as :func:`embedding_candidates`; ValueError on an index out of
    range or rows not strictly increasing.
    """
    m = emb.shape[0]
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    if rows.size and (rows[0] < 0 or rows[-1] >= m or np.any(np.diff(rows) <= 0)):
        raise ValueError(f"embedding_candidates_of: rows must be strictly increasing indexes in [0, {m})")
    if m < 2 or top_k <= 0 or rows.size == 0:
        return empty
    block = embedding_block_rows(m)
    found = []
    for i0 in range(0, rows.size, block):
        chunk = rows[i0 : i0 + block]
        found.extend(_block_candidates(emb, excluded, chunk, top_k, min_cosine))
    if not found:
        return empty
    return tuple(np.concatenate(parts) for parts in zip(*found))  # type: ignore[return-value]


def _block_candidates(
    emb: np.ndarray,
    excluded: Mapping[int, Sequence[int]],
    chunk: np.ndarray,
    top_k: int,
    min_cosine: float,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The candidates of one similarity block: the increasing row indexes ``chunk`` against every row of ``emb``.
    ``[]`` when none passes ``min_cosine``, else one (rows, cols, scores) triple in the order of
    :func:`embedding_candidates`."""
    b0, n = int(chunk[0]), chunk.size
    contiguous = int(chunk[-1]) - b0 + 1 == n
    sims = (emb[b0 : b0 + n] if contiguous else emb[chunk]) @ emb.T  # [rows, m] cosine (inputs L2-normalised)
    local = np.arange(n)
    sims[local, chunk] = -np.inf  # self
    for k, r in enumerate(chunk.tolist()):
        if r in excluded:
            sims[k, excluded[r]] = -np.inf
    rows, cols = np.nonzero(sims >= min_cosine)
    if rows.size == 0:
        return []
    scores = sims[rows, cols]
    # Sort by row, then score desc, then column (= id order) asc; keep the first top_k per row.
    order = np.lexsort((cols, -scores, rows))
    rows, cols, scores = rows[order], cols[order], scores[order]
    starts = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    rank = np.arange(rows.size) - np.repeat(starts, np.diff(np.r_[starts, rows.size]))
    keep = rank < top_k
    return [(chunk[rows[keep]], cols[keep].astype(np.int64), scores[keep])]


def add_embedding_candidates(edges: dict, ids: Sequence[str], rows: np.ndarray, cols: np.ndarray,
                             scores: np.ndarray) -> None:
    """Merge :func:`embedding_candidates` output into ``edges`` as 'embedding' edges (cosine rounded to 6 places),
    in the given order: the first candidate of a pair sets its score, a rule edge already there is kept."""
    for r, c, s in zip(rows.tolist(), cols.tolist(), scores.tolist()):
        _add(edges, ids[r], ids[c], "embedding", round(float(s), 6))


def _embedding_edges(
    ids: list[str],
    emb: np.ndarray,
    linked: set[tuple[str, str]],
    top_k: int,
    min_cosine: float,
    edges: dict,
) -> None:
    """Exact top-k cosine neighbours (>= min_cosine) of every row among all rows, blockwise
    (:func:`embedding_candidates` over every row, merged in row order).

    ``ids`` sorted ascending and ``emb`` [m, d] float32 in the same order; ties -> smaller id.
    """
    rows, cols, scores = embedding_candidates(emb, excluded_columns(ids, linked), 0, len(ids), top_k, min_cosine)
    add_embedding_candidates(edges, ids, rows, cols, scores)


def _id_sorted(entities: Sequence[EntityRecord]) -> list[int]:
    """Indexes of ``entities`` in id order; ValueError when an id repeats."""
    if len({e.id for e in entities}) != len(entities):
        raise ValueError("link_entities: entity ids must be unique")
    return sorted(range(len(entities)), key=lambda i: entities[i].id)


def rule_edges(
    entities: Sequence[EntityRecord],
    *,
    title_ids: Collection[str],
    alias_pairs: Collection[tuple[str, str]] = (),
    spelling_links: bool = False,
) -> dict[tuple[str, str], SynonymEdge]:
    """The rule SYNONYM edges (title, canonical, alias, abbreviation) among ``entities``, keyed by ``(src, dst)``:
    :func:`link_entities` without embedding links, before its sort (add embedding candidates, then sort the keys).
    Cost: linear in the entities plus the pairs of each shared canonical / initials key."""
    order = _id_sorted(entities)
    ents = [entities[i] for i in order]
    edges: dict[tuple[str, str], SynonymEdge] = {}
    _title_edges(ents, set(title_ids), edges, spelling_links)
    _canonical_edges(ents, edges)
    known = {e.id for e in ents}
    for a, b in sorted(alias_pairs):
        if a in known and b in known:
            _add(edges, a, b, "alias", 1.0)
    _abbreviation_edges(ents, edges)
    return edges


def embedding_rows(entities: Sequence[EntityRecord], embeddings: np.ndarray,
                   lookupable: Sequence[bool] | np.ndarray | None = None) -> tuple[list[str], np.ndarray]:
    """The rows that get embedding links: the (lookup-able) entities' ids in id order and their vectors (float32
    [m, d], contiguous, the input of :func:`embedding_candidates`). ValueError on a shape that does not match."""
    n = len(entities)
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ValueError(f"embeddings must be [n={n}, d], got {emb.shape}")
    mask = np.ones(n, dtype=bool) if lookupable is None else np.asarray(lookupable, dtype=bool)
    if mask.shape != (n,):
        raise ValueError(f"lookupable must be [n={n}], got {mask.shape}")
    sel = [i for i in _id_sorted(entities) if mask[i]]  # id-sorted subset
    return [entities[i].id for i in sel], np.ascontiguousarray(emb[sel])


def link_entities(
    entities: Sequence[EntityRecord],
    *,
    title_ids: Collection[str],
    embeddings: np.ndarray | None = None,
    lookupable: Sequence[bool] | np.ndarray | None = None,
    top_k: int = 5,
    min_cosine: float = 0.80,
    alias_pairs: Collection[tuple[str, str]] = (),
    spelling_links: bool = False,
) -> list[SynonymEdge]:
    """SYNONYM edges among ``entities`` (ids must be unique).

    ``title_ids``: ids of the document-title entities. ``embeddings``: [n, d] L2-normalised
    name embeddings, row i for ``entities[i]``; without them no embedding edges are made.
    ``lookupable``: [n] bool mask; only lookup-able entities get embedding links (both ends).
    Embedding links: each entity's ``top_k`` most similar others with cosine >= ``min_cosine``,
    excluding itself and pairs already linked by a rule; exact, computed in row blocks so memory
    stays bounded (about 128 MiB of similarities per block) for 100k+ entities.
    ``alias_pairs``: ``(alias id, full-name id)`` pairs from the build's person-alias merge -> ``alias`` edges
    (pairs naming an unknown id are ignored). ``spelling_links``: titles also link across spellings that differ
    only in accents, spaces or hyphens (``BuildConfig.spelling_links``; off: the paper's surface normalization).
    The steps are public for the Ray build, which runs the embedding candidates' row ranges as tasks:
    :func:`rule_edges`, :func:`embedding_rows`, :func:`excluded_columns`, :func:`embedding_candidates`,
    :func:`add_embedding_candidates` (``graph/append.py`` re-ranks a subset of rows: :func:`embedding_candidates_of`).
    """
    edges = rule_edges(entities, title_ids=title_ids, alias_pairs=alias_pairs, spelling_links=spelling_links)
    if embeddings is not None and len(entities):
        ids, emb = embedding_rows(entities, embeddings, lookupable)
        _embedding_edges(ids, emb, set(edges), top_k, min_cosine, edges)
    return [edges[k] for k in sorted(edges)]


# ---------------------------------------------------------------- person aliases (document-local)

def title_name(title: str) -> str:
    """Canonical form of a document title without its trailing parenthetical (``John Smith (footballer)`` -> ``john smith``)."""
    return canonicalize(_TRAILING_PAREN.sub("", title)) if title else ""


def _tok_match(a: str, b: str) -> tuple[bool, bool]:
    """(match, by_initial): equal tokens, or one is a single letter that starts the other."""
    if a == b:
        return True, False
    if (len(a) == 1 and a.isalpha() and b.startswith(a)) or (len(b) == 1 and b.isalpha() and a.startswith(b)):
        return True, True
    return False, False


def name_alias_of(short: str, long: str) -> bool:
    """Whether person name ``short`` can be a truncated alias of ``long`` (both canonical forms).

    Rules (conservative): ``long`` has >= 2 tokens; both end in the same surname token; ``short`` has fewer tokens,
    or as many with more single-letter initials; and ``short``'s given names align, in order, to a subsequence of
    ``long``'s given names, each pair equal or an initial of the other. A bare surname (``obama`` -> ``barack obama``)
    always qualifies; a name with given names only when the alignment uses at least one initial
    (``peder lauritz sørensen`` -> ``s p l sørensen``, ``j r r tolkien`` -> ``john ronald reuel tolkien``), so a
    dropped middle name alone (``john adams`` vs ``john quincy adams``, father and son) never does.
    """
    s, l = short.split(), long.split()
    if len(l) < 2 or not s or s == l or s[-1] != l[-1]:
        return False
    n_init = lambda toks: sum(len(t) == 1 for t in toks)  # noqa: E731
    if len(s) > len(l) or (len(s) == len(l) and n_init(s) <= n_init(l)):
        return False
    sg, lg = s[:-1], l[:-1]
    if not sg:
        return True
    j, used_initial = 0, False
    for t in sg:  # greedy leftmost alignment is optimal for subsequence embedding under any predicate
        while j < len(lg):
            ok, by_initial = _tok_match(t, lg[j])
            j += 1
            if ok:
                used_initial |= by_initial
                break
        else:
            return False
    return used_initial


def person_aliases(names: Sequence[tuple[str, str]], title: tuple[str, str] | None = None) -> dict[str, str]:
    """Document-local person aliases: ``{alias entity id: entity id it names}`` for one paragraph.

    ``names``: ``(entity id, canonical)`` of the PERSON entities mentioned in the paragraph; ``title``: the paragraph's
    title entity as ``(entity id, title_name(title))``, or None. Every alias is a PERSON name; its target is a longer
    name of the same paragraph (:func:`name_alias_of`) or the title. Names are resolved longest first, so a chain
    (``sørensen`` -> ``peder lauritz sørensen`` -> title ``s p l sørensen``) ends at its root. An alias whose
    candidates lead to more than one root is ambiguous and left alone (``obama`` beside both ``barack obama`` and
    ``michelle obama``). Deterministic: the result does not depend on the order of ``names``.
    """
    # longest first; among equally long names the fuller (fewer initials) first: every possible target precedes its aliases
    people = sorted(set(names), key=lambda x: (-len(x[1].split()), sum(len(t) == 1 for t in x[1].split()), x[1], x[0]))
    root: dict[str, str] = {}
    out: dict[str, str] = {}
    done: list[tuple[str, str]] = [title] if title and title[1] else []
    for eid, canon in people:
        cands = {root.get(oid, oid) for oid, oc in done if oid != eid and name_alias_of(canon, oc)}
        if len(cands) == 1:
            target = next(iter(cands))
            out[eid] = target
            root[eid] = target
        done.append((eid, canon))
    return dict(sorted(out.items()))


#: shortest title name (characters) that title mentions match: shorter names are mostly words or initials
TITLE_MENTION_MIN_CHARS = 4


def title_mention_index(titles: Sequence[str]) -> dict[tuple[str, ...], str]:
    """``{name tokens: title}`` for :func:`title_mentions`: each title's :func:`title_name` split into tokens, for the
    names of at least :data:`TITLE_MENTION_MIN_CHARS` characters that are not a number, not made of English stop words
    only (the song ``This (Darius Rucker song)`` would claim every "this") and not a nationality word. A name that
    several titles share (``John Smith (footballer)``, ``John Smith (actor)``) is left out: a mention of it names
    neither."""
    from spacy.lang.en.stop_words import STOP_WORDS  # spaCy is the build's NER; its word list needs no model

    by_name: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for title in set(titles):
        name = title_name(title)
        tokens = tuple(name.split())
        if (len(name) >= TITLE_MENTION_MIN_CHARS and not name.replace(" ", "").isdigit() and name not in NATIONALITIES
                and not all(t in STOP_WORDS for t in tokens)):
            by_name[tokens].add(title)
    return {name: next(iter(ts)) for name, ts in sorted(by_name.items()) if len(ts) == 1}


def _capitalised_inside(text: str, word: str) -> bool:
    """Whether ``word`` (or its plural) occurs in ``text`` capitalised, not as the text's first word."""
    return any(m.start() > 0 and text[m.start()].isupper()
               for m in re.finditer(rf"(?<!\w){re.escape(word)}s?(?!\w)", text, re.IGNORECASE))


def title_mentions(text: str, index: Mapping[tuple[str, ...], str], max_tokens: int) -> list[str]:
    """Titles (values of ``index``) whose name occurs in ``text`` as whole canonical tokens, in text order.

    The text is canonicalised like an entity surface (lower case, punctuation -> spaces); a name also matches with a
    plural ``s`` on its last token (``politicians``). Where names overlap, the longest wins and the tokens it covers
    match nothing else (``film director`` hides ``director``). A one-word name whose title disambiguates it with a
    parenthetical (``Wale (rapper)``, ``Star (2017 film)``) is a common word as often as a name, so it matches only
    where the text capitalises it after its first word ("featuring Wale", not "a star"); concept articles without a
    parenthetical ("Politician") match in any case. ``max_tokens``: the longest name in ``index``.
    """
    tokens = canonicalize(text).split()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for n in range(min(max_tokens, len(tokens) - i), 0, -1):
            gram = tuple(tokens[i : i + n])
            title = index.get(gram)
            if title is None and gram[-1].endswith("s") and len(gram[-1]) > 1:
                title = index.get(gram[:-1] + (gram[-1][:-1],))
            if title is not None and n == 1 and _TRAILING_PAREN.search(title) and not _capitalised_inside(text, title_name(title)):
                title = None
            if title is not None:
                out.append(title)
                i += n
                break
        else:
            i += 1
    return out
