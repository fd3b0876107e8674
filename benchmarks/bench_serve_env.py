"""The menu environment over ``harness-g serve-env`` (OpenEnv, WebSocket sessions) next to the in-process
``BatchedMenuEnv``: episodes/s and step latency at 1, 8 and 64 concurrent sessions, same questions, same actions.

    python benchmarks/bench_serve_env.py [--graph GRAPH_DIR] [--root /tmp/hg-bench-serve] [--episodes 128]
                                         [--concurrency 1,8,64] [--policy heuristic] [--preset paper]

Workload. GRAPH_DIR (default: built once from the packaged ``examples/hotpotqa-dev-slice``, 30 HotpotQA questions,
into ``--root``) and its question set. A scripted policy: ``--policy`` (LLM-free, default ``heuristic``) plays every
question once in-process and its action ids and answer are recorded; both arms then replay exactly those actions
(the environment is deterministic, so both see the same menus), so the policy's own cost is in neither number.
``--episodes`` episodes per concurrency level: the questions cycled (a question played several times, as a GRPO
group does).

Arms, at each concurrency C:
- in-process: one ``BatchedMenuEnv`` of C environments over one ``GraphView``; C episodes reset together and step
  together until all are over, then the next C. A step latency is one ``BatchedMenuEnv.step`` call (it advances up
  to C environments); episodes/s = episodes / wall time.
- server: one ``serve-env`` process (FalkorDB embedded, loopback, ``--max-sessions`` max(C)); C OpenEnv clients
  (``MenuEnvClient``, one WebSocket session each) in one asyncio loop, each taking the next episode from a shared
  queue. A step latency is one client ``step`` round trip (the final answer's step included); episodes/s = episodes /
  wall time. The server's one lock serialises store access, so C sessions share one graph store as the in-process
  batch does.
Both arms play every question once, untimed, first (the graph view's caches warm in both processes), then the
timed run. One run per cell on a shared 2-core machine: the load average is recorded. Writes
benchmarks/results/serve_env.{json,md}.
"""
from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, fmt, load_avg, machine_info, machine_line, md_table, percentile, utc_stamp, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "examples" / "hotpotqa-dev-slice" / "hotpot_dev_distractor_v1.slice.json"


@dataclass(frozen=True)
class Script:
    """One question's recorded episode: the menu action ids, in order, and the final answer text."""

    question_id: str
    actions: tuple[str, ...]
    answer: str


def build_graph(root: Path) -> Path:
    """The slice's graph under ``root`` (a cache hit when already built)."""
    from harness_g.graph.build import CorpusSpec, build_graph as build

    graph = root / "hotpotqa-dev-slice"
    build([CorpusSpec("hotpotqa", SLICE)], graph, progress=False)
    return graph


def record(view: Any, questions: list, policy_name: str, config: Any) -> list[Script]:
    """Each question played once by ``policy_name`` in-process: its action ids and answer."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.policies import make_policy

    policy = make_policy(policy_name)
    env = MenuEnv(view, config)
    scripts = []
    for item in questions:
        env.reset(item)
        actions = []
        while not env.done:
            env.step(policy.act(env.observe()))
            actions.append(env.trajectory.steps[-1].chosen or "")
        answer = policy.answer(item.question, env.committed_texts(), env.observe())
        env.finish(answer)
        if not all(actions):
            raise SystemExit(f"bench_serve_env: policy {policy_name} made an invalid move on {item.id}; pick another")
        scripts.append(Script(item.id, tuple(actions), answer))
    return scripts


def episodes_of(scripts: list[Script], n: int) -> list[Script]:
    return [scripts[i % len(scripts)] for i in range(n)]


def run_in_process(view: Any, by_id: dict, config: Any, episodes: list[Script], size: int) -> dict[str, Any]:
    """``episodes`` in batches of ``size`` on one BatchedMenuEnv: step-call latencies (s) and wall time."""
    from harness_g.agent.env.batch import BatchedMenuEnv

    batch = BatchedMenuEnv(view, size, config)
    latencies: list[float] = []
    t0 = time.perf_counter()
    for start in range(0, len(episodes), size):
        group = episodes[start:start + size]
        envs = batch if len(group) == size else BatchedMenuEnv(view, len(group), config)
        envs.reset([by_id[s.question_id] for s in group])
        turn = 0
        while not envs.all_done:
            replies = [s.actions[turn] if turn < len(s.actions) else None for s in group]
            t = time.perf_counter()
            envs.step(replies)
            latencies.append(time.perf_counter() - t)
            turn += 1
        for env, s in zip(envs.envs, group):
            env.finish(s.answer)
    return {"wall_s": time.perf_counter() - t0, "latencies": latencies}


async def _client_loop(url: str, queue: asyncio.Queue, latencies: list[float], rewards: list[float]) -> None:
    from harness_g.agent.integrations.openenv_server import MenuAction, MenuEnvClient

    client = MenuEnvClient(base_url=url, message_timeout_s=300)
    await client.connect()
    try:
        while True:
            try:
                script: Script = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await client.reset(question_id=script.question_id)
            for i, action_id in enumerate(script.actions):
                last = i == len(script.actions) - 1
                t = time.perf_counter()
                result = await client.step(MenuAction(action_id=action_id, answer=script.answer if last else None))
                latencies.append(time.perf_counter() - t)
            if not result.done:  # the turn budget ended retrieval: the answer goes alone
                t = time.perf_counter()
                result = await client.step(MenuAction(answer=script.answer))
                latencies.append(time.perf_counter() - t)
            rewards.append(result.reward)
    finally:
        await client.close()


def run_server(url: str, episodes: list[Script], concurrency: int) -> dict[str, Any]:
    """``episodes`` played by ``concurrency`` OpenEnv clients: step round-trip latencies (s), wall time, rewards."""
    async def main() -> dict[str, Any]:
        queue: asyncio.Queue = asyncio.Queue()
        for s in episodes:
            queue.put_nowait(s)
        latencies: list[float] = []
        rewards: list[float] = []
        t0 = time.perf_counter()
        await asyncio.gather(*(_client_loop(url, queue, latencies, rewards) for _ in range(concurrency)))
        return {"wall_s": time.perf_counter() - t0, "latencies": latencies, "rewards": rewards}

    return asyncio.run(main())


def start_server(graph: Path, sessions: int, preset: str, log: Path) -> tuple[subprocess.Popen, str]:
    """``serve-env`` on a free port; its stderr goes to ``log`` (a pipe nobody reads would fill and stall it)."""
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "harness_g", "serve-env", str(graph), "--port", "0",
                                 "--max-sessions", str(sessions), "--preset", preset],
                                stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    found = re.search(r"on (http://\S+) \(OpenEnv", line)
    if not found:
        proc.kill()
        raise SystemExit(f"bench_serve_env: serve-env did not start: {line}{log.read_text()[-2000:]}")
    return proc, found.group(1)


def cell(arm: str, concurrency: int, out: dict[str, Any], n_episodes: int, steps_per_episode: float) -> dict[str, Any]:
    lat = out["latencies"]
    return {"arm": arm, "concurrency": concurrency, "episodes": n_episodes, "wall_s": round(out["wall_s"], 3),
            "episodes_per_s": round(n_episodes / out["wall_s"], 3), "step_calls": len(lat),
            "steps_per_episode": round(steps_per_episode, 2),
            "step_p50_ms": round(1000 * percentile(lat, 50), 3), "step_p99_ms": round(1000 * percentile(lat, 99), 3),
            "load_avg": load_avg()}


def markdown(data: dict[str, Any]) -> str:
    rows = [(r["concurrency"], r["arm"], r["episodes"], fmt(r["episodes_per_s"], 2), fmt(r["step_p50_ms"], 2),
             fmt(r["step_p99_ms"], 2), r["step_calls"], " ".join(str(x) for x in r["load_avg"])) for r in data["rows"]]
    w = data["workload"]
    return "\n".join([
        "# The menu environment over `harness-g serve-env` vs in-process `BatchedMenuEnv`",
        "",
        f"{utc_stamp()}; {machine_line(data['machine'])}. Written by `benchmarks/bench_serve_env.py` (its docstring "
        "has the method). One run per cell on a shared 2-core machine (load average per cell in the table).",
        "",
        f"- Graph: `{w['graph']}` ({w['questions']} HotpotQA questions of the packaged dev slice), "
        f"FalkorDB embedded, env preset `{w['preset']}` (state machine: T={w['max_turns']} turns, "
        f"K_s={w['visible_cap']}, K_e={w['lookup_cap']}, ANSWER_WITH up to {w['answer_with_max']} sentence(s)).",
        f"- Actions: policy `{w['policy']}` played each question once in-process; both arms replay those action ids "
        f"and answers ({w['steps_per_episode']} menu steps per episode on average). {w['episodes']} episodes per row "
        "(the questions cycled). Caches warmed by one untimed pass in both arms.",
        "- in-process: one `BatchedMenuEnv` of C environments; a step = one batched `step` call (up to C envs).",
        "- server: C OpenEnv `MenuEnvClient` WebSocket sessions in one asyncio loop against one `serve-env` process "
        "(loopback); a step = one client round trip (the answer step included).",
        f"- Mean reward (answer F1) over the server's episodes: {w['server_mean_reward']} (the in-process arm plays the "
        "same answers).",
        "",
        md_table(["C", "arm", "episodes", "episodes/s", "step p50 ms", "step p99 ms", "step calls", "load avg"], rows),
        "",
    ])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", type=Path, help="GRAPH_DIR (default: the packaged slice, built under --root)")
    ap.add_argument("--root", type=Path, default=Path("/tmp/hg-bench-serve"))
    ap.add_argument("--episodes", type=int, default=128, help="episodes per concurrency level (default 128)")
    ap.add_argument("--concurrency", default="1,8,64", help="comma-separated session counts (default 1,8,64)")
    ap.add_argument("--policy", default="heuristic", help="LLM-free policy whose actions both arms replay")
    ap.add_argument("--preset", default="paper", choices=("paper", "extended"))
    ap.add_argument("--out", type=Path, default=RESULTS / "serve_env.json")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]

    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view

    graph = args.graph or build_graph(args.root)
    config = EnvConfig(preset=args.preset)
    with open_view(graph) as view:
        questions = view.artifact.questions()
        by_id = {q.id: q for q in questions}
        scripts = record(view, questions, args.policy, config)
        steps = sum(len(s.actions) for s in scripts) / len(scripts)
        print(f"recorded {len(scripts)} episodes of {args.policy} ({steps:.2f} steps each)", flush=True)
        run_in_process(view, by_id, config, scripts, 8)  # warm pass
        rows = []
        for c in levels:
            episodes = episodes_of(scripts, max(args.episodes, c))
            out = run_in_process(view, by_id, config, episodes, c)
            rows.append(cell("in-process", c, out, len(episodes), steps))
            print(rows[-1], flush=True)
    log = args.root / "serve-env.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    proc, url = start_server(graph, max(levels), args.preset, log)
    try:
        run_server(url, scripts, 8)  # warm pass
        rewards: list[float] = []
        for c in levels:
            episodes = episodes_of(scripts, max(args.episodes, c))
            out = run_server(url, episodes, c)
            rewards += out["rewards"]
            rows.append(cell("server", c, out, len(episodes), steps))
            print(rows[-1], flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    rows.sort(key=lambda r: (r["concurrency"], r["arm"]))
    data = {"machine": machine_info(), "rows": rows, "workload": {
        "graph": graph.name, "questions": len(questions), "preset": args.preset, "policy": args.policy,
        "episodes": args.episodes, "steps_per_episode": round(steps, 2), "max_turns": config.max_turns,
        "visible_cap": config.visible_cap, "lookup_cap": config.lookup_cap, "answer_with_max": config.answer_with_max,
        "server_mean_reward": round(sum(rewards) / len(rewards), 4) if rewards else None}}
    for path in write_results(args.out, data, markdown(data)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
