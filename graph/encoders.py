"""Sentence-encoder backends: sentence-transformers on torch, or the same model exported to ONNX Runtime.

Every backend maps texts to L2-normalised float32 vectors of shape ``[n, dim]`` (cosine = dot product) and
exposes the model's ``tokenizer`` and ``max_seq_length`` (word pieces read; longer texts are truncated).

The ONNX backend exports the model once into a cache (``$HARNESS_G_CACHE/onnx/<model-hash>/``, default
``~/.cache/harness-g/onnx/<model-hash>/``); the exported graph contains the transformer, the pooling
(mean or CLS, as the model's ``1_Pooling/config.json`` says) and the L2 normalisation, so fp32 ONNX matches
the torch encoder to cosine >= 0.9999. Variants: ``fp32`` (the export, plus onnxruntime's BERT fusion pass for
BERT models) and ``int8`` (dynamic int8 quantisation of the unfused export: about 2x faster on CPUs with
VNNI; per-channel weight scales keep the cosine to fp32 near 0.99 (>= 0.96 on every dev sentence sampled), still
not the same vectors, so an opt-in). Cache files are written to a temporary name and renamed,
each with a ``.json`` sidecar holding its sha256; a file whose sidecar is missing or does not match is
exported again. A directory lock (``graph/locks.py``) makes concurrent exporters wait for the first.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from harness_g.errors import ConfigError
from harness_g.graph.artifact import file_sha256

#: backend names accepted by ``make_encoder`` (and ``--embedding-backend``)
BACKENDS = ("torch", "onnx", "onnx-int8")
#: fp32 ONNX: the same vectors as torch (cosine >= 0.9999 on every dev sentence, tests/e2e/test_build_backends.py)
#: and a faster build on CPU (benchmarks/results/build.md, backends side by side)
DEFAULT_EMBEDDING_BACKEND = "onnx"
ONNX_OPSET = 17
#: bump when the exported graph changes (wrapper, inputs, passes): old cache entries are then ignored
EXPORT_FORMAT = 2  # 2: int8 with per-channel weight scales
_VARIANT_OF_BACKEND = {"onnx": "fp32", "onnx-int8": "int8"}


class Encoder(Protocol):
    """What ``Embedder`` needs from a backend."""

    dim: int  #: vector width
    max_seq_length: int  #: word pieces read per text (special tokens included); the rest is truncated
    tokenizer: Any  #: the model's Hugging Face tokenizer (callers count tokens with it)
    #: True when ``encode`` may run in several threads at once and honours ``lanes`` (else calls are serialised)
    concurrent_calls: bool

    def encode(self, texts: list[str], batch_size: int, progress: bool, lanes: int = 1) -> np.ndarray:
        """``texts`` -> float32 ``[len(texts), dim]``, rows L2-normalised, in input order. ``lanes`` > 1: run the
        batches in that many threads, splitting the calling thread's torch thread count between them (backends
        with ``concurrent_calls``; others ignore it). The vectors do not depend on ``lanes``."""
        ...


# ---------------------------------------------------------------------------------------------- torch


class TorchEncoder:
    """sentence-transformers on torch (cpu or cuda)."""

    concurrent_calls = False  # one module shared by every caller: calls are serialised, ``lanes`` is ignored

    def __init__(self, source: str, *, device: str | None = None, name: str | None = None):
        """``source``: a sentence-transformers id or model directory; ``name`` is used in error messages."""
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(source, device=device or "cpu")
        except Exception as exc:  # hub errors, bad paths: one line naming the model
            raise ConfigError(f"cannot load embedding model {name or source!r}: {exc}") from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            dim = int(self._model.encode(["x"]).shape[1])
        self.dim = int(dim)
        self.max_seq_length = int(self._model.max_seq_length)
        self.tokenizer = self._model.tokenizer

    def encode(self, texts: list[str], batch_size: int, progress: bool, lanes: int = 1) -> np.ndarray:
        out = self._model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=progress)
        return np.ascontiguousarray(out, dtype=np.float32)


# ------------------------------------------------------------------------------------ model description


@dataclass(frozen=True)
class SentenceModelLayout:
    """Where a sentence-transformers model directory keeps what the ONNX export needs."""

    root: Path  #: the model directory
    transformer_dir: Path  #: the Hugging Face model + tokenizer (``root`` for most models)
    pooling: str  #: "mean" or "cls"
    max_seq_length: int  #: word pieces per text, from ``sentence_bert_config.json``
    do_lower_case: bool  #: sentence-transformers lower-cases texts before tokenising


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _pooling_mode(config: dict, name: str) -> str:
    """"mean" or "cls" from a Pooling config (old boolean flags, or a newer ``"pooling_mode": NAME``)."""
    named = config.get("pooling_mode")
    modes = [f"pooling_mode_{named}"] if isinstance(named, str) else []
    modes += [k for k, on in config.items() if k.startswith("pooling_mode_") and on]
    modes = sorted(set(modes)) if len(modes) > 1 else modes
    if not modes or modes in (["pooling_mode_mean_tokens"], ["pooling_mode_mean"]):
        return "mean"
    if modes in (["pooling_mode_cls_token"], ["pooling_mode_cls"]):
        return "cls"
    raise ConfigError(f"embedding model {name!r} pools with {modes}; the ONNX backend supports mean or CLS pooling: "
                      "use --embedding-backend torch")


def read_layout(root: Path, name: str) -> SentenceModelLayout:
    """Read ``modules.json``, the pooling config and ``sentence_bert_config.json`` of a model directory."""
    modules = json.loads((root / "modules.json").read_text()) if (root / "modules.json").is_file() else []
    kinds = {m["type"].rsplit(".", 1)[-1]: root / m.get("path", "") for m in modules}
    extra = set(kinds) - {"Transformer", "Pooling", "Normalize"}
    if extra:
        raise ConfigError(f"embedding model {name!r} has modules {sorted(extra)} the ONNX backend does not export: "
                          "use --embedding-backend torch")
    transformer_dir = kinds.get("Transformer", root)
    pooling = _pooling_mode(_read_json(kinds.get("Pooling", root / "1_Pooling") / "config.json"), name)
    sbert = _read_json(transformer_dir / "sentence_bert_config.json") or _read_json(root / "sentence_bert_config.json")
    max_len = sbert.get("max_seq_length")
    if not max_len:
        hf = _read_json(transformer_dir / "config.json")
        max_len = int(hf.get("max_position_embeddings", 512))
    return SentenceModelLayout(root, transformer_dir, pooling, int(max_len), bool(sbert.get("do_lower_case", False)))


def local_model_dir(source: str, name: str) -> Path:
    """A model directory for ``source`` (a path, or a hub id resolved through the local Hugging Face cache)."""
    path = Path(source)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source))
    except Exception as exc:
        raise ConfigError(f"cannot load embedding model {name!r}: {' '.join(str(exc).split())}") from exc


@lru_cache(maxsize=8)
def _hash_files(root: str, stats: tuple) -> str:
    digest = hashlib.sha256()
    for rel, _size, _mtime in stats:
        digest.update(rel.encode() + b"\0")
        with open(Path(root) / rel, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def model_content_hash(root: Path) -> str:
    """sha256 over every file's relative path and bytes (memoised per process by size and mtime)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".cache" not in p.relative_to(root).parts)
    stats = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _hash_files(str(root), stats)


# ------------------------------------------------------------------------------------------ the cache


def onnx_cache_root() -> Path:
    """``$HARNESS_G_CACHE/onnx`` when set, else ``~/.cache/harness-g/onnx``."""
    base = os.environ.get("HARNESS_G_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "harness-g") / "onnx"


def _atomic_write(target: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` for a temporary path next to ``target``, then rename it over ``target``."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache is shared like any ~/.cache entry
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass(frozen=True)
class CacheEntry:
    """One cached ONNX file and its sidecar (``<path>.json``: sha256 and what produced it)."""

    path: Path  #: the .onnx file
    meta: dict  #: what produced it (model hash, versions, variant); the sidecar adds the file's sha256

    @property
    def sidecar(self) -> Path:
        return self.path.with_name(self.path.name + ".json")

    def valid(self) -> bool:
        """The file exists and matches the sha256 its sidecar recorded after writing it."""
        try:
            side = _read_json(self.sidecar)
            return bool(side) and side.get("sha256") == file_sha256(self.path) and side.get("meta") == self.meta
        except (OSError, ValueError):  # missing file, unreadable or half-written sidecar
            return False

    def write(self, produce: Callable[[Path], None]) -> None:
        """``produce(tmp_path)`` writes the model; the file is renamed into place, then its sidecar."""
        self.sidecar.unlink(missing_ok=True)  # a crash from here on leaves no sidecar: the entry reads invalid
        _atomic_write(self.path, produce)
        body = json.dumps({"sha256": file_sha256(self.path), "meta": self.meta}, indent=1)
        _atomic_write(self.sidecar, lambda tmp: tmp.write_text(body, encoding="utf-8"))


def _versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import torch

    return {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
            "opset": str(ONNX_OPSET), "format": str(EXPORT_FORMAT)}


# ------------------------------------------------------------------------------------------ exporting


def _export_raw(layout: SentenceModelLayout, input_names: list[str], out: Path) -> None:
    """torch.onnx.export of transformer + pooling + L2 normalisation; dynamic batch and sequence axes."""
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        def __init__(self, model: torch.nn.Module, pooling: str):
            super().__init__()
            self.model, self.pooling = model, pooling

        def forward(self, input_ids, attention_mask, token_type_ids=None):  # [b, s] int64 each -> [b, dim]
            kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    model = AutoModel.from_pretrained(str(layout.transformer_dir)).eval()
    wrapper = Pooled(model, layout.pooling)
    example = {name: torch.ones((2, 8), dtype=torch.long) for name in input_names}
    if "token_type_ids" in example:
        example["token_type_ids"] = torch.zeros((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent branches: the axes are dynamic
        torch.onnx.export(wrapper, tuple(example[n] for n in input_names), str(out), input_names=input_names,
                          output_names=["embedding"], dynamic_axes={**axes, "embedding": {0: "batch"}},
                          opset_version=ONNX_OPSET, dynamo=False)


def _optimise_bert(raw: Path, transformer_dir: Path, out: Path) -> None:
    """onnxruntime's BERT fusion pass (attention, layer norm, GELU) on the raw export."""
    from onnxruntime.transformers.optimizer import optimize_model

    hf = _read_json(transformer_dir / "config.json")
    model = optimize_model(str(raw), model_type="bert", num_heads=int(hf["num_attention_heads"]),
                           hidden_size=int(hf["hidden_size"]), opt_level=1)
    model.save_model_to_file(str(out))


#: the int8 recipe's name; it enters the content hash of onnx-int8 graphs (BuildConfig.hashed_fields)
INT8_RECIPE = "dynamic-int8-per-channel"


def _quantise_int8(raw: Path, out: Path) -> None:
    """Dynamic int8 weight quantisation with one scale per output channel; it must see the unfused graph (it fails
    on the fused one). Per-tensor scales (format 1) gave cosine to fp32 0.96 mean, 0.84 min on 1,000 2Wiki sentences;
    per-channel 0.993 mean, 0.970 min at the same speed (benchmarks/results/encoders_quality.md)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(raw), str(out), weight_type=QuantType.QInt8, per_channel=True)


_EXPORT_GUARD = threading.Lock()  # the directory lock is shared by threads of one process: serialise them here


def ensure_onnx(layout: SentenceModelLayout, variant: str, input_names: list[str],
                cache_root: Path | None = None) -> Path:
    """The cached ONNX file for ``variant`` ("fp32" or "int8"), exported now when missing or corrupt."""
    from harness_g.graph.locks import exclusive_lock

    versions = _versions()
    directory = (cache_root or onnx_cache_root()) / model_content_hash(layout.root)[:16]
    key = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]

    def entry(kind: str) -> CacheEntry:
        meta = {"variant": kind, "inputs": input_names, **versions}  # the model is the directory's hash
        return CacheEntry(directory / f"{kind}-{key}.onnx", meta)

    wanted = entry(variant)
    if wanted.valid():
        return wanted.path
    with _EXPORT_GUARD, exclusive_lock(directory, "ONNX cache directory", wait_s=1800.0):
        if wanted.valid():  # another process exported it while we waited
            return wanted.path
        raw = entry("raw")
        if not raw.valid():
            raw.write(lambda tmp: _export_raw(layout, input_names, tmp))
        if variant == "int8":
            wanted.write(lambda tmp: _quantise_int8(raw.path, tmp))
        elif _read_json(layout.transformer_dir / "config.json").get("model_type") == "bert":
            wanted.write(lambda tmp: _optimise_bert(raw.path, layout.transformer_dir, tmp))
        else:  # no fusion pass for this architecture: the session's own graph optimisation still applies
            wanted.write(lambda tmp: tmp.write_bytes(raw.path.read_bytes()))
    return wanted.path


# ----------------------------------------------------------------------------------------- onnx runtime


def _import_onnxruntime() -> Any:
    try:
        import onnx  # noqa: F401  (the export writes through it)
        import onnxruntime
    except ImportError as exc:
        raise ConfigError(f"embedding backend 'onnx' needs onnxruntime and onnx ({exc.name} is missing): "
                          "pip install onnxruntime onnx, or use --embedding-backend torch") from None
    return onnxruntime


def _providers(ort: Any, device: str | None) -> list[str]:
    if not device or device == "cpu":
        return ["CPUExecutionProvider"]
    if device.startswith("cuda"):
        if "CUDAExecutionProvider" in ort.get_available_providers():
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        raise ConfigError("embedding backend 'onnx' on device 'cuda' needs onnxruntime-gpu (no CUDAExecutionProvider): "
                          "use --embedding-backend torch for cuda")
    raise ConfigError(f"embedding backend 'onnx' supports devices cpu and cuda, not {device!r}")


#: padded word pieces per ONNX Runtime call (rows x longest row). Smaller calls keep a layer's activations in
#: cache: 512 ran 1,000 dev sentences 11% / 17% (1 / 2 threads) faster than fixed 64-row batches on a 2-core Intel
#: Xeon and 18% / 21% on a 2-core AMD EPYC, and at least as fast as 256 or 1,024 (benchmarks/results/encoders.md).
MAX_BATCH_TOKENS = 512


def token_budget_batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges over ``lengths`` (word pieces per row, ascending) with at most ``max_rows`` rows and
    ``rows x lengths[stop-1] <= max_tokens`` padded pieces each; a single row longer than the budget is its own batch."""
    out: list[tuple[int, int]] = []
    start, n = 0, len(lengths)
    while start < n:
        stop = start + 1
        while stop < n and stop - start < max_rows and (stop - start + 1) * lengths[stop] <= max_tokens:
            stop += 1
        out.append((start, stop))
        start = stop
    return out


class OnnxEncoder:
    """The sentence model exported to ONNX, run by onnxruntime with texts sorted by token length.

    ``concurrent_calls``: onnxruntime sessions take concurrent ``run`` calls, and the shared tokenizer is used under
    a lock, so several threads may encode at once (the build's lanes, ``encode(..., lanes=2)``)."""

    concurrent_calls = True

    def __init__(self, source: str, *, variant: str = "fp32", device: str | None = None, name: str | None = None,
                 threads: int | None = None, cache_dir: str | Path | None = None,
                 max_batch_tokens: int = MAX_BATCH_TOKENS):
        """``source``: model directory or hub id; ``threads``: intra-op threads, default torch.get_num_threads()
        at each ``encode`` call (a build lowers it beside NER); ``cache_dir`` replaces ``onnx_cache_root()``;
        ``max_batch_tokens``: padded word pieces per session call (rows x longest row), see ``MAX_BATCH_TOKENS``."""
        if max_batch_tokens < 1:
            raise ConfigError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        if variant not in ("fp32", "int8"):
            raise ConfigError(f"ONNX variant {variant!r} is not one of fp32, int8")
        ort = _import_onnxruntime()
        from transformers import AutoTokenizer

        name = name or source
        self._ort, self._providers = ort, _providers(ort, device)
        self.layout = read_layout(local_model_dir(source, name), name)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.layout.transformer_dir))
        if not getattr(self.tokenizer, "is_fast", False):
            raise ConfigError(f"embedding model {name!r} has no fast tokenizer (tokenizer.json): "
                              "use --embedding-backend torch")
        self.max_seq_length = min(self.layout.max_seq_length, int(self.tokenizer.model_max_length or 1 << 30))
        wanted = self.tokenizer.model_input_names
        self._inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in wanted]
        self.variant, self.threads, self.max_batch_tokens = variant, threads, max_batch_tokens
        self.path = ensure_onnx(self.layout, variant, self._inputs, Path(cache_dir) if cache_dir else None)
        self._sessions: dict[int, Any] = {}
        self._session_guard = threading.Lock()
        # one Rust tokenizer for all threads: a call that sets truncation while another thread is inside it fails with
        # "Already borrowed", so calls take turns (tokenising is a small part of a call)
        self._tokenizer_guard = threading.Lock()
        self.dim = int(self.encode([""], 1, False).shape[1])

    def _threads(self) -> int:
        """Intra-op threads of a one-lane call: ``threads`` or the calling thread's torch thread count."""
        import torch

        return self.threads or torch.get_num_threads()

    def _session(self, lanes: int = 1) -> Any:
        """One session per intra-op thread count (onnxruntime fixes its thread pool when a session starts): the
        calling thread's torch thread count (or ``threads``) split between ``lanes`` concurrent callers."""
        threads = max(1, self._threads() // max(1, lanes))
        with self._session_guard:
            if threads not in self._sessions:
                opts = self._ort.SessionOptions()
                opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
                opts.graph_optimization_level = self._ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                try:
                    session = self._ort.InferenceSession(str(self.path), opts, providers=self._providers)
                except Exception as exc:
                    raise ConfigError(f"onnxruntime cannot load {self.path}: {' '.join(str(exc).split())[:300]}; "
                                      "delete it to export again") from exc
                self._sessions[threads] = session
            return self._sessions[threads]

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids per text, special tokens included, truncated at ``max_seq_length``."""
        if self.layout.do_lower_case:
            texts = [t.lower() for t in texts]
        with self._tokenizer_guard:
            enc = self.tokenizer(list(texts), truncation=True, max_length=self.max_seq_length, padding=False,
                                 return_attention_mask=False, return_token_type_ids=False)
        return enc["input_ids"]

    def encode(self, texts: list[str], batch_size: int, progress: bool, lanes: int = 1) -> np.ndarray:
        """Encode each distinct word-piece sequence once, shortest first, in batches of at most ``batch_size`` rows
        and ``max_batch_tokens`` padded word pieces; rows come back in input order (duplicates share a vector).
        ``lanes`` > 1: the same batches run in that many threads (one session call each at a time, the calling
        thread's torch threads split between them): on 2 cores two 1-thread lanes lose no time to intra-op
        barriers, which one 2-thread call does (benchmarks/results/encoders.md). Every batch is the same as
        with one lane; a batch's vectors came out bitwise equal at 1 and 2 intra-op threads on every dev corpus
        measured (the build already changed thread counts mid-stage before lanes), so the output is the same."""
        from concurrent.futures import ThreadPoolExecutor

        from tqdm.auto import tqdm

        ids = self.token_ids(texts)
        # equal inputs give equal vectors: a corpus repeats entity names ("Paris" in many articles, a name cased two
        # ways when the model lower-cases), so each distinct sequence is run once
        first: dict[tuple[int, ...], int] = {}
        source = np.fromiter((first.setdefault(tuple(x), i) for i, x in enumerate(ids)), dtype=np.int64, count=len(ids))
        unique = np.fromiter(first.values(), dtype=np.int64, count=len(first))
        lengths = np.fromiter((len(ids[i]) for i in unique), dtype=np.int64, count=len(unique))
        shortest_first = np.argsort(lengths, kind="stable")
        order = unique[shortest_first]
        batches = token_budget_batches(lengths[shortest_first].tolist(), batch_size, self.max_batch_tokens)
        lanes = max(1, min(lanes, len(batches), self._threads()))  # never more threads than the caller has
        session, pad = self._session(lanes), int(self.tokenizer.pad_token_id or 0)

        def run(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            rows = order[span[0]:span[1]]  # input positions of first occurrences
            return rows, session.run(None, self._feed([ids[i] for i in rows], pad))[0]

        out: np.ndarray | None = None
        # one lane runs in the calling thread: no pool, no hand-over
        with ThreadPoolExecutor(max_workers=lanes) if lanes > 1 else contextlib.nullcontext() as pool:
            results = pool.map(run, batches) if pool else map(run, batches)
            for rows, vecs in tqdm(results, total=len(batches), desc="Batches", disable=not progress, leave=False):
                if out is None:
                    out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
                out[rows] = vecs
        if out is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        return out[source] if len(first) < len(texts) else out

    def _feed(self, batch: list[list[int]], pad: int) -> dict[str, np.ndarray]:
        """Right-padded int64 ``[b, longest]`` arrays for the session's inputs."""
        width = max(len(x) for x in batch)
        input_ids = np.full((len(batch), width), pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, seq in enumerate(batch):
            input_ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        return {k: feed[k] for k in self._inputs}


# ------------------------------------------------------------------------------------------- choosing


def check_backend(backend: str) -> str:
    """``backend`` itself, or a ConfigError listing the valid names."""
    if backend not in BACKENDS:
        raise ConfigError(f"embedding backend {backend!r} is not one of {', '.join(BACKENDS)}")
    return backend


def make_encoder(source: str, *, backend: str = DEFAULT_EMBEDDING_BACKEND, device: str | None = None,
                 name: str | None = None, cache_dir: str | Path | None = None) -> Encoder:
    """The encoder for ``backend`` ("torch", "onnx" = fp32 ONNX, "onnx-int8") on ``device`` (cpu, cuda)."""
    if check_backend(backend) == "torch":
        return TorchEncoder(source, device=device, name=name)
    return OnnxEncoder(source, variant=_VARIANT_OF_BACKEND[backend], device=device, name=name, cache_dir=cache_dir)
