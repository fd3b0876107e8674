"""A minimal OpenAI-compatible server over any :class:`ChatBackend` (``/v1/chat/completions``, ``/v1/models``).

For tests and local use, not production: requests are served by threads, generation is serialized
by the backend. No streaming, ``n`` must be 1.

    python -m harness_g.agent.llm.server --model smollm2 --port 8011
    harness-g ... --policy openai  (base_url=http://127.0.0.1:8011/v1, model=smollm2)
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness_g.agent.llm.backends import BackendError, ChatBackend, InvalidRequest
from harness_g.errors import HarnessError

DEFAULT_MAX_TOKENS = 256


class _Handler(BaseHTTPRequestHandler):
    server_version = "harness-g-llm/0.1"
    backend: ChatBackend
    model_name: str
    quiet: bool = True

    def log_message(self, fmt: str, *args: Any) -> None:  # noqa: D401 - http.server hook
        if not self.quiet:
            sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind}})

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": self.model_name, "object": "model", "created": 0, "owned_by": "harness-g"}]})
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route POST {self.path}")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            req = json.loads(self.rfile.read(length).decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("body must be a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            self._error(400, f"invalid JSON body: {exc}")
            return
        messages = req.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in messages):
            self._error(400, "messages must be a non-empty list of {role, content} objects with string content")
            return
        if req.get("stream"):
            self._error(400, "stream=true is not supported by this server")
            return
        if int(req.get("n") or 1) != 1:
            self._error(400, "only n=1 is supported")
            return
        stop = req.get("stop")
        stop = [stop] if isinstance(stop, str) else list(stop) if stop else None
        try:
            max_tokens = int(req.get("max_completion_tokens") or req.get("max_tokens") or DEFAULT_MAX_TOKENS)
            temperature = float(req["temperature"]) if req.get("temperature") is not None else 1.0
            top_p = float(req["top_p"]) if req.get("top_p") is not None else 1.0
            seed = int(req["seed"]) if req.get("seed") is not None else None
        except (TypeError, ValueError) as exc:
            self._error(400, f"bad sampling parameter: {exc}")
            return
        conv = [{"role": m["role"], "content": m["content"]} for m in messages]
        try:
            gen = self.backend.generate([conv], max_new_tokens=max_tokens, temperature=temperature, top_p=top_p,
                                        seed=seed, stop=stop)[0]
        except InvalidRequest as exc:
            self._error(400, str(exc))
            return
        except BackendError as exc:
            self._error(500, str(exc), "server_error")
            return
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")
            return
        self._send(200, {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion", "created": int(time.time()),
            "model": req.get("model") or self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                         "finish_reason": gen.finish_reason if gen.finish_reason in ("stop", "length") else "stop"}],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                      "total_tokens": gen.prompt_tokens + gen.completion_tokens},
        })


def serve(backend: ChatBackend, host: str = "127.0.0.1", port: int = 0, *, model_name: str | None = None,
          quiet: bool = True) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving in a daemon thread; returns ``(server, thread)``. ``server.server_address[1]`` is
    the port (``port=0`` picks a free one). Stop with ``server.shutdown(); server.server_close()``."""
    handler = type("Handler", (_Handler,), {"backend": backend, "quiet": quiet,
                                            "model_name": model_name or getattr(backend, "name", "model")})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="harness-g-llm-server", daemon=True)
    thread.start()
    return server, thread


def base_url(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/v1"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness_g.agent.llm.server",
                                description="Serve a local model behind an OpenAI-compatible /v1/chat/completions.")
    p.add_argument("--model", default="smollm2", help="hub id, directory, .gguf file or 'smollm2' (default)")
    p.add_argument("--gguf-file", help="GGUF file name inside --model's directory")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["auto", "float32", "float16", "bfloat16"])
    p.add_argument("--num-threads", type=int, help="torch threads for generation (default: torch's; 1 is best on a busy CPU)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8011)
    p.add_argument("--served-model-name", help="name reported by /v1/models (default: --model)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    args = p.parse_args(argv)
    try:
        from harness_g.agent.llm.transformers_backend import TransformersBackend

        backend = TransformersBackend(args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype,
                                     num_threads=args.num_threads)
        server, thread = serve(backend, args.host, args.port, model_name=args.served_model_name or args.model,
                               quiet=not args.verbose)
    except (HarnessError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"serving {args.served_model_name or args.model} at {base_url(server)}", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
