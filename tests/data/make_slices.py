"""Regenerate the data slices in tests/data/ and examples/ from the shared dev subsets.

Usage (from the repository root): ``python tests/data/make_slices.py [SHARED_DATA_DIR]``
(default: ``../shared/data`` beside the repository). Records are copied unchanged; JSON
arrays are re-serialised exactly as the shared files are (``json.dumps(..., ensure_ascii=False)``,
no trailing newline), JSON Lines are copied line by line.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# folder -> (file name, number of leading records); 2Wiki takes 8 so the slice
# contains paragraphs shared between questions (dedup is exercised).
SLICES = {
    "hotpotqa": ("hotpot_dev_distractor_v1.subset.json", 6),
    "2wikimultihopqa": ("dev.subset.json", 8),
    "musique": ("musique_ans_v1.0_dev.subset.jsonl", 6),
    "nq": ("nq-open-oracle.subset.jsonl", 6),
    "popqa": ("popqa.subset.json", 6),
    "triviaqa": ("triviaqa_test.subset.jsonl", 6),
}
EXAMPLE = ("hotpotqa", "hotpot_dev_distractor_v1.subset.json", 30,
           REPO / "examples" / "hotpotqa-dev-slice" / "hotpot_dev_distractor_v1.slice.json")
#: tests/e2e/test_append.py's shared-paragraph pair: 2Wiki records 120 (built) and 53 (appended) share three
#: context paragraphs, one of them ("Ben Cura") gold evidence of record 53
APPEND_SHARED = ("2wikimultihopqa", "dev.subset.json", (120, 53), REPO / "tests" / "data" / "append" / "2wiki-shared.json")


def copy_slice(src: Path, dst: Path, n: int) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".jsonl":
        with src.open(encoding="utf-8") as fh:
            lines = [line for _, line in zip(range(n), fh)]
        dst.write_text("".join(lines), encoding="utf-8")
    else:
        records = json.loads(src.read_text(encoding="utf-8"))[:n]
        dst.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")


def copy_records(src: Path, dst: Path, indexes: tuple[int, ...]) -> None:
    """The records of the JSON array ``src`` at ``indexes`` (in that order) to ``dst``, serialised as the slices are."""
    records = json.loads(src.read_text(encoding="utf-8"))
    dst.write_text(json.dumps([records[i] for i in indexes], ensure_ascii=False), encoding="utf-8")


def flashrag_slice(hotpot: Path, dst: Path) -> None:
    """The HotpotQA slice in FlashRAG's layouts (RUC-NLPIR/FlashRAG README): ``hotpotqa/dev.jsonl`` questions
    ``{id, question, golden_answers, metadata}`` and ``corpus.jsonl`` ``{id, contents: '"Title"\\ntext'}`` (wiki-18
    style, title in double quotes), one corpus row per distinct context paragraph, sentences joined as HotpotQA
    writes them (each sentence keeps its leading space)."""
    records = json.loads(hotpot.read_text(encoding="utf-8"))
    questions = [{"id": r["_id"], "question": r["question"], "golden_answers": [r["answer"]],
                  "metadata": {"type": r["type"], "level": r["level"]}} for r in records]
    paragraphs = dict.fromkeys((title, "".join(sentences)) for r in records for title, sentences in r["context"])
    corpus = [{"id": str(k), "contents": f'"{title}"\n{text}'} for k, (title, text) in enumerate(paragraphs)]
    for rel, rows in (("hotpotqa/dev.jsonl", questions), ("corpus.jsonl", corpus)):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "data"
    for folder, (name, n) in SLICES.items():
        copy_slice(shared / folder / name, REPO / "tests" / "data" / folder / name, n)
    flashrag_slice(REPO / "tests" / "data" / "hotpotqa" / SLICES["hotpotqa"][0], REPO / "tests" / "data" / "flashrag")
    folder, name, n, dst = EXAMPLE
    copy_slice(shared / folder / name, dst, n)
    folder, name, indexes, dst = APPEND_SHARED
    copy_records(shared / folder / name, dst, indexes)


if __name__ == "__main__":
    main()
