"""``harness-g serve-env``: its flags (no third-party import, so ``harness-g --help`` works without
``openenv-core``) and its run (imports :mod:`.openenv_server`, refusing clearly when OpenEnv is not installed)."""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from harness_g.errors import ConfigError

#: the trainer-side SNC hook ``--answerer`` loads by name (DESIGN.md: agent/ never imports training; this lazy
#: reference is the one exception, checked by tests/e2e/test_layering.py)
ANSWERER_CREDIT = "harness_g.training.env_credit:answerer_credit"
LOOPBACK = ("127.0.0.1", "localhost", "::1")

DESCRIPTION = """\
Serve the menu environment of GRAPH_DIR as an OpenEnv environment server (openenv-core's create_app): the WebSocket
session /ws (what OpenEnv's EnvClient and harness_g.agent.integrations.openenv_server.MenuEnvClient use), POST /reset
and /step (stateless: pass the episode_id /reset returned to each /step), GET /state, /schema, /metadata, /health.
An observation holds the rendered text, the structured menu (ids, kinds, targets), done, the reward (0 before the
end; the answer's token F1 against the gold answers of a graph question at the end) and info/metadata (committed
evidence, the step's preview, with --answerer the step's SNC gain and at the end every step's SNC credit)."""

EPILOG = """\
Pointing trainers at it:
  TRL      GRPOTrainer(environment_factory=menu_tool_env_factory(base_url="http://HOST:PORT")) from
           harness_g.agent.integrations.trl_env: tools select/lookup/answer_with/answer, reward from get_reward();
           TRL keeps one scalar per rollout (the final F1), so step rewards and SNC credit are not used there.
  SkyRL    a skyrl_gym BaseTextEnv whose step(action) sends MenuAction(action_id=action) over a MenuEnvClient and
           returns the observation text, the step reward and info; SkyRL puts each step's reward on its turn.
  rLLM     per-step rewards with rllm.stepwise_advantage.enable=true, mode=per_step.
  verl     an agent loop (AgentLoopBase) holding one MenuEnvClient per trajectory; verl scores a trajectory once
           (reward_score): per-step credit needs the step rewards on their turns' tokens and an advantage
           estimator registered with verl.trainer.ppo.core_algos.register_adv_est.
No authentication: keep it on loopback (the default) or a private network."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """serve-env's own flags (the env config flags come from agent/cli.py)."""
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1, loopback only; the server has no authentication)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0: any free port, printed)")
    p.add_argument("--max-sessions", type=int, default=64, metavar="N",
                   help="at most N WebSocket sessions and N live episodes at once (default 64); more are refused")
    p.add_argument("--idle-seconds", type=float, default=600.0, metavar="S",
                   help="a live episode untouched for S seconds may be dropped to make room for a new one (default 600)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, metavar="B",
                   help="largest HTTP request body or WebSocket message in bytes (default 1 MiB); larger: 413 / closed")
    p.add_argument("--answerer", metavar="MODEL",
                   help="frozen answerer for SNC credit in the metadata (hub id, local dir, smollm2, tiny-random; needs "
                        "the train extra); without it the metadata has the previews but no gains")


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def run(args: argparse.Namespace, env_config: Any) -> int:
    """Open the graph, build the service and serve until interrupted."""
    try:
        from harness_g.agent.integrations import openenv_server
    except ImportError as exc:
        raise ConfigError(f"serve-env needs OpenEnv: pip install openenv-core==0.3.0 ({exc})") from None
    from harness_g.agent.env.session import open_view
    from harness_g.agent.integrations.menu_service import MenuService, ServiceLimits

    if args.port < 0 or args.port > 65535:
        raise ConfigError(f"--port must be in 0..65535 (got {args.port})")
    if args.max_body_bytes < 1:
        raise ConfigError(f"--max-body-bytes must be >= 1 (got {args.max_body_bytes})")
    limits = ServiceLimits(max_sessions=args.max_sessions, idle_seconds=args.idle_seconds)
    sock = openenv_server.bind(args.host, args.port)
    try:
        with open_view(args.graph_dir, args.store, embedding_model=args.embedding_model,
                       embedding_backend=args.embedding_backend) as view:
            view.encode(["warm-up"])  # load the query encoder before the first client waits for it
            credit = _load(ANSWERER_CREDIT)(view, args.answerer) if args.answerer else None
            questions = view.artifact.questions()
            service = MenuService(view, questions, env_config, credit=credit, limits=limits)
            host, port = sock.getsockname()[:2]
            if args.host not in LOOPBACK:
                print(f"warning: listening on {args.host}, beyond loopback; the server has no authentication",
                      file=sys.stderr)
            print(f"serving the menu environment of {args.graph_dir} ({len(questions)} questions) on "
                  f"http://{host}:{port} (OpenEnv WebSocket ws://{host}:{port}/ws); Ctrl-C stops", flush=True)
            openenv_server.serve(service, sock, max_body_bytes=args.max_body_bytes)
    finally:
        sock.close()
    return 0
