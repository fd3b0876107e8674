"""What each benchmark reader does with the paper's corpus chunking (harness-g.tex l.820: 1,200-token chunks, 100-token
overlap), as the README states it: passages are kept whole, a passage longer than ``chunk_tokens`` whitespace tokens
is cut into overlapping chunks (MuSiQue, NQ, PopQA, FlashRAG and plain corpora), and the sentence-split HotpotQA and
2Wiki paragraphs are never cut (their gold labels index sentences). Run with a tiny chunk size on the shipped slices,
so every reader meets passages over it; benchmarks/results/chunking.md measures the dev sets at 1,200."""
from __future__ import annotations

import pytest
from helpers.paths import TEST_DATA

from harness_g.graph.readers import read_dataset
from harness_g.graph.readers.chunking import count_tokens

SLICES = {
    "hotpotqa": TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json",
    "2wiki": TEST_DATA / "2wikimultihopqa" / "dev.subset.json",
    "musique": TEST_DATA / "musique" / "musique_ans_v1.0_dev.subset.jsonl",
    "nq": TEST_DATA / "nq" / "nq-open-oracle.subset.jsonl",
    "popqa": TEST_DATA / "popqa" / "popqa.subset.json",
}


@pytest.mark.parametrize("fmt", ["hotpotqa", "2wiki"])
def test_sentence_split_paragraphs_are_never_chunked(fmt: str) -> None:
    whole = read_dataset(fmt, SLICES[fmt], chunk_tokens=10**9, chunk_overlap=0)
    small = read_dataset(fmt, SLICES[fmt], chunk_tokens=20, chunk_overlap=5)
    assert any(count_tokens(p.text) > 20 for p in whole.paragraphs)  # there was something to cut
    assert [p.id for p in small.paragraphs] == [p.id for p in whole.paragraphs]
    assert not any("#chunk" in p.source for p in small.paragraphs)


@pytest.mark.parametrize("fmt", ["musique", "nq", "popqa"])
def test_passages_over_the_limit_are_chunked_and_the_others_kept_whole(fmt: str) -> None:
    whole = read_dataset(fmt, SLICES[fmt], chunk_tokens=10**9, chunk_overlap=0)
    small = read_dataset(fmt, SLICES[fmt], chunk_tokens=60, chunk_overlap=10)
    long = [p for p in whole.paragraphs if count_tokens(p.text) > 60]
    short = {p.id for p in whole.paragraphs if count_tokens(p.text) <= 60}
    assert long and short, "the slice must hold passages on both sides of the limit"
    assert short <= {p.id for p in small.paragraphs}  # a passage within the limit stays one paragraph, unchanged
    chunks = [p for p in small.paragraphs if "#chunk" in p.source]
    assert chunks and all(count_tokens(p.text) <= 60 for p in chunks)
    assert len(small.paragraphs) > len(whole.paragraphs)
