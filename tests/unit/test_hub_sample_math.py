"""The hub sample (``harness_g.graph.stores.hub_sample``): which entities are hubs, which sentences their sample holds,
and the properties the loaders and ``build --append`` rely on (order-free, a prefix for a smaller size, mergeable)."""
from __future__ import annotations

import hashlib
import random

import pyarrow as pa

from harness_g.graph.stores.hub_sample import bottom_k, hub_samples, hub_samples_reference, sample_key, sample_rows


def _mentions(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.table({"sentence_id": [s for s, _ in pairs], "entity_id": [e for _, e in pairs]})


def _pairs(n_hub: int, n_small: int) -> list[tuple[str, str]]:
    pairs = [(f"p{i // 5}:{i % 5}", "e_hub") for i in range(n_hub)]
    pairs += [(f"q{i}:0", "e_small") for i in range(n_small)]
    return pairs


def test_only_entities_with_more_distinct_sentences_than_the_size_are_hubs() -> None:
    pairs = _pairs(12, 4)
    pairs += [("q0:0", "e_small")] * 5  # duplicate mentions of one sentence count once
    assert set(hub_samples(_mentions(pairs), 4)) == {"e_hub"}  # e_small: exactly 4 distinct sentences, not a hub
    assert set(hub_samples(_mentions(pairs), 3)) == {"e_hub", "e_small"}
    assert hub_samples(_mentions(pairs), 12) == {} and hub_samples(_mentions(pairs), 0) == {}


def test_the_sample_is_the_smallest_keys_in_key_order_whatever_the_row_order() -> None:
    pairs = _pairs(40, 2)
    sample = hub_samples(_mentions(pairs), 7)["e_hub"]
    ids = {s for s, e in pairs if e == "e_hub"}
    assert sample == sorted(ids, key=lambda s: (sample_key(s), s))[:7] and len(set(sample)) == 7
    for seed in range(3):
        shuffled = pairs[:]
        random.Random(seed).shuffle(shuffled)
        assert hub_samples(_mentions(shuffled), 7)["e_hub"] == sample
    # a smaller size is a prefix: the first n ids are the sample of size n
    assert hub_samples(_mentions(pairs), 3)["e_hub"] == sample[:3]


def test_the_sample_of_a_union_is_the_bottom_k_of_the_old_sample_and_the_new_mentions() -> None:
    old = [f"a{i}:0" for i in range(30)]
    new = [f"b{i}:0" for i in range(30)]
    assert bottom_k(bottom_k(old, 8) + new, 8) == bottom_k(old + new, 8)
    # keys are a hash of the id, not its order: the sample is not the first ids
    assert bottom_k(old, 8) != sorted(old)[:8]


def test_sample_rows_batches_by_entity_id() -> None:
    samples = {"e_b": ["s1"], "e_a": ["s2", "s3"], "e_c": ["s4"]}
    batches = list(sample_rows(samples, 2))
    assert batches == [[{"id": "e_a", "sample": ["s2", "s3"]}, {"id": "e_b", "sample": ["s1"]}],
                       [{"id": "e_c", "sample": ["s4"]}]]


def _random_mentions(seed: int, rows: int) -> pa.Table:
    """Mentions with skewed entity frequencies, repeated (entity, sentence) pairs and sentences in several hubs."""
    rng = random.Random(seed)
    pairs = [(f"p{rng.randrange(400)}:{rng.randrange(3)}", f"e{int(rng.paretovariate(1.1)) % 60}") for _ in range(rows)]
    return _mentions(pairs)


def test_the_vectorised_samples_equal_the_reference_definition() -> None:
    for seed in range(3):
        table = _random_mentions(seed, 6000)
        chunked = pa.concat_tables([table.slice(0, 2500), table.slice(2500)])  # a table read from several row groups
        for size in (1, 3, 17, 90):
            want = hub_samples_reference(table, size)
            assert want, "the test data must have hubs at every size"
            assert hub_samples(table, size) == want and hub_samples(chunked, size) == want
            assert list(hub_samples(table, size)) == sorted(want)  # by entity id


def test_ties_of_the_key_are_broken_by_the_id_as_in_the_reference(monkeypatch) -> None:
    from harness_g.graph.stores import hub_sample

    # a 1-byte key: hundreds of ties, which the 8-byte BLAKE2b key practically never has
    monkeypatch.setattr(hub_sample, "sample_key", lambda s: hashlib.blake2b(s.encode(), digest_size=1).digest())
    table = _random_mentions(7, 6000)
    for size in (2, 25, 80):
        want = hub_sample.hub_samples_reference(table, size)
        assert want and hub_sample.hub_samples(table, size) == want
        ties = [ids for ids in want.values() if len({hub_sample.sample_key(s) for s in ids}) < len(ids)]
        assert ties, "the test must exercise ties"
