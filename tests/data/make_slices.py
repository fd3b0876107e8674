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


def copy_slice(src: Path, dst: Path, n: int) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".jsonl":
        with src.open(encoding="utf-8") as fh:
            lines = [line for _, line in zip(range(n), fh)]
        dst.write_text("".join(lines), encoding="utf-8")
    else:
        records = json.loads(src.read_text(encoding="utf-8"))[:n]
        dst.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "data"
    for folder, (name, n) in SLICES.items():
        copy_slice(shared / folder / name, REPO / "tests" / "data" / folder / name, n)
    folder, name, n, dst = EXAMPLE
    copy_slice(shared / folder / name, dst, n)


if __name__ == "__main__":
    main()
