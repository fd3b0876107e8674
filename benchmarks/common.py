"""Shared helpers for the benchmark scripts: timing, summaries, machine info, tables, results files.

Kept dependency-free (stdlib + numpy) so a script can import it before torch/spaCy are loaded.
"""
from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(os.environ.get("HG_DATA", "/work/shared/data"))

@dataclass(frozen=True)
class DevSet:
    """One dev subset in ``../shared/data``: its name, reader format, file (relative to DATA) and gold kind."""

    name: str
    fmt: str
    rel: str
    gold: str  # what gold evidence the format carries: sentence, paragraph or none

    @property
    def path(self) -> Path:
        return DATA / self.rel


DEV_SETS: list[DevSet] = [
    DevSet("hotpotqa", "hotpotqa", "hotpotqa/hotpot_dev_distractor_v1.subset.json", "sentence"),
    DevSet("2wiki", "2wiki", "2wikimultihopqa/dev.subset.json", "sentence"),
    DevSet("musique", "musique", "musique/musique_ans_v1.0_dev.subset.jsonl", "paragraph"),
    DevSet("nq", "nq", "nq/nq-open-oracle.subset.jsonl", "paragraph"),
    DevSet("popqa", "popqa", "popqa/popqa.subset.json", "paragraph"),
    DevSet("triviaqa", "triviaqa", "triviaqa/triviaqa_test.subset.jsonl", "none (unknown)"),
]
BY_NAME = {d.name: d for d in DEV_SETS}
#: the sets with passages (TriviaQA's graph is its questions over the union of these corpora)
CORPUS_SETS = [d for d in DEV_SETS if d.name != "triviaqa"]


def env_config(sets: Iterable[str], preset: str | None = None) -> tuple[Any, dict[str, str]]:
    """(EnvConfig, the overrides) from ``key=value`` texts, parsed as ``harness-g eval --set env.key=value`` parses
    them (each value by its field's type), under ``preset`` (``--preset``; None: EnvConfig's default, paper). A
    malformed text, an unknown field or a bad value raises ConfigError naming it; the scripts turn that into a
    one-line usage error."""
    from harness_g import config_loader
    from harness_g.agent.env.config import EnvConfig

    overrides = dict(config_loader.parse_set(s) for s in sets if s.strip())
    return config_loader.load(EnvConfig, overrides=overrides, preset=preset), overrides


def graph_dir(root: Path, name: str) -> Path:
    """GRAPH_DIR of a dev graph built by ``build_dev_graphs.py`` (``ROOT/<name>``)."""
    return Path(root) / name


def questions_of(view_or_artifact: Any, name: str) -> list:
    """The dataset's own questions in a graph (the TriviaQA graph also holds the corpora's questions)."""
    artifact = getattr(view_or_artifact, "artifact", view_or_artifact)
    return [q for q in artifact.questions() if q.dataset == name]


#: the paper's build cost (Table "Time & Cost Comparisons"): seconds per 1K corpus tokens, A100 + bge-large
PAPER_TP1KT = 0.116


# -- timing ---------------------------------------------------------------------------------------
def time_calls(fn: Callable[[Any], Any], args: Sequence[Any], *, warmup: int = 5) -> tuple[list[float], list[Any]]:
    """Call ``fn(a)`` for each ``a`` in ``args`` (after ``warmup`` untimed calls on the first args).

    Returns per-call seconds (``time.perf_counter``) and the results, in ``args`` order.
    """
    for a in list(args)[:warmup]:
        fn(a)
    seconds: list[float] = []
    results: list[Any] = []
    for a in args:
        t0 = time.perf_counter()
        out = fn(a)
        seconds.append(time.perf_counter() - t0)
        results.append(out)
    return seconds, results


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.s`` (seconds, perf_counter)."""

    def __enter__(self) -> "Stopwatch":
        self.t0 = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.s = time.perf_counter() - self.t0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]); nan for no values."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """n, median, p90, mean, min, max of a list of samples (same unit as the samples)."""
    if not values:
        return {"n": 0, "median": math.nan, "p90": math.nan, "mean": math.nan, "min": math.nan, "max": math.nan}
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p90": percentile(values, 90),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


# -- machine --------------------------------------------------------------------------------------
def load_avg() -> list[float]:
    """``os.getloadavg()`` rounded (1, 5, 15 min); other engineers share this machine."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def machine_info() -> dict[str, Any]:
    """Cores, CPU model, memory, load average, torch threads and library versions."""
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "cpu_model": cpu_model(),
        "cpu_flags_avx2": _has_flag("avx2"),
        "cpu_flags_avx512f": _has_flag("avx512f"),
        "mem_total_gb": mem_total_gb(),
        "load_avg": load_avg(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    for mod in ("torch", "sentence_transformers", "spacy", "falkordb", "numpy", "pyarrow"):
        try:
            m = __import__(mod)
            info[f"{mod}_version"] = getattr(m, "__version__", "?")
        except ImportError:
            info[f"{mod}_version"] = None
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        info["torch_interop_threads"] = torch.get_num_interop_threads()
    except ImportError:
        info["torch_threads"] = None
    return info


def _has_flag(flag: str) -> bool:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return flag in line.split()
    except OSError:
        pass
    return False


def machine_line(info: dict[str, Any]) -> str:
    """One-line summary for a markdown header."""
    return (
        f"{info['cores']} cores ({info['cpu_model']}, AVX2 {'yes' if info.get('cpu_flags_avx2') else 'no'}, "
        f"AVX-512 {'yes' if info.get('cpu_flags_avx512f') else 'no'}), {info.get('mem_total_gb')} GB RAM, "
        f"torch {info.get('torch_version')} with {info.get('torch_threads')} intra-op threads, "
        f"Python {info['python']}"
    )


def proc_peak_rss_mb(pid: int) -> float | None:
    """Peak resident set (VmHWM) of another process, MB; None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


# -- output ---------------------------------------------------------------------------------------
def fmt(value: Any, digits: int = 3) -> str:
    """Numbers with ``digits`` significant figures (ints as is), None/nan as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value == 0:
            return "0"
        mag = math.floor(math.log10(abs(value)))
        decimals = max(0, digits - 1 - mag)
        return f"{value:,.{decimals}f}"
    return str(value)


def fmt_num(value: float | None, spec: str = ".3g", none: str = "n/a") -> str:
    """One number as ``format(value, spec)`` (``".3g"``, ``".3f"``, ``"+.2f"``: the reproduction pages' styles);
    ``none`` when it is None (no question defines it)."""
    return none if value is None else format(value, spec)


def fmt_interval(x: dict[str, Any] | None, spec: str = ".3g", key: str = "mean", none: str = "n/a") -> str:
    """``value [lo, hi]`` of a bootstrap-interval dict (``{key, "lo", "hi"}``, as every repro_* JSON writes them), all
    three in one ``spec``; ``none`` when there is no dict or it has no ``key`` value."""
    if x is None or x.get(key) is None:
        return none
    return f"{fmt_num(x[key], spec, none)} [{fmt_num(x.get('lo'), spec, none)}, {fmt_num(x.get('hi'), spec, none)}]"


def text_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Fixed-width plain-text table (first column left-aligned, others right-aligned)."""
    cells = [[str(h) for h in headers]] + [[c if isinstance(c, str) else fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """GitHub markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(c if isinstance(c, str) else fmt(c) for c in r) + " |")
    return "\n".join(out)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def write_results(json_path: str | Path, data: dict[str, Any], markdown: str | None = None) -> list[Path]:
    """Write ``data`` as JSON (nan -> null) and, when given, ``markdown`` next to it (same stem, ``.md``)."""
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(_jsonable(data), indent=2, sort_keys=False) + "\n", encoding="utf-8")
    written = [json_path]
    if markdown is not None:
        md_path = json_path.with_suffix(".md")
        md_path.write_text(markdown.rstrip() + "\n", encoding="utf-8")
        written.append(md_path)
    return written


def utc_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def run_child(script: str, kind: str, spec: dict, workdir: Path) -> dict:
    """Run ``python SCRIPT --child-KIND SPEC.json OUT.json`` in a fresh process (a measurement free of the parent's
    imports, caches and threads) and return the JSON it wrote; ``spec`` goes to the child as SPEC.json (its
    ``name`` names the files). SystemExit naming the child when it fails or writes nothing."""
    import subprocess

    name = spec.get("name", "micro")
    spec_path = workdir / f"_spec_{kind}_{name}.json"
    out_path = spec_path.with_suffix(".out.json")
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    out_path.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, script, f"--child-{kind}", str(spec_path), str(out_path)])
    if proc.returncode != 0 or not out_path.exists():
        raise SystemExit(f"{kind} child for {name} failed (exit {proc.returncode})")
    return json.loads(out_path.read_text(encoding="utf-8"))


def without_timings(value: Any) -> Any:
    """``value`` (trajectories, rollout records) with every wall-clock field (a key naming seconds) removed: what two
    plays of the same thing, with and without an execution-only saving, must agree on."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
