"""``benchmarks/common.py``'s number and interval formatters, the one style every reproduction page
(repro_small, repro_pool, repro_seed_pair, repro_empty_class, repro_learning, repro_small_pool) writes its
``mean [lo, hi]`` cells with."""
from __future__ import annotations

from helpers.paths import load_script

common = load_script("benchmarks/common.py")


def test_number_follows_the_spec_and_none_reads_as_given() -> None:
    assert common.fmt_num(0.59312) == "0.593"
    assert common.fmt_num(12.345, ".3f") == "12.345"
    assert common.fmt_num(0.081, "+.3f") == "+0.081"
    assert common.fmt_num(None) == "n/a"
    assert common.fmt_num(None, none="-") == "-"


def test_interval_is_value_then_bounds_in_one_spec() -> None:
    x = {"mean": -0.35, "lo": -0.7312, "hi": 0.0489, "n": 40}
    assert common.fmt_interval(x, "+.2f") == "-0.35 [-0.73, +0.05]"
    assert common.fmt_interval(x) == "-0.35 [-0.731, 0.0489]"
    assert common.fmt_interval({"auc": 0.5931, "lo": 0.529, "hi": 0.653}, ".3f", key="auc") == "0.593 [0.529, 0.653]"


def test_interval_without_a_value_is_the_none_text_alone() -> None:
    assert common.fmt_interval(None) == "n/a"
    assert common.fmt_interval({"mean": None, "lo": None, "hi": None, "n": 0}) == "n/a"
    assert common.fmt_interval(None, none="-") == "-"
    assert common.fmt_interval({"mean": 0.1, "lo": None, "hi": 0.2}, ".1f") == "0.1 [n/a, 0.2]"
