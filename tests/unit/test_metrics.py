"""Metrics (paper appendix "Evaluation Details"), RRF and the environment-built lookup query.

Every expected value is computed by hand in the comments (R-S with the real MiniLM encoder:
tests/e2e/test_metrics_real_encoder.py).
"""
from __future__ import annotations

import pytest

from harness_g.agent.env.retrieval import lookup_query, rrf
from harness_g.agent.eval import metrics as M


# -- normalisation ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Eiffel Tower", "eiffel tower"),  # case + leading article
        ("  an   apple\tA day\n", "apple day"),  # articles a/an anywhere, whitespace folded
        ("Hello, World!", "hello world"),  # punctuation removed
        ("O'Neill", "oneill"),  # punctuation inside a word is removed, not split
        ("theatre anthem", "theatre anthem"),  # article removal is word-bounded
        ("The-Beatles", "thebeatles"),  # punctuation goes first, so 'the' is glued on
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert M.normalize_answer(text) == expected


# -- EM / F1 -------------------------------------------------------------------------------------
def test_exact_match_over_aliases() -> None:
    assert M.exact_match("the eiffel tower.", ["Tour Eiffel", "Eiffel Tower"]) == 1.0
    assert M.exact_match("Eiffel Tower in Paris", ["Eiffel Tower"]) == 0.0
    assert M.exact_match("", ["Eiffel Tower"]) == 0.0
    assert M.exact_match(None, ["x"]) == 0.0  # type: ignore[arg-type]
    assert M.exact_match("anything", []) == 0.0


def test_token_f1_hand_computed() -> None:
    # norm("the Eiffel tower in Paris") = "eiffel tower in paris" (4 tokens); gold "eiffel tower" (2 tokens)
    # overlap 2 -> 2*2 / (4+2) = 2/3
    assert M.token_f1("the Eiffel tower in Paris", ["Eiffel Tower"]) == pytest.approx(2 / 3)
    # max over aliases: "Tour Eiffel" overlaps 1 token -> 2*1/(2+2) = 0.5; "the Eiffel Tower" -> 1.0
    assert M.token_f1("Eiffel Tower", ["Tour Eiffel"]) == pytest.approx(0.5)
    assert M.token_f1("Eiffel Tower", ["Tour Eiffel", "the Eiffel Tower"]) == pytest.approx(1.0)
    # no overlap
    assert M.token_f1("Louvre", ["Eiffel Tower"]) == 0.0


def test_token_f1_is_multiset_overlap() -> None:
    # pred x y y (3) vs gold y y z (3): multiset overlap {y: 2} = 2 -> 2*2/6 = 2/3 (a set overlap would give 1/3)
    assert M.token_f1("x y y", ["y y z"]) == pytest.approx(2 / 3)
    # pred "new york new york" (4) vs "new york" (2): overlap min(2,1)+min(2,1) = 2 -> 4/6
    assert M.token_f1("New York, New York", ["new york"]) == pytest.approx(2 / 3)


def test_token_f1_empty() -> None:
    assert M.token_f1("", ["Paris"]) == 0.0
    assert M.token_f1(None, ["Paris"]) == 0.0  # type: ignore[arg-type]
    assert M.token_f1("Paris", []) == 0.0
    assert M.token_f1("the", ["Paris"]) == 0.0  # normalises to nothing


# -- evidence ------------------------------------------------------------------------------------
def test_gold_units_sentence_and_paragraph() -> None:
    assert M.gold_units(["p1:0", "p2:3", "p1:0"], ["p1", "p2"]) == ["p1:0", "p2:3"]  # sentences win, deduped
    assert M.gold_units([], ["p1", "p2", "p1"]) == [frozenset({"p1"}), frozenset({"p2"})]
    assert M.gold_units([], []) == []


def test_evidence_recall_precision_sentence_units() -> None:
    units = M.gold_units(["p1:0", "p2:3"], [])
    # committed p1:0 (gold) and p3:1 (not): recall 1/2, precision 1/2
    assert M.evidence_recall(units, ["p1:0", "p3:1"]) == pytest.approx(0.5)
    assert M.evidence_precision(units, ["p1:0", "p3:1"]) == pytest.approx(0.5)
    # a sibling sentence of a gold sentence does not satisfy a sentence unit
    assert M.evidence_recall(units, ["p1:1"]) == 0.0
    assert M.evidence_precision(units, ["p1:1"]) == 0.0
    assert M.evidence_recall(units, ["p2:3", "p1:0"]) == 1.0
    assert M.evidence_recall(units, []) == 0.0
    assert M.evidence_precision(units, []) is None  # nothing committed
    assert M.evidence_recall([], ["p1:0"]) is None  # no gold
    assert M.evidence_precision([], ["p1:0"]) is None


def test_evidence_recall_precision_paragraph_units() -> None:
    units = M.gold_units([], ["p_a", "p_b"])
    # any sentence of a gold paragraph satisfies it: p_a satisfied (twice), p_b not -> recall 1/2;
    # 2 of 3 committed sentences lie in gold paragraphs -> precision 2/3
    committed = ["p_a:4", "p_a:0", "p_c:0"]
    assert M.evidence_recall(units, committed) == pytest.approx(0.5)
    assert M.evidence_precision(units, committed) == pytest.approx(2 / 3)
    # paragraph ids are split at the LAST colon (sentence id = <paragraph id>:<position>)
    units2 = M.gold_units([], ["doc:1"])
    assert M.evidence_recall(units2, ["doc:1:7"]) == 1.0
    assert M.evidence_recall(units2, ["doc:17"]) == 0.0


def test_answer_in_evidence() -> None:
    texts = ["It stands in Paris.", "The tower is called the EIFFEL tower!"]
    assert M.answer_in_evidence(["Eiffel Tower"], texts) is True
    assert M.answer_in_evidence(["Louvre", "paris"], texts) is True
    # token-bounded: "Paris" does not occur in "Parisian"
    assert M.answer_in_evidence(["Paris"], ["Parisian cafes"]) is False
    # an alias that normalises to nothing never matches
    assert M.answer_in_evidence(["the", ""], texts) is False
    assert M.answer_in_evidence([], texts) is False
    assert M.answer_in_evidence(["Paris"], []) is False


def test_mean_skips_none() -> None:
    assert M.mean([1.0, None, 0.0]) == pytest.approx(0.5)
    assert M.mean([None, None]) is None


def test_retrieval_similarity_cosine() -> None:
    import numpy as np

    a, b = np.array([3.0, 4.0]), np.array([4.0, 3.0])
    assert M.retrieval_similarity(a, b) == pytest.approx(24 / 25)
    assert M.retrieval_similarity(None, b) is None


# -- RRF ------------------------------------------------------------------------------------------
def test_rrf_hand_computed_with_id_ties() -> None:
    rankings = [["a", "b", "c"], ["b", "a", "d"], ["c"]]
    fused = rrf(rankings, k=60)
    # a = 1/61 + 1/62, b = 1/62 + 1/61 (tie with a -> id order), c = 1/63 + 1/61, d = 1/63
    expected = [("a", 1 / 61 + 1 / 62), ("b", 1 / 62 + 1 / 61), ("c", 1 / 63 + 1 / 61), ("d", 1 / 63)]
    assert [d for d, _ in fused] == [d for d, _ in expected]
    for (_, got), (_, want) in zip(fused, expected):
        assert got == pytest.approx(want)
    # pure tie: order by id, regardless of input order
    assert [d for d, _ in rrf([["z"], ["y"]], k=0)] == ["y", "z"]
    # a duplicate inside one ranking counts once, at its first rank: x=1/1, y=1/2
    assert rrf([["x", "x", "y"]], k=0) == [("x", 1.0), ("y", 0.5)]
    assert rrf([], k=60) == []


# -- lookup query ---------------------------------------------------------------------------------
def test_lookup_query_concat_and_cap() -> None:
    q = "Who directed the film?"
    assert lookup_query(q, []) == q
    assert lookup_query("  Who   directed\tit? ", []) == "Who directed it?"
    assert lookup_query(q, ["It was Jaws.", "Spielberg did."]) == "Who directed the film? It was Jaws. Spielberg did."
    # 10 question words + 2 x 40 evidence words -> capped at 64: question, all of C_1, 14 words of C_2
    question = " ".join(f"q{i}" for i in range(10))
    ev1 = " ".join(f"a{i}" for i in range(40))
    ev2 = " ".join(f"b{i}" for i in range(40))
    words = lookup_query(question, [ev1, ev2]).split()
    assert len(words) == 64
    assert words[:10] == question.split() and words[10:50] == ev1.split() and words[50:] == [f"b{i}" for i in range(14)]
    # a question longer than the cap keeps its first 64 words and drops all evidence
    long_q = " ".join(f"w{i}" for i in range(70))
    assert lookup_query(long_q, ["evidence here"]).split() == [f"w{i}" for i in range(64)]
    assert lookup_query(question, [ev1], max_words=12).split() == question.split() + ["a0", "a1"]


# -- R-S: retrieved evidence, per-sentence encodings, no window truncation (paper l.881-887) ------------
class _WindowedBagOfWords:
    """A stand-in sentence encoder with a real encoder's window: it reads only the first ``window``
    words of a text (as a transformer reads only ``max_seq_length`` tokens) and returns the unit
    bag-of-words vector over ``vocab``."""

    def __init__(self, vocab: list[str], window: int):
        self.vocab, self.window = vocab, window

    def __call__(self, texts):
        import numpy as np

        out = np.zeros((len(texts), len(self.vocab)))
        for i, t in enumerate(texts):
            for w in t.split()[: self.window]:
                if w in self.vocab:
                    out[i, self.vocab.index(w)] += 1.0
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


def test_rs_does_not_truncate_long_evidence_to_the_encoder_window() -> None:
    import numpy as np

    enc = _WindowedBagOfWords(["filler", "paris", "capital"], window=8)
    encoder = M.EvidenceEncoder(enc, name="bow", max_tokens=8)
    retrieved = ["filler filler filler filler filler", "filler filler filler filler filler", "Paris is the capital"]
    gold = ["Paris is the capital"]
    # the old R-S: one encoding of the concatenation, which the window cuts after 8 words -- the gold
    # sentence at the tail is never read, so the score is 0
    old = M.retrieval_similarity(enc([" ".join(retrieved)])[0], enc([" ".join(gold)])[0])
    assert old == pytest.approx(0.0)
    # per sentence: Enc(K) = mean of the unit vectors of (normalised) sentences; every sentence counts
    # pieces: "filler x5" -> (1,0,0) twice, "paris is capital" -> (0,1,1)/sqrt2 ; mean = (2/3, 1/(3 sqrt2), 1/(3 sqrt2))
    # gold -> (0,1,1)/sqrt2 ; cos = (2/(3*2)) / (|mean| * 1) with |mean|^2 = 4/9 + 1/9 = 5/9
    want = (1 / 3) / np.sqrt(5 / 9)
    assert M.evidence_similarity(retrieved, gold, encoder) == pytest.approx(want)
    # a single sentence longer than the window is split into window-sized pieces (its tail is read too)
    long_sentence = " ".join(["filler"] * 20 + ["paris", "capital"])
    pieces = encoder.pieces([long_sentence])
    assert all(len(p.split()) <= 8 for p in pieces) and " ".join(pieces) == M.normalize_answer(long_sentence)
    # pieces: filler x8, filler x8, "filler x4 paris capital" -> (1,0,0), (1,0,0), (4,1,1)/sqrt18
    v3 = np.array([4.0, 1.0, 1.0]) / np.sqrt(18)
    mean = (2 * np.array([1.0, 0.0, 0.0]) + v3) / 3
    g = np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    assert M.evidence_similarity([long_sentence], gold, encoder) == pytest.approx(float(mean @ g / np.linalg.norm(mean)))
    assert M.retrieval_similarity(enc([long_sentence])[0], enc(gold)[0]) == 0.0  # one truncated encoding: tail unseen
    # no gold: not scored; nothing retrieved: 0 (Graph-R1 scores empty knowledge 0)
    assert M.evidence_similarity(retrieved, [], encoder) is None
    assert M.evidence_similarity([], gold, encoder) == 0.0
    assert M.evidence_similarity(["", "  "], gold, encoder) == 0.0


def test_retrieved_evidence_is_u0_lookups_and_commits() -> None:
    traj = {
        "initial_visible": ["p1:0", "p1:1", "p2:0"],
        "steps": [
            {"action_type": "SELECT", "introduced": ["p1:0"]},
            {"action_type": None, "introduced": []},  # invalid turn
            {"action_type": "LOOKUP", "introduced": ["p3:0", "p1:1"]},
            {"action_type": "LOOKUP", "introduced": ["p4:2"]},  # a last-step LOOKUP counts
        ],
        "committed": ["p1:0"],
    }
    assert M.retrieved_evidence(traj) == ["p1:0", "p1:1", "p2:0", "p3:0", "p4:2"]
    # Standard RAG: no steps, the retrieved chunks are C_T
    assert M.retrieved_evidence({"initial_visible": [], "steps": [], "committed": ["p9:0", "p9:1"]}) == ["p9:0", "p9:1"]
    assert M.RS_EVIDENCE == "retrieved" and M.GRAPH_R1_RS_ENCODER.endswith("sup-simcse-roberta-large")


def test_paragraph_of_inverts_sentence_id() -> None:
    from harness_g.graph.types import paragraph_of, sentence_id

    assert paragraph_of(sentence_id("p_ab12", 3)) == "p_ab12"
    assert paragraph_of(sentence_id("corpus:7", 0)) == "corpus:7"  # a paragraph id may itself hold a colon
    assert M.unit_satisfied(frozenset({"corpus:7"}), [sentence_id("corpus:7", 2)])
