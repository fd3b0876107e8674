"""The ``harness-g`` command line. Thin: parse flags into typed configs, call one function per command."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable, Sequence

from harness_g import __version__
from harness_g.agent.demo import EXAMPLE_DIR  # noqa: F401  (re-exported: the shipped demo slice, package data)
from harness_g.errors import HarnessError, one_line


# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The root parser: global flags, then each layer's commands (graph, the demo, agent, training), in that order."""
    parser = argparse.ArgumentParser(
        prog="harness-g",
        description="Graph-structured menu environment for RL search agents (build graphs, browse, evaluate, train).",
    )
    parser.add_argument("--version", action="version", version=f"harness-g {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging and full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _register_commands(sub)
    return parser


def _register_commands(sub: Any) -> None:
    """Every command module imports only the standard library and the root package's small modules at module level,
    so a broken install fails here, loudly, instead of silently losing a command. Importing ``agent/cli.py`` and
    ``training/cli.py`` also registers the run kinds ``report`` draws (:mod:`harness_g.run_kinds`)."""
    from harness_g.agent import cli as agent_cli
    from harness_g.agent import demo
    from harness_g.graph import cli as graph_cli
    from harness_g.training import cli as training_cli

    for module in (graph_cli, demo, agent_cli, training_cli):
        module.register(sub)


def _quiet_libraries() -> None:
    """``-q``: no progress bar at all, the libraries' own included (Hugging Face downloads, transformers' "Loading
    weights"). The environment variable covers libraries imported later; the calls cover ones already imported."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``) delivered to a running command: unwinds exactly like Ctrl-C, so every ``with``
    block and ``atexit`` hook runs (an embedded FalkorDB the command started is saved and stopped, locks released)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _terminate_like_ctrl_c() -> Any:
    """Install the SIGTERM handler (main thread only); returns the previous handler to restore, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    func: Callable[[argparse.Namespace], int] = args.func
    if getattr(args, "quiet", False):
        _quiet_libraries()
    previous = _terminate_like_ctrl_c()
    try:
        return func(args)
    except Terminated:
        print("harness-g: terminated (SIGTERM); stopped cleanly", file=sys.stderr)
        return 143
    except HarnessError as exc:
        if args.verbose:
            raise
        print(f"harness-g: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file no step expected to fail (a full disk, permissions): one line, its path when known
        if args.verbose:
            raise
        print(f"harness-g: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness-g: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `harness-g cypher … | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
