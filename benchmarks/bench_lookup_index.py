"""The bounded LOOKUP (``EnvConfig.lookup_index_top_m``) on the dev graphs: how often the vector index decides a
LOOKUP and how often it falls back to the whole pool, and whether every menu equals the paper's.

    python benchmarks/bench_lookup_index.py [--root /tmp/hg-dev-paper] [--datasets hotpotqa,2wiki,musique,nq,popqa]
                                            [--questions 40] [--seeds 2] [--index-m 1000] [--workdir /tmp/hg-lookup-index]

Per dataset (paper-preset graphs of ``benchmarks/build_dev_graphs.py``; the artifact is copied into ``--workdir`` and
loaded into an embedded FalkorDB of its own), in a fresh subprocess: for the first ``--questions`` questions and
``--seeds`` seeds, bench_env.py's seeded SELECT/LOOKUP walk (uniform over the SELECT/LOOKUP actions of each menu),
played once under the paper preset and once with ``lookup_index_top_m = --index-m`` on the same GraphView (the
encoder's cache shared, LOOKUP results cached apart). Per episode: every observation and every menu's LOOKUP results
compared (identical episodes), per menu the LOOKUP results the index decided / left to the whole pool, per step the
wall time of each. Writes ``benchmarks/results/lookup_index.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, fmt, load_avg, machine_info, machine_line, md_table, questions_of, utc_stamp, write_results  # noqa: E402
from common import run_child as common_run_child  # noqa: E402

ARTIFACT_FILES = ("manifest.json", "entities.parquet", "entity_embeddings.npy", "mentions.parquet", "paragraphs.parquet",
                  "questions.jsonl", "sentence_embeddings.npy", "sentences.parquet", "synonyms.parquet")


def walk(env: Any, item: Any, seed: int) -> tuple[list[Any], list[float]]:
    """One seeded SELECT/LOOKUP episode: per step (observation, LOOKUP results) and the step's wall seconds."""
    from bench_env import pick_action

    env.reset(item)
    rng = random.Random(seed)
    seen, times = [], []
    while not env.done:
        seen.append((env.observation(), sorted(env.menu.lookup_results.items())))
        reply = pick_action(env, rng)
        t0 = time.perf_counter()
        env.step(reply)
        times.append(time.perf_counter() - t0)
    return seen, times


def child_dataset(spec: dict[str, Any]) -> dict[str, Any]:
    from bench_env import summary_ms

    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.graph_view import GraphView
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import load_graph

    from harness_g.agent.env import menu

    menu.INDEX_MENTIONS_PER_M = spec["mentions_per_m"]
    graph_dir = Path(spec["graph_dir"])
    store, _ = load_graph(graph_dir, progress=False)
    artifact = Artifact.open(graph_dir)
    out: dict[str, Any] = {"sentences": artifact.counts["sentences"], "load_avg_before": load_avg()}
    with store:
        view = GraphView(store, artifact)
        items = questions_of(artifact, spec["name"])[: spec["questions"]]
        envs = {"paper": MenuEnv(view, EnvConfig()), "index": MenuEnv(view, EnvConfig(lookup_index_top_m=spec["index_m"]))}
        times: dict[str, list[float]] = {k: [] for k in envs}
        same = episodes = 0
        first_difference = None
        before = dict(view.calls)
        for qi, item in enumerate(items):
            for seed in range(spec["seeds"]):
                runs = {}
                for name, env in envs.items():
                    runs[name], step_s = walk(env, item, seed * 100_003 + qi)
                    times[name] += step_s
                episodes += 1
                if runs["paper"] == runs["index"]:
                    same += 1
                elif first_difference is None:
                    first_difference = {"question": item.id, "seed": seed}
        out.update(episodes=episodes, identical_episodes=same, first_difference=first_difference,
                   decided=view.calls["index_lookups"] - before["index_lookups"],
                   fell_back=view.calls["index_fallbacks"] - before["index_fallbacks"],
                   steps={k: summary_ms(v) for k, v in times.items()})
    out["load_avg_after"] = load_avg()
    return out


def copy_artifact(src: Path, dst: Path) -> Path:
    """The artifact files of ``src`` (not its store) into ``dst`` (kept when already copied from the same build)."""
    if (dst / "manifest.json").exists() and (dst / "manifest.json").read_bytes() == (src / "manifest.json").read_bytes():
        return dst
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in ARTIFACT_FILES:
        shutil.copy2(src / name, dst / name)
    return dst


def markdown(data: dict[str, Any]) -> str:
    o = data["options"]
    rows = [[name, f"{r['sentences']:,}", r["episodes"], f"{r['identical_episodes']}/{r['episodes']}", r["decided"],
             r["fell_back"], f"{100 * r['decided'] / max(1, r['decided'] + r['fell_back']):.1f}%",
             fmt(r["steps"]["paper"]["p50_ms"]), fmt(r["steps"]["index"]["p50_ms"]), fmt(r["steps"]["paper"]["p99_ms"]),
             fmt(r["steps"]["index"]["p99_ms"]), f"{r['load_avg_before']} -> {r['load_avg_after']}"]
            for name, r in data["datasets"].items()]
    return "\n".join([
        "# The bounded LOOKUP on the dev graphs (issue 35 item 5)",
        "",
        f"Generated {data['created']} by `python benchmarks/bench_lookup_index.py` in {fmt(data['wall_s'])} s. "
        f"Machine: {machine_line(data['machine'])}",
        "",
        f"Paper-preset dev graphs ({o['root']}), embedded FalkorDB. Per dataset: the first {o['questions']} questions x "
        f"{o['seeds']} seeds of bench_env.py's seeded SELECT/LOOKUP walk, played under the paper preset and with "
        f"`lookup_index_top_m={o['index_m']}` on one GraphView, the index trying every entity with at least "
        f"{o['mentions_per_m']} x M mentions (`menu.INDEX_MENTIONS_PER_M`; 0: every LOOKUP). `identical episodes`: every observation and every "
        "LOOKUP result of the menus equal; `decided` / `fell back`: the menus' LOOKUP results the vector index "
        "decided / left to the whole pool (the same LOOKUP counts again in each menu that offers it with another "
        "m_t). Step times: env.step wall, the index run second (its query encodings are cached by then: compare "
        "store and ranking time, not totals).",
        "",
        md_table(["dataset", "sentences", "episodes", "identical episodes", "decided", "fell back", "decided share",
                  "paper step p50 ms", "index step p50 ms", "paper p99 ms", "index p99 ms", "load avg"], rows),
        "",
        *data.get("notes", []),
    ]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/tmp/hg-dev-paper"), help="the paper-preset dev graphs")
    ap.add_argument("--datasets", default="hotpotqa,2wiki,musique,nq,popqa")
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--index-m", type=int, default=1000)
    ap.add_argument("--mentions-per-m", type=float, default=0.0,
                    help="menu.INDEX_MENTIONS_PER_M for this run (default 0: the index tries every entity, so every "
                         "LOOKUP of the dev graphs tests it; the environment's default, 1, tries only entities with at "
                         "least M mentions, which these graphs do not have)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hg-lookup-index"))
    ap.add_argument("--out", type=Path, default=RESULTS / "lookup_index.json")
    ap.add_argument("--child-dataset", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_dataset:
        spec_path, out_path = args.child_dataset
        result = child_dataset(json.loads(Path(spec_path).read_text(encoding="utf-8")))
        Path(out_path).write_text(json.dumps(result), encoding="utf-8")
        return
    started = time.perf_counter()
    args.workdir.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"benchmark": "lookup_index", "created": utc_stamp(), "machine": machine_info(),
                            "options": {"root": str(args.root), "questions": args.questions, "seeds": args.seeds,
                                        "index_m": args.index_m, "mentions_per_m": args.mentions_per_m},
                            "datasets": {}}
    for name in [d for d in args.datasets.split(",") if d]:
        graph = copy_artifact(args.root / name, args.workdir / name)
        print(f"[bench_lookup_index] {name} (load avg {load_avg()}) ...", flush=True)
        res = common_run_child(__file__, "dataset", {"name": name, "graph_dir": str(graph), "questions": args.questions,
                                                     "seeds": args.seeds, "index_m": args.index_m,
                                                     "mentions_per_m": args.mentions_per_m}, args.workdir)
        data["datasets"][name] = res
        print(f"[bench_lookup_index] {name}: {res['identical_episodes']}/{res['episodes']} identical, decided "
              f"{res['decided']}, fell back {res['fell_back']}", flush=True)
    data["wall_s"] = time.perf_counter() - started
    for p in write_results(args.out, data, markdown(data)):
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
