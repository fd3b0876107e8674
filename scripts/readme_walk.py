"""Walk through the README as a new user would: run every command of its ```bash blocks, in order, in a fresh
working directory, and stop at the first one that fails.

    python scripts/readme_walk.py            # CI runs it (.ci/run) beside the test suite
    python scripts/readme_walk.py --list     # print the commands and what the walk does with each, run nothing

The commands run as written except for these documented changes (:func:`plan`), which keep the walk to minutes on a
2-core CPU without changing what each command exercises:

- ``--input ../shared/data/...``: that file when it exists (a clone next to the project's data), else the shipped slice
  ``harness_g/examples/hotpotqa-dev-slice/hotpot_dev_distractor_v1.slice.json`` from the installed package (the
  README's questions are in both), or for a ``2wikimultihopqa`` file ``harness_g/examples/2wiki-dev-slice/dev.subset.json``;
- ``eval`` with an LLM policy (transformers, openai): one question (``--limit 1``) and ``--max-turns 2``; other evals
  ``--limit 5``;
- ``train`` / ``accelerate launch`` / ``torchrun``: one step (``--set optim.steps=1``, no evaluation of training
  questions; the held-out questions are kept, so the run records them); an ``eval --model RUN/checkpoint-N`` of such
  a run plays its last checkpoint, ``RUN/checkpoint-1``; the paper's 8-GPU recipe (``qwen2.5-3b-paper``) cannot
  run on a CPU: its config is resolved with its ``--set`` values and printed (``--show-config``) instead;
- an argument ``"$(command)"`` is replaced by the command's output, as the shell does.

The working directory is empty and outside the checkout: nothing of the repository is linked in, so a command that
needs a checkout path fails the walk.
- ``harness-g neo4j`` (foreground): started in the background on free ports; later ``bolt://127.0.0.1:7687`` become
  its address, and it is stopped at the end;
- ``--policy openai --base-url http://127.0.0.1:8000/v1 --model M``: the bundled OpenAI-compatible server over the
  offline SmolLM2 (``python -m harness_g.agent.llm.server``, the README's own line) is started first, and the
  URL and model point at it;
- ``harness-g serve-env GRAPH ... &`` (serves until stopped): started in the background on a free port, waited for
  until it prints its address, and stopped at the end;
- ``harness-g menu``: stdin is ``help`` then ``quit`` (a person typing);
- ``harness-g browse ... --serve``: not run (it serves until Ctrl-C); the file-writing form is;
- skipped with the reason printed: ``. .venv/bin/activate`` (the walk uses this interpreter's environment),
  ``bash scripts/*.sh`` (the demo and the test suite are what CI runs anyway), ``docker ...`` (no Docker here),
  ``ray start ...`` (a node of a multi-machine Ray cluster; tests/e2e/test_build_ray.py starts a real two-node one).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness_g.agent.policies import llm_policies
from harness_g.agent.demo import EXAMPLE_DIR

ROOT = Path(__file__).resolve().parents[1]
# the shipped slice, from the installed package (the walk's working directory has no checkout in it)
SLICE = str(EXAMPLE_DIR / "hotpot_dev_distractor_v1.slice.json")
#: the packaged 2Wiki slice, for a README ``--input ../shared/data/2wikimultihopqa/...`` (its first 8 dev questions)
SLICE_2WIKI = str(EXAMPLE_DIR.parent / "2wiki-dev-slice" / "dev.subset.json")
LLM_POLICIES = tuple(llm_policies())
SUBSTITUTION = re.compile(r"\$\((.+)\)")  # a whole argument "$(command)": replaced by the command's output


@dataclass
class Step:
    """One README command: ``argv`` as it will run (None: skipped, ``why`` says why), its README ``line``."""

    line: int
    text: str
    argv: list[str] | None
    why: str = ""
    stdin: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    background: str = ""  # "neo4j" / "llm-server" / "serve-env": started, not waited for


def readme_commands(readme: Path) -> list[tuple[int, str]]:
    """``(line number, command)`` of every ```bash block line, continuation lines joined, comments dropped."""
    out: list[tuple[int, str]] = []
    in_block, pending, start = False, "", 0
    for n, raw in enumerate(readme.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("```"):
            in_block = line == "```bash" and not in_block
            continue
        if not in_block or (not pending and (not line or line.startswith("#"))):
            continue
        if not pending:
            start = n
        pending += " " + line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        # bash drops the backslash of \$ inside double quotes (the README escapes Cypher's $params that way); shlex keeps it
        words = [w.replace("\\$", "$") for w in shlex.split(pending, comments=True)]
        if words:
            out.append((start, shlex.join(words)))
        pending = ""
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _set_flag(argv: list[str], flag: str, value: str) -> None:
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]


def plan(commands: list[tuple[int, str]], shared_ok: bool) -> list[Step]:
    """What the walk does with each README command (module docstring): the argv it runs, or why it is skipped."""
    steps: list[Step] = []
    shortened: list[str] = []  # --out of the training runs cut to one step
    for line, text in commands:
        argv = shlex.split(text)
        if argv and argv[-1] == "&":  # a server started in the background in the README: the walk does the same
            argv = argv[:-1]
        env: dict[str, str] = {}
        while argv and re.fullmatch(r"[A-Z_]+=.*", argv[0]):  # VAR=value prefixes
            key, value = argv.pop(0).split("=", 1)
            env[key] = value
        head = argv[0] if argv else ""
        if head in (".", "source"):
            steps.append(Step(line, text, None, "the walk runs in this interpreter's environment"))
            continue
        if head == "bash":
            steps.append(Step(line, text, None, "the demo and the test suite are run by CI itself"))
            continue
        if head == "docker":
            steps.append(Step(line, text, None, "Docker does not run here"))
            continue
        if head == "ray":
            steps.append(Step(line, text, None, "a node of a multi-machine Ray cluster (tests/e2e/test_build_ray.py "
                                                "starts a real two-node cluster)"))
            continue
        if "--input" in argv and argv[argv.index("--input") + 1].startswith("../shared/") and not shared_ok:
            _set_flag(argv, "--input", SLICE_2WIKI if "/2wikimultihopqa/" in argv[argv.index("--input") + 1] else SLICE)
        cmd = argv[1] if head == "harness-g" and len(argv) > 1 else ""
        step = Step(line, text, argv, env=env)
        if head == "harness-g" and cmd == "neo4j":
            step.background = "neo4j"
        elif cmd == "serve-env":
            step.background = "serve-env"
        elif cmd == "menu":
            step.stdin = "help\nquit\n"
        elif cmd == "browse" and "--serve" in argv:
            step.argv, step.why = None, "serves until Ctrl-C (the file-writing form is run)"
        elif cmd == "eval":
            llm = "--policy" in argv and argv[argv.index("--policy") + 1] in LLM_POLICIES
            _set_flag(argv, "--limit", "1" if llm else "5")
            if llm:
                _set_flag(argv, "--max-turns", "2")
            model = argv[argv.index("--model") + 1] if "--model" in argv else ""
            for run in shortened:  # a checkpoint of a run the walk cut to one step: its last one is checkpoint-1
                if re.fullmatch(re.escape(run.rstrip("/")) + r"/checkpoint-\d+/?", model):
                    _set_flag(argv, "--model", f"{run.rstrip('/')}/checkpoint-1")
        elif head in ("accelerate", "torchrun") or cmd == "train" or "harness_g.training" in argv:
            if any("qwen2.5-3b-paper" in a for a in argv):
                config = next(a for a in argv if "qwen2.5-3b-paper" in a)
                sets = [x for i, a in enumerate(argv) if a == "--set" for x in ("--set", argv[i + 1])]
                step.argv = ["harness-g", "train", "--config", config, *sets, "--show-config"]
                step.why = "8 GPUs: config resolved only"
            else:
                argv += ["--set", "optim.steps=1", "--set", "log.eval_train_questions=0"]
                for flag in ("--out", "--output-dir"):
                    if flag in argv:
                        shortened.append(argv[argv.index(flag) + 1])
        elif head == "python" and "harness_g.agent.llm.server" in argv:
            step.background = "llm-server"
        steps.append(step)
    return steps


class Walk:
    """Runs the planned steps in ``workdir``; background servers are stopped at the end."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.procs: list[subprocess.Popen] = []
        self.neo4j_uri: str | None = None
        self.llm_url: str | None = None
        bin_dir = Path(sys.executable).parent
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}

    def _rewrite(self, argv: list[str]) -> list[str]:
        out = []
        for a in argv:
            if self.neo4j_uri and a.startswith("bolt://127.0.0.1:7687"):
                a = self.neo4j_uri
            sub = SUBSTITUTION.fullmatch(a)
            if sub:  # the shell's "$(command)", run in the working directory
                a = subprocess.run(shlex.split(sub.group(1)), cwd=self.workdir, env=self.env, capture_output=True,
                                   text=True, check=True).stdout.strip()
            out.append(a)
        if "--policy" in out and out[out.index("--policy") + 1] == "openai":
            if self.llm_url is None:
                self.start_llm_server()
            _set_flag(out, "--base-url", self.llm_url or "")
            _set_flag(out, "--model", "smollm2")
        return out

    def _background(self, argv: list[str], ready: str, timeout_s: float) -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen(argv, cwd=self.workdir, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        self.procs.append(proc)
        seen, t0 = "", time.time()
        while ready not in seen:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise SystemExit(f"readme walk: {' '.join(argv)} exited before '{ready}':\n{seen[-2000:]}")
            seen += line
            if time.time() - t0 > timeout_s:
                raise SystemExit(f"readme walk: {' '.join(argv)} not ready after {timeout_s:.0f} s:\n{seen[-2000:]}")
        return proc, seen

    def start_neo4j(self) -> None:
        _, out = self._background(["harness-g", "neo4j", "--bolt-port", "0", "--http-port", "0"], "stop     Ctrl-C", 600)
        self.neo4j_uri = re.search(r"bolt\s+(bolt://\S+)", out).group(1)  # type: ignore[union-attr]
        print(f"   neo4j at {self.neo4j_uri}", flush=True)

    def start_llm_server(self, argv: list[str] | None = None) -> None:
        port = _free_port()
        argv = argv or [sys.executable, "-m", "harness_g.agent.llm.server", "--model", "smollm2"]
        argv = [sys.executable if a == "python" else a for a in argv]
        _set_flag(argv, "--port", str(port))
        self._background(argv, "http://", 600)
        self.llm_url = f"http://127.0.0.1:{port}/v1"
        print(f"   OpenAI-compatible server at {self.llm_url}", flush=True)

    def start_serve_env(self, argv: list[str]) -> None:
        """``harness-g serve-env`` as the README starts it, on a free port; ready once it prints its address."""
        _set_flag(argv, "--port", str(_free_port()))
        _, out = self._background(argv, "Ctrl-C stops", 600)
        print(f"   {out.strip().splitlines()[-1]}", flush=True)

    def run(self, step: Step) -> None:
        assert step.argv is not None
        if step.background == "neo4j":
            return self.start_neo4j()
        if step.background == "llm-server":
            return self.start_llm_server(list(step.argv))
        if step.background == "serve-env":
            return self.start_serve_env(list(step.argv))
        argv = self._rewrite(list(step.argv))
        argv = [sys.executable if a == "python" else a for a in argv]
        # the shell's glob expansion (`report runs/*`), in the working directory, sorted as bash sorts
        argv = [g for a in argv for g in (sorted(str(p.relative_to(self.workdir)) for p in self.workdir.glob(a))
                                          if "*" in a and not a.startswith("-") else [a])]
        t0 = time.time()
        proc = subprocess.run(argv, cwd=self.workdir, env={**self.env, **step.env}, input=step.stdin or "",
                              capture_output=True, text=True, timeout=1800)
        print(f"   rc {proc.returncode} in {time.time() - t0:.0f} s", flush=True)
        if proc.returncode != 0:
            raise SystemExit(f"readme walk: README line {step.line} failed: {shlex.join(argv)}\n"
                             f"{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", default=str(ROOT / "README.md"))
    ap.add_argument("--list", action="store_true", help="print the plan, run nothing")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    args = ap.parse_args()
    shared_ok = (ROOT.parent / "shared" / "data").is_dir()
    steps = plan(readme_commands(Path(args.readme)), shared_ok)
    workdir = Path(tempfile.mkdtemp(prefix="hg-readme-walk-"))  # empty: nothing of the checkout is linked in
    walk = Walk(workdir)
    ran = 0
    try:
        for i, step in enumerate(steps, 1):
            shown = shlex.join(step.argv) if step.argv else step.text
            print(f"[{i}/{len(steps)}] README:{step.line} {shown}" + (f"   (skipped: {step.why})" if step.argv is None else
                                                                     (f"   ({step.why})" if step.why else "")), flush=True)
            if args.list or step.argv is None:
                continue
            if shared_ok:  # ../shared/... relative to the working directory: point it at the repository's neighbour
                step.argv = [str(ROOT.parent / a[3:]) if a.startswith("../shared/") else a for a in step.argv]
            walk.run(step)
            ran += 1
    finally:
        walk.close()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"readme walk: {ran} commands ran, {sum(s.argv is None for s in steps)} skipped with a reason" +
          ("" if not args.keep else f"; workdir {workdir}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
