"""A minimal OpenAI-compatible server over any :class:`ChatBackend` (``/v1/chat/completions``, ``/v1/models``).

For tests and local use, not production: requests are served by threads, generation is serialized
by the backend. No streaming, ``n`` must be 1. It listens on 127.0.0.1 unless told otherwise, sends
no CORS headers (a web page cannot call it), and refuses what it cannot serve with a status code
(:class:`ServerLimits`): 413 for a body over ``max_body_bytes``, 503 + ``Retry-After`` when
``max_pending`` requests already wait, 400 naming the field for a bad parameter
(:mod:`.server_request`).

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
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness_g.agent.llm.backends import BackendError, ChatBackend, InvalidRequest
from harness_g.agent.llm.server_request import DEFAULT_MAX_TOKENS, RequestFieldError, parse_chat_request
from harness_g.errors import HarnessError

__all__ = ["DEFAULT_MAX_TOKENS", "ServerLimits", "base_url", "main", "serve"]

DRAIN_SECONDS = 10.0  # how long a refused request's unread body is read and discarded before closing


@dataclass(frozen=True)
class ServerLimits:
    """What the server accepts. Everything beyond a limit gets an HTTP status, never a reset connection."""

    max_body_bytes: int = 4 * 2**20  # a request body larger than this (bytes) is answered 413
    max_pending: int = 64  # chat requests generating or waiting to; one more is answered 503 + Retry-After
    backlog: int = 1024  # listen() backlog: connections the kernel queues before accept (capped by somaxconn)
    max_tokens: int = 4096  # the largest max_tokens / max_completion_tokens a request may ask for
    timeout_s: float = 60.0  # a client silent this long while sending its request is disconnected
    retry_after_s: int = 1  # the Retry-After (seconds) sent with 503

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_pending", "backlog", "max_tokens", "retry_after_s"):
            if int(getattr(self, name)) < 1:
                raise HarnessError(f"server limit {name} must be >= 1 (got {getattr(self, name)})")
        if not self.timeout_s > 0:
            raise HarnessError(f"server limit timeout_s must be > 0 (got {self.timeout_s})")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], limits: ServerLimits):
        self.request_queue_size = limits.backlog  # read by server_activate's listen()
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # the client went away or stalled: nothing to report, keep serving
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server_version = "harness-g-llm/0.1"
    backend: ChatBackend
    model_name: str
    limits: ServerLimits
    slots: threading.BoundedSemaphore  # one per pending chat request (ServerLimits.max_pending)
    quiet: bool = True

    def log_message(self, fmt: str, *args: Any) -> None:  # noqa: D401 - http.server hook
        if not self.quiet:
            sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error",
               headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": kind}}, headers)

    def _refuse(self, status: int, message: str, unread: int | None) -> None:
        """Answer ``status`` and close; first read and discard up to ``unread`` body bytes (None: whatever
        arrives), so a client still sending its body reads the answer instead of a reset connection."""
        self._error(status, message, headers={"Connection": "close"})
        self.wfile.flush()
        self.close_connection = True
        deadline = time.monotonic() + DRAIN_SECONDS
        left = unread if unread is not None else 1 << 62
        try:
            self.connection.settimeout(1.0)
            while left > 0 and time.monotonic() < deadline:
                chunk = self.rfile.read1(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass  # timed out or gone: the answer was sent

    def _read_body(self) -> bytes | None:
        """The request body, or None once the request was refused (411/400/413)."""
        if self.headers.get("Transfer-Encoding"):
            self._refuse(411, "send the body with a Content-Length header (no Transfer-Encoding)", None)
            return None
        raw = self.headers.get("Content-Length")
        try:
            length = int(raw) if raw is not None else -1
        except ValueError:
            length = -1
        if length < 0:
            self._refuse(411 if raw is None else 400, f"bad or missing Content-Length: {raw!r}", None)
            return None
        if length > self.limits.max_body_bytes:
            self._refuse(413, f"request body of {length} bytes is over this server's limit of "
                              f"{self.limits.max_body_bytes} bytes (--max-body-bytes)", length)
            return None
        return self.rfile.read(length)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": self.model_name, "object": "model", "created": 0, "owned_by": "harness-g"}]})
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_body()
        if body is None:
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route POST {self.path}")
            return
        if not self.slots.acquire(blocking=False):
            self._error(503, f"server busy: {self.limits.max_pending} requests are already pending; retry later",
                        "server_busy", headers={"Retry-After": str(self.limits.retry_after_s)})
            return
        try:
            self._complete(body)
        finally:
            self.slots.release()

    def _complete(self, body: bytes) -> None:
        try:
            req = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            self._error(400, f"invalid JSON body: {exc}")
            return
        except RecursionError:
            self._error(400, "invalid JSON body: nested too deeply")
            return
        try:
            chat = parse_chat_request(req, max_tokens_limit=self.limits.max_tokens)
        except RequestFieldError as exc:
            self._error(400, str(exc))
            return
        try:
            gen = self.backend.generate([chat.messages], max_new_tokens=chat.max_tokens, temperature=chat.temperature,
                                        top_p=chat.top_p, seed=chat.seed, stop=chat.stop)[0]
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
            "model": chat.model or self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.text},
                         "finish_reason": gen.finish_reason if gen.finish_reason in ("stop", "length") else "stop"}],
            "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
                      "total_tokens": gen.prompt_tokens + gen.completion_tokens},
        })


def serve(backend: ChatBackend, host: str = "127.0.0.1", port: int = 0, *, model_name: str | None = None,
          quiet: bool = True, limits: ServerLimits | None = None) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving in a daemon thread; returns ``(server, thread)``. ``server.server_address[1]`` is
    the port (``port=0`` picks a free one). Stop with ``server.shutdown(); server.server_close()``."""
    limits = limits or ServerLimits()
    handler = type("Handler", (_Handler,), {
        "backend": backend, "quiet": quiet, "model_name": model_name or getattr(backend, "name", "model"),
        "limits": limits, "slots": threading.BoundedSemaphore(limits.max_pending), "timeout": limits.timeout_s})
    server = _Server((host, port), handler, limits)
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
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: loopback only; the server has no authentication)")
    p.add_argument("--port", type=int, default=8011)
    p.add_argument("--served-model-name", help="name reported by /v1/models (default: --model)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    defaults = ServerLimits()
    p.add_argument("--max-body-bytes", type=int, default=defaults.max_body_bytes,
                   help="larger request bodies are answered 413 (default: %(default)s)")
    p.add_argument("--max-pending", type=int, default=defaults.max_pending,
                   help="chat requests generating or waiting; more are answered 503 + Retry-After (default: %(default)s)")
    p.add_argument("--backlog", type=int, default=defaults.backlog,
                   help="listen backlog, connections queued before accept (default: %(default)s)")
    p.add_argument("--max-tokens-limit", type=int, default=defaults.max_tokens,
                   help="the largest max_tokens a request may ask for (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        from harness_g.agent.llm.transformers_backend import TransformersBackend

        limits = ServerLimits(max_body_bytes=args.max_body_bytes, max_pending=args.max_pending,
                              backlog=args.backlog, max_tokens=args.max_tokens_limit)

        backend = TransformersBackend(args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype,
                                     num_threads=args.num_threads)
        server, thread = serve(backend, args.host, args.port, model_name=args.served_model_name or args.model,
                               quiet=not args.verbose, limits=limits)
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
