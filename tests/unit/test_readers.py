"""Readers: real data slices (tests/data), chunking, bad input, and the full shared dev sets."""
from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
from helpers.paths import REPO_ROOT as REPO
from helpers.paths import TEST_DATA as DATA

from harness_g.errors import InputError
from harness_g.graph.readers import (
    FORMATS,
    chunk_text,
    count_tokens,
    describe_formats,
    detect_format,
    load_questions,
    read_dataset,
)
from harness_g.graph.readers.multihop import join_continuations
from harness_g.graph.types import Dataset, paragraph_id, sentence_id

SHARED = REPO.parent / "shared" / "data"

FILES = {
    "hotpotqa": "hotpotqa/hotpot_dev_distractor_v1.subset.json",
    "2wiki": "2wikimultihopqa/dev.subset.json",
    "musique": "musique/musique_ans_v1.0_dev.subset.jsonl",
    "nq": "nq/nq-open-oracle.subset.jsonl",
    "popqa": "popqa/popqa.subset.json",
    "triviaqa": "triviaqa/triviaqa_test.subset.jsonl",
}
CORPUS = DATA / "generic" / "corpus.jsonl"
FLASHRAG_QUESTIONS = DATA / "flashrag" / "hotpotqa" / "dev.jsonl"
FLASHRAG_CORPUS = DATA / "flashrag" / "corpus.jsonl"
DOCS = DATA / "generic" / "docs"


def raw_records(fmt: str, root: Path = DATA) -> list[dict]:
    path = root / FILES[fmt]
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(path.read_text(encoding="utf-8"))


def all_sentence_ids(ds: Dataset) -> set[str]:
    return {sentence_id(p.id, i) for p in ds.paragraphs if p.sentences for i in range(len(p.sentences))}


def assert_error(message: str | re.Pattern[str], fn, *args, **kwargs) -> None:
    """``fn`` raises InputError whose one-line message equals (or fully matches) ``message``."""
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    if isinstance(message, re.Pattern):
        assert message.fullmatch(text), text
    else:
        assert text == message


# ------------------------------------------------------------------ real data slices

@pytest.mark.parametrize(
    ("fmt", "n_questions", "n_paragraphs"),
    [
        ("hotpotqa", 6, 60),
        ("2wiki", 8, 76),  # 80 context paragraphs, 4 repeated across questions
        ("musique", 6, 107),  # 120 paragraphs, 13 repeated (within and across questions)
        ("nq", 6, 6),
        ("popqa", 6, 11),  # "Politician" is the object paragraph of two questions
        ("triviaqa", 6, 0),
    ],
)
def test_slice_counts_after_dedup(fmt: str, n_questions: int, n_paragraphs: int) -> None:
    ds = read_dataset(fmt, DATA / FILES[fmt])
    assert ds.name == fmt
    assert len(ds.questions) == n_questions
    assert len(ds.paragraphs) == n_paragraphs
    assert len({p.id for p in ds.paragraphs}) == n_paragraphs
    assert all(p.id == paragraph_id(p.title, p.text) for p in ds.paragraphs)
    assert all(q.dataset == fmt and q.answers for q in ds.questions)
    ids = {p.id for p in ds.paragraphs}
    assert all(g in ids for q in ds.questions for g in q.gold_paragraph_ids)


def resolved_gold(q, raw: dict, by_id: dict) -> tuple[str, ...]:
    """The gold sentence ids ``raw``'s supporting facts should give: each fact resolves to the sentence holding it,
    itself or the sentence a split fragment was joined onto (join_continuations); facts joined into one sentence
    are one gold unit. Asserts the joined sentence holds the fact's text and starts with its own raw sentence."""
    context = {title: sentences for title, sentences in raw["context"]}
    resolved = []
    for title, k in raw["supporting_facts"]:
        (pid,) = [p for p in q.gold_paragraph_ids if by_id[p].title == title]
        sentences = by_id[pid].sentences
        pos = max(j for j in range(k + 1) if sentences[j])
        assert context[title][k].strip() in sentences[pos]
        assert sentences[pos].startswith(context[title][pos].strip())
        resolved.append(f"{pid}:{pos}")
    return tuple(dict.fromkeys(resolved))


@pytest.mark.parametrize("fmt", ["hotpotqa", "2wiki"])
def test_multihop_gold_sentences_resolve(fmt: str) -> None:
    ds = read_dataset(fmt, DATA / FILES[fmt])
    sents = all_sentence_ids(ds)
    by_id = {p.id: p for p in ds.paragraphs}
    for q, raw in zip(ds.questions, raw_records(fmt)):
        assert q.id == raw["_id"]
        assert q.answers == (raw["answer"],)
        assert set(q.gold_sentence_ids) <= sents
        assert q.meta["skipped_supporting_facts"] == 0
        assert q.gold_sentence_ids == resolved_gold(q, raw, by_id)
        assert {by_id[p].title for p in q.gold_paragraph_ids} == {t for t, _ in raw["supporting_facts"]}
    if fmt == "2wiki":
        assert ds.questions[0].meta["evidences"] == raw_records(fmt)[0]["evidences"]
        assert ds.questions[0].meta["type"] == "compositional"


@pytest.mark.parametrize(
    ("raw", "joined", "owner"),
    [
        # a title ending in "!" split from its predicate (2Wiki "Hello Caesar!")
        (("Hello Caesar!", "is a 1927 German silent comedy film.", "It was a hit."),
         ("Hello Caesar! is a 1927 German silent comedy film.", "", "It was a hit."), (0, 0, 2)),
        # inside a parenthesis that closes two sentences later; the empty position in between is skipped
        (("A Day of Roses in August (German: Ein Tag der", "Rosen", "", "im August) is a 1927 film.", "Next."),
         ("A Day of Roses in August (German: Ein Tag der Rosen im August) is a 1927 film.", "", "", "", "Next."),
         (0, 0, 2, 0, 4)),
        # dates after a name; a lead's colon
        (("Carl August Hugo Froelich", "( 5 September 1875 – 1953) was a director."),
         ("Carl August Hugo Froelich ( 5 September 1875 – 1953) was a director.", ""), (0, 0)),
        (("Thought Crimes:", "The Case of the Cannibal Cop is a 2015 film."),
         ("Thought Crimes: The Case of the Cannibal Cop is a 2015 film.", ""), (0, 0)),
        # not joined: a colon after the lead, a parenthesis the text never closes
        (("A lead.", "The couple had eight children:", "The Earl refurbished the house."),
         ("A lead.", "The couple had eight children:", "The Earl refurbished the house."), (0, 1, 2)),
        (("Flipper's New Adventure (1964, the sequel.", "When the film was made into a series.", "Craft died."),
         ("Flipper's New Adventure (1964, the sequel.", "When the film was made into a series.", "Craft died."),
         (0, 1, 2)),
    ],
)
def test_split_fragments_are_joined_onto_the_sentence_they_continue(raw, joined, owner) -> None:
    assert join_continuations(raw) == (joined, owner)
    # the paragraph text (and so its id) does not change
    assert " ".join(s for s in joined if s) == " ".join(s for s in raw if s)


def test_a_gold_fact_on_a_joined_fragment_is_the_joined_sentence(tmp_path: Path) -> None:
    rec = {"_id": "q1", "question": "Who directed Hello Caesar!?", "answer": "Reinhold Schünzel",
           "context": [["Hello Caesar!", ["Hello Caesar!", "is a 1927 film directed by Reinhold Schünzel.", "It was lost."]]],
           "supporting_facts": [["Hello Caesar!", 0], ["Hello Caesar!", 1], ["Hello Caesar!", 2]]}
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([rec]))
    ds = read_dataset("2wiki", path, join_fragments=True)  # BuildConfig.join_fragments (an extension)
    (para,) = ds.paragraphs
    assert para.sentences == ("Hello Caesar! is a 1927 film directed by Reinhold Schünzel.", "", "It was lost.")
    assert ds.questions[0].gold_sentence_ids == (sentence_id(para.id, 0), sentence_id(para.id, 2))
    # the paper's build (the default): the dataset's sentences as given, each fact its own gold sentence
    (plain,) = read_dataset("2wiki", path).paragraphs
    assert plain.id == para.id and plain.sentences == ("Hello Caesar!", "is a 1927 film directed by Reinhold Schünzel.",
                                                       "It was lost.")
    assert read_dataset("2wiki", path).questions[0].gold_sentence_ids == tuple(sentence_id(para.id, k) for k in range(3))


def test_hotpotqa_text_and_sentences_convention() -> None:
    ds = read_dataset("hotpotqa", DATA / FILES["hotpotqa"])
    raw = raw_records("hotpotqa")[0]
    title, sentences = raw["context"][0]
    assert sentences[1].startswith(" ")  # the official leading space ...
    para = next(p for p in ds.paragraphs if p.title == title)
    assert para.sentences == tuple(s.strip() for s in sentences)  # ... is stripped from sentences
    assert para.text == " ".join(s.strip() for s in sentences)
    assert para.source == title
    assert ds.questions[0].meta == {"type": raw["type"], "level": "hard", "skipped_supporting_facts": 0}


def test_musique_aliases_and_gold() -> None:
    ds = read_dataset("musique", DATA / FILES["musique"])
    q = ds.questions[1]
    assert q.id == "2hop__335418_279684"
    assert q.answers == ("Pittsburgh Pirates", "Orioles", "Pirates", "Baltimore Orioles", "New York Mets", "Mets")
    assert q.meta["hops"] == "2hop" and q.meta["answerable"] is True
    assert len(q.meta["question_decomposition"]) == 2
    by_id = {p.id: p for p in ds.paragraphs}
    for q, raw in zip(ds.questions, raw_records("musique")):
        gold = [p for p in raw["paragraphs"] if p["is_supporting"]]
        assert [by_id[g].title for g in q.gold_paragraph_ids] == [p["title"] for p in gold]
        assert [by_id[g].text for g in q.gold_paragraph_ids] == [p["paragraph_text"] for p in gold]
        assert q.gold_sentence_ids == ()
    assert all(p.sentences is None for p in ds.paragraphs)
    # the "Vinko Dvořák" paragraph supports questions 4 and 5 and is stored once
    assert ds.questions[4].gold_paragraph_ids[1] == ds.questions[5].gold_paragraph_ids[1]


def test_nq_gold_paragraph_and_ids() -> None:
    ds = read_dataset("nq", DATA / FILES["nq"])
    for q, raw in zip(ds.questions, raw_records("nq")):
        assert q.id == "nq_" + hashlib.sha1(raw["question"].encode()).hexdigest()[:12]
        assert q.answers == tuple(raw["answers"])
        assert q.gold_paragraph_ids == (paragraph_id(raw["ctxs"][0]["title"], raw["ctxs"][0]["text"]),)
        assert q.meta["short_answers"] == raw["nq_annotated_gold"]["short_answers"]
    assert ds.questions[0].answers == ("Super Bowl LII,", "2017")


def test_nq_isgold_beats_hasanswer(tmp_path: Path) -> None:
    rows = [
        {"question": "q1", "answers": ["a"], "ctxs": [
            {"title": "T1", "text": "has a but not gold", "hasanswer": True, "isgold": False},
            {"title": "T2", "text": "the gold a passage", "hasanswer": True, "isgold": True}]},
        {"question": "q2", "answers": ["b"], "ctxs": [  # DPR style: no isgold anywhere
            {"text": "mentions b", "has_answer": True, "id": "wiki:7"},
            {"text": "does not", "has_answer": False}]},
    ]
    path = tmp_path / "nq.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    q1, q2 = read_dataset("nq", path).questions
    assert q1.gold_paragraph_ids == (paragraph_id("T2", "the gold a passage"),)
    assert q2.gold_paragraph_ids == (paragraph_id("", "mentions b"),)


def test_popqa_answers_decoded_with_obj_first() -> None:
    ds = read_dataset("popqa", DATA / FILES["popqa"])
    raws = raw_records("popqa")
    for q, raw in zip(ds.questions, raws):
        decoded = json.loads(raw["possible_answers"])
        assert q.id == str(raw["id"])
        assert q.answers[0] == raw["obj"]
        assert set(q.answers) == {raw["obj"], *decoded}
        assert len(q.gold_paragraph_ids) == 2
        assert q.meta["s_pop"] == raw["s_pop"]
    # record 1: obj "playwright" is 4th in possible_answers, so it is moved to the front
    assert ds.questions[1].answers[:4] == ("playwright", "journalist", "journo", "journalists")
    assert ds.questions[0].answers == tuple(json.loads(raws[0]["possible_answers"]))


def test_triviaqa_questions_only() -> None:
    ds = read_dataset("triviaqa", DATA / FILES["triviaqa"])
    assert ds.paragraphs == ()
    q = ds.questions[0]
    assert (q.id, q.answers, q.meta) == ("sfq_17918", ("aaron", "AARON"), {"question_id": 3502})
    assert load_questions("triviaqa", DATA / FILES["triviaqa"], limit=2) == ds.questions[:2]


def test_limit_keeps_only_those_questions_paragraphs() -> None:
    ds = read_dataset("hotpotqa", DATA / FILES["hotpotqa"], limit=2)
    raws = raw_records("hotpotqa")[:2]
    assert [q.id for q in ds.questions] == [r["_id"] for r in raws]
    assert {p.title for p in ds.paragraphs} == {t for r in raws for t, _ in r["context"]}
    assert len(read_dataset("jsonl", CORPUS, limit=2).paragraphs) == 2
    assert {p.source for p in read_dataset("folder", DOCS, limit=1).paragraphs} == {"alpha.md"}


def test_generic_questions(tmp_path: Path) -> None:
    path = tmp_path / "my-questions.jsonl"
    rows = [
        {"id": 7, "question": "Who?", "answer": "Ada", "answers": ["Ada", "Lovelace"]},
        {"question": "Where?"},
        {"question": "Where?", "answers": ["here"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    ds = read_dataset("questions", path)
    h = "q_" + hashlib.sha1(b"Where?").hexdigest()[:12]
    assert [(q.id, q.answers) for q in ds.questions] == [("7", ("Ada", "Lovelace")), (h, ()), (h + "-2", ("here",))]
    assert ds.name == "my-questions" and ds.questions[0].dataset == "my-questions"


def test_jsonl_corpus_titles_and_chunks() -> None:
    ds = read_dataset("jsonl", CORPUS, chunk_tokens=16, chunk_overlap=4)
    assert ds.name == "corpus" and ds.questions == ()
    assert [(p.title, p.source) for p in ds.paragraphs] == [
        ("Ada Lovelace", "doc-1"),
        ("doc-2", "doc-2"),  # no title: the id stands in
        ("Charles Babbage", "3"),
        ("Numbered tokens", "long-doc#chunk 0"),
        ("Numbered tokens", "long-doc#chunk 1"),
        ("Numbered tokens", "long-doc#chunk 2"),
    ]
    chunks = [p.text.split() for p in ds.paragraphs[3:]]
    assert chunks[0][0] == "w00" and chunks[1][0] == "w12" and chunks[2][-1] == "w39"
    assert len(read_dataset("jsonl", CORPUS).paragraphs) == 4  # default 1,200 tokens: nothing chunked


def test_folder_corpus() -> None:
    ds = read_dataset("folder", DOCS)
    assert ds.name == "docs" and ds.questions == ()
    assert [(p.title, p.source) for p in ds.paragraphs] == [
        ("Alpha Centauri", "alpha.md"), ("Alpha Centauri", "alpha.md"), ("Alpha Centauri", "alpha.md"),
        ("beta", "notes/beta.txt"), ("beta", "notes/beta.txt"),
    ]
    # the heading is the title, not text; lines of one paragraph stay together
    assert ds.paragraphs[0].text == "Alpha Centauri is the closest star system to the Solar System.\nIt lies 4.37 light-years away."
    assert not any("should be skipped" in p.text or "a,b" in p.text for p in ds.paragraphs)


def test_folder_chunks_long_paragraph(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text(" ".join(f"t{i}" for i in range(25)) + "\n\nshort one\n")
    ds = read_dataset("folder", tmp_path, chunk_tokens=10, chunk_overlap=2)
    assert [p.source for p in ds.paragraphs] == ["long.txt#chunk 0", "long.txt#chunk 1", "long.txt#chunk 2", "long.txt"]
    assert [count_tokens(p.text) for p in ds.paragraphs] == [10, 10, 9, 2]


def test_detect_format() -> None:
    for fmt, rel in FILES.items():
        assert detect_format(DATA / rel) == fmt
    assert detect_format(CORPUS) == "jsonl"
    assert detect_format(FLASHRAG_QUESTIONS) == detect_format(FLASHRAG_CORPUS) == "flashrag"
    assert detect_format(DOCS) == "folder"
    assert detect_format(DATA / "nope.json") is None
    assert detect_format(DATA / "hotpotqa" / "README.md") is None


def test_registry_lists_every_format() -> None:
    assert set(FORMATS) == {"hotpotqa", "2wiki", "musique", "nq", "popqa", "triviaqa", "questions", "flashrag", "jsonl",
                            "folder"}
    help_text = describe_formats()
    assert all(name in help_text for name in FORMATS)
    assert not FORMATS["triviaqa"].has_passages and not FORMATS["folder"].has_questions
    assert read_dataset("2wikimultihopqa", DATA / FILES["2wiki"], limit=1).name == "2wiki"  # alias


# ------------------------------------------------------------------ chunking

def test_chunk_short_text_untouched() -> None:
    text = "  a short\n text  with   odd spacing "
    assert chunk_text(text, max_tokens=6, overlap=2) == [text]
    assert chunk_text("", 5, 1) == [] and chunk_text(" \n ", 5, 1) == []


@pytest.mark.parametrize(("n", "size", "overlap"), [(2500, 1200, 100), (1201, 1200, 100), (37, 10, 3), (21, 5, 0), (9, 4, 3)])
def test_chunk_overlap_exact(n: int, size: int, overlap: int) -> None:
    tokens = [f"t{i}" for i in range(n)]
    chunks = [c.split() for c in chunk_text(" ".join(tokens), size, overlap)]
    assert all(len(c) <= size for c in chunks)
    assert all(len(c) == size for c in chunks[:-1])
    for a, b in zip(chunks, chunks[1:]):
        assert a[len(a) - overlap :] == b[:overlap]  # exactly `overlap` shared tokens ...
        assert a[len(a) - overlap - 1] != b[0] and a[-1] != b[-1]  # ... no more, and no chunk inside another
    # concatenating the non-overlapping parts gives back every token once, in order
    rebuilt = chunks[0] + [t for c in chunks[1:] for t in c[overlap:]]
    assert rebuilt == tokens


def test_chunk_counts_for_paper_settings() -> None:
    chunks = chunk_text(" ".join(["w"] * 2500))  # defaults: 1,200 tokens, 100 overlap
    assert [count_tokens(c) for c in chunks] == [1200, 1200, 300]  # starts 0, 1100, 2200


def test_chunk_keeps_inner_whitespace() -> None:
    chunks = chunk_text("a b\nc d\n\ne f", 3, 1)
    assert chunks == ["a b\nc", "c d\n\ne", "e f"]


@pytest.mark.parametrize(("size", "overlap", "message"), [
    (0, 0, "chunk size must be at least 1 token, got 0"),
    (10, 10, "chunk overlap must be in [0, 9] tokens, got 10"),
    (10, -1, "chunk overlap must be in [0, 9] tokens, got -1"),
])
def test_chunk_bad_params(size: int, overlap: int, message: str) -> None:
    assert_error(message, chunk_text, "a b c", size, overlap)
    assert_error(message, read_dataset, "jsonl", CORPUS, chunk_tokens=size, chunk_overlap=overlap)


# ------------------------------------------------------------------ bad input

def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_unknown_format() -> None:
    assert_error(
        "unknown format 'hotpot_qa' (known: 2wiki, flashrag, folder, hotpotqa, jsonl, musique, nq, popqa, questions, triviaqa)",
        read_dataset, "hotpot_qa", CORPUS,
    )


def test_missing_file_and_directory_mixups(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    assert_error(f"{missing}: no such file", read_dataset, "hotpotqa", missing)
    assert_error(f"{tmp_path}: is a directory, expected a file", read_dataset, "musique", tmp_path)
    assert_error(f"{CORPUS}: is a file, expected a directory", read_dataset, "folder", CORPUS)
    assert_error(f"{tmp_path / 'nodir'}: no such directory", read_dataset, "folder", tmp_path / "nodir")


def test_malformed_json_array(tmp_path: Path) -> None:
    first = json.dumps(raw_records("hotpotqa")[0])
    bad = write(tmp_path / "bad.json", f'[{first},\n {{"_id": "b" "question": 1}}]')
    assert_error(f"{bad}:2: record 1: malformed JSON: Expecting ',' delimiter (column 14)", read_dataset, "hotpotqa", bad)
    empty = write(tmp_path / "empty.json", "")
    assert_error(f"{empty}: empty file, expected a JSON array", read_dataset, "popqa", empty)
    obj = write(tmp_path / "obj.json", '{"data": []}')
    assert_error(f"{obj}: expected a JSON array of records, got object", read_dataset, "2wiki", obj)
    notobj = write(tmp_path / "notobj.json", f'[{first}, "oops"]')
    assert_error(f"{notobj}: record 1: expected a JSON object, got string", read_dataset, "hotpotqa", notobj, limit=5)


def test_truncated_json_array(tmp_path: Path) -> None:
    text = (DATA / FILES["hotpotqa"]).read_text(encoding="utf-8")
    cut = write(tmp_path / "cut.json", text[: len(text) // 2])
    assert_error(
        re.compile(re.escape(f"{cut}:1: record ") + r"[1-5]: malformed JSON: unexpected end of file \(truncated\?\) \(column \d+\)"),
        read_dataset, "hotpotqa", cut,
    )
    # a limit that stops before the damage still reads fine
    assert len(read_dataset("hotpotqa", cut, limit=1).questions) == 1


def test_truncated_and_malformed_jsonl(tmp_path: Path) -> None:
    lines = (DATA / FILES["musique"]).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = write(tmp_path / "cut.jsonl", "".join(lines[:2]) + lines[2][:500])
    assert_error(
        re.compile(re.escape(f"{cut}:3: malformed JSON: unexpected end of line (truncated?) (column ") + r"\d+\)"),
        read_dataset, "musique", cut,
    )
    notobj = write(tmp_path / "list.jsonl", '{"question": "q", "answers": ["a"], "id": "1"}\n\n[1, 2]\n')
    assert_error(f"{notobj}:3: expected a JSON object, got list", read_dataset, "triviaqa", notobj)
    garbage = write(tmp_path / "garbage.jsonl", '{"text": "ok"}\n{"text": oops}\n')
    assert_error(f"{garbage}:2: malformed JSON: Expecting value (column 10)", read_dataset, "jsonl", garbage)
    latin = write(tmp_path / "latin.jsonl", b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    assert_error(f"{latin}:2: not UTF-8 text", read_dataset, "jsonl", latin)
    latin_array = write(tmp_path / "latin.json", b'[\n{"text": "ok"},\n{"text": "caf\xe9"}]')
    assert_error(f"{latin_array}:3: not UTF-8 text", read_dataset, "popqa", latin_array)


def test_gzip_jsonl(tmp_path: Path) -> None:
    gz = write(tmp_path / "nq.jsonl.gz", gzip.compress((DATA / FILES["nq"]).read_bytes()))
    assert detect_format(gz) == "nq"
    assert read_dataset("nq", gz) == read_dataset("nq", DATA / FILES["nq"])


def test_missing_fields(tmp_path: Path) -> None:
    recs = raw_records("hotpotqa")[:3]
    del recs[2]["question"]
    hp = write(tmp_path / "hp.json", json.dumps(recs))
    assert_error(f"{hp}: record 2: missing field 'question'", read_dataset, "hotpotqa", hp)
    lines = raw_records("musique")[:2]
    del lines[1]["paragraphs"][3]["paragraph_text"]
    mq = write(tmp_path / "mq.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    assert_error(f"{mq}:2: missing field 'paragraphs[3].paragraph_text'", read_dataset, "musique", mq)
    nq = write(tmp_path / "nq.jsonl", json.dumps({"question": "q", "ctxs": []}) + "\n")
    assert_error(f"{nq}:1: missing field 'answers'", read_dataset, "nq", nq)
    corpus = write(tmp_path / "c.jsonl", '{"id": "d1", "title": "t"}\n')
    assert_error(f"{corpus}:1: missing field 'text'", read_dataset, "jsonl", corpus)
    tq = write(tmp_path / "tq.jsonl", '{"id": "x", "answers": ["a"]}\n')
    assert_error(f"{tq}:1: missing field 'question'", load_questions, "triviaqa", tq)


def test_wrong_field_types(tmp_path: Path) -> None:
    recs = raw_records("hotpotqa")[:2]
    recs[1]["context"] = "not a list"
    hp = write(tmp_path / "hp.json", json.dumps(recs))
    assert_error(f"{hp}: record 1: field 'context' must be list, got string", read_dataset, "hotpotqa", hp)
    recs[1]["context"] = [["Title only"]]
    write(hp, json.dumps(recs))
    assert_error(
        f"{hp}: record 1: field 'context[0]' must be [title, [sentence, ...]], got ['Title only']",
        read_dataset, "hotpotqa", hp,
    )
    wiki = raw_records("2wiki")[:1]
    wiki[0]["supporting_facts"][0][1] = "0"
    wp = write(tmp_path / "w.json", json.dumps(wiki))
    assert_error(f"{wp}: record 0: field 'supporting_facts[0][1]' must be integer, got string", read_dataset, "2wiki", wp)
    mq = raw_records("musique")[:1]
    mq[0]["paragraphs"][0]["paragraph_text"] = 42
    mp = write(tmp_path / "m.jsonl", json.dumps(mq[0]) + "\n")
    assert_error(f"{mp}:1: field 'paragraphs[0].paragraph_text' must be string, got integer", read_dataset, "musique", mp)
    pq = raw_records("popqa")[:1]
    pq[0]["possible_answers"] = "[\"a\", "
    pp = write(tmp_path / "p.json", json.dumps(pq))
    assert_error(
        f"{pp}: record 0: field 'possible_answers' is not a JSON-encoded list (Expecting value)", read_dataset, "popqa", pp
    )
    tq = write(tmp_path / "t.jsonl", '{"id": "x", "question": "q", "answers": "a"}\n')
    assert_error(f"{tq}:1: field 'answers' must be list, got string", read_dataset, "triviaqa", tq)
    cj = write(tmp_path / "c.jsonl", '{"id": true, "text": "t"}\n')
    assert_error(f"{cj}:1: field 'id' must be string or integer, got boolean", read_dataset, "jsonl", cj)


def test_empty_inputs(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.jsonl", "")
    assert_error(f"{empty}: no paragraphs found", read_dataset, "jsonl", empty)
    assert_error(f"{empty}: no questions found", read_dataset, "triviaqa", empty)
    blank_docs = write(tmp_path / "blank.jsonl", '{"id": "a", "text": "   "}\n{"id": "b", "text": ""}\n')
    assert_error(f"{blank_docs}: no paragraphs found", read_dataset, "jsonl", blank_docs)
    no_q = write(tmp_path / "none.json", "[]")
    assert_error(f"{no_q}: no questions found", read_dataset, "hotpotqa", no_q)
    folder = tmp_path / "corpus"
    folder.mkdir()
    assert_error(f"{folder}: no paragraphs found (no .txt or .md files)", read_dataset, "folder", folder)
    write(folder / "blank.txt", "\n  \n\n")
    write(folder / "title-only.md", "# Just a title\n")
    assert_error(f"{folder}: no paragraphs found", read_dataset, "folder", folder)


def test_bad_values(tmp_path: Path) -> None:
    assert_error("limit must be a positive integer, got 0", read_dataset, "hotpotqa", DATA / FILES["hotpotqa"], limit=0)
    assert_error(f"{CORPUS}: format 'jsonl' has no questions", load_questions, "jsonl", CORPUS)
    recs = raw_records("hotpotqa")[:2]
    recs[1]["_id"] = recs[0]["_id"]
    dup = write(tmp_path / "dup.json", json.dumps(recs))
    assert_error(f"{dup}: record 1: duplicate question id {recs[0]['_id']!r} (first seen at record 0)",
                 read_dataset, "hotpotqa", dup)


def test_out_of_range_supporting_facts_are_skipped(tmp_path: Path) -> None:
    recs = raw_records("hotpotqa")[:1]
    title = recs[0]["supporting_facts"][0][0]
    recs[0]["supporting_facts"] += [[title, 99], ["No Such Title", 0]]
    path = write(tmp_path / "oor.json", json.dumps(recs))
    q = read_dataset("hotpotqa", path).questions[0]
    assert q.meta["skipped_supporting_facts"] == 2
    assert len(q.gold_sentence_ids) == 2 and len(q.gold_paragraph_ids) == 2


# ------------------------------------------------------------------ full shared dev sets

@pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared dev data not found at {SHARED} (expected ../shared beside the repo)")
@pytest.mark.parametrize(
    ("fmt", "n_questions"),
    [("hotpotqa", 120), ("2wiki", 200), ("musique", 80), ("nq", 200), ("popqa", 200), ("triviaqa", 200)],
)
def test_full_dev_sets(fmt: str, n_questions: int) -> None:
    ds = read_dataset(fmt, SHARED / FILES[fmt])
    assert len(ds.questions) == n_questions
    assert len({q.id for q in ds.questions}) == n_questions
    ids = {p.id for p in ds.paragraphs}
    assert all(g in ids for q in ds.questions for g in q.gold_paragraph_ids)
    if fmt in ("hotpotqa", "2wiki"):
        sents = all_sentence_ids(ds)
        raws = raw_records(fmt, SHARED)
        by_id = {p.id: p for p in ds.paragraphs}
        for q, raw in zip(ds.questions, raws):
            assert q.meta["skipped_supporting_facts"] == 0
            assert q.gold_sentence_ids == resolved_gold(q, raw, by_id)
            assert set(q.gold_sentence_ids) <= sents
    if fmt in ("musique", "nq", "popqa"):
        assert all(q.gold_paragraph_ids for q in ds.questions)


# ------------------------------------------------------------------ FlashRAG / Search-R1 (issue 28 item 10)

def test_flashrag_questions_keep_their_golden_answers() -> None:
    hotpot = raw_records("hotpotqa")
    ds = read_dataset("flashrag", FLASHRAG_QUESTIONS)
    assert ds.name == "hotpotqa-dev" and ds.paragraphs == ()
    assert [(q.id, q.question, q.answers) for q in ds.questions] == [(r["_id"], r["question"], (r["answer"],))
                                                                      for r in hotpot]
    assert ds.questions[0].meta == {"type": hotpot[0]["type"], "level": hotpot[0]["level"]}
    assert ds.questions[0].dataset == "hotpotqa-dev"


def test_flashrag_corpus_splits_the_quoted_title_from_the_text() -> None:
    hotpot = raw_records("hotpotqa")
    ds = read_dataset("flashrag", FLASHRAG_CORPUS)
    expected = list(dict.fromkeys((t, "".join(s)) for r in hotpot for t, s in r["context"]))
    assert [(p.title, p.text) for p in ds.paragraphs] == expected  # quotes gone, text exactly HotpotQA's
    assert [p.source for p in ds.paragraphs] == [str(k) for k in range(len(expected))] and ds.questions == ()


@pytest.mark.parametrize(("row", "title", "text"), [
    ({"id": "1", "contents": '"Ada Lovelace"\nAda was a mathematician.\nShe wrote notes.'}, "Ada Lovelace",
     "Ada was a mathematician.\nShe wrote notes."),
    ({"id": "2", "contents": "Plain title\nBody text."}, "Plain title", "Body text."),  # FlashRAG's own {title}\n{text}
    ({"id": "3", "contents": "One line, no title."}, "3", "One line, no title."),  # the id stands in, as in jsonl
    ({"id": 4, "title": "Chunked", "contents": "Chunked\nA chunk."}, "Chunked", "A chunk."),
    ({"id": 5, "title": "Chunked", "contents": "Only a chunk.\nMore."}, "Chunked", "Only a chunk.\nMore."),
])
def test_flashrag_contents_layouts(tmp_path: Path, row: dict, title: str, text: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (p,) = read_dataset("flashrag", path).paragraphs
    assert (p.title, p.text) == (title, text)


def test_flashrag_rows_without_their_fields_are_refused_naming_what_they_have(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "Who?", "answers": ["x"]}) + "\n", encoding="utf-8")
    assert_error(f"{path}:1: FlashRAG question row without 'golden_answers' (its fields: 'answers', 'id', 'question')",
                 read_dataset, "flashrag", path)
    path.write_text(json.dumps({"id": "a", "text": "Body."}) + "\n", encoding="utf-8")
    assert_error(re.compile(re.escape(f"{path}:1: not a FlashRAG row: ") + r".*this one has 'id', 'text'"),
                 read_dataset, "flashrag", path)
    rows = [{"id": "q", "question": "Who?", "golden_answers": ["x"]}, {"id": "d", "contents": "T\nBody."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert_error(re.compile(re.escape(f"{path}:2: a FlashRAG corpus row in a file of questions rows") + ".*"),
                 read_dataset, "flashrag", path)


def test_flashrag_file_read_as_generic_questions_is_refused_naming_its_fields() -> None:
    """It used to be read with answers () for every question, and eval then printed 'scored 6' with metrics None."""
    assert_error(f"{FLASHRAG_QUESTIONS}: no row has an answer field (answers or answer); the rows' fields are "
                 "golden_answers, id, metadata, question (a FlashRAG / Search-R1 file: use --format flashrag)",
                 read_dataset, "questions", FLASHRAG_QUESTIONS)


def test_repeated_flashrag_corpus_ids_keep_the_first_and_warn(tmp_path: Path, caplog) -> None:
    rows = [{"id": "a", "contents": "A\nFirst."}, {"id": "a", "contents": "B\nSecond."}, {"id": "c", "contents": "C\nThird."}]
    path = tmp_path / "dups.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with caplog.at_level("WARNING"):
        ds = read_dataset("flashrag", path)
    assert [(p.source, p.text) for p in ds.paragraphs] == [("a", "First."), ("c", "Third.")]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warning.startswith(f"{path}: 1 document(s) repeat an earlier id (1 distinct id(s)), 1 of them with a "
                              "different title or text") and "line 1 kept, line 2 skipped" in warning
