"""``harness-g serve-env`` with the real OpenEnv library (``openenv-core``): the server built with OpenEnv's
``create_app``, played by OpenEnv's client, on the test graph and both stores.

- 12 concurrent WebSocket sessions (OpenEnv's ``EnvClient``) play scripted episodes, by menu id and by kind + handle,
  and get exactly the in-process ``MenuEnv``'s observations, menus, trajectories and rewards.
- Hostile requests (bad JSON, an unknown episode, a 10 MB body, a step after the end, malformed and refused actions,
  an oversized or non-JSON WebSocket message) each get an error, and a session played meanwhile is untouched; no
  CORS header is ever sent and the server listens on loopback.
"""
from __future__ import annotations

import asyncio
import http.client
import json
import re
import select
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("openenv.core.env_server", reason="openenv-core is not installed here (pip install "
                    "openenv-core==0.3.0, the openenv extra): the OpenEnv server cannot be built or played without it")

from helpers.cli_checks import assert_one_line_error, run  # noqa: E402
from helpers.menu_scripts import SCRIPTS, actions, play, served_snapshot, strip_timings  # noqa: E402
from helpers.ports import free_port  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402

from harness_g.agent.env import MenuEnv  # noqa: E402
from harness_g.agent.eval.metrics import token_f1  # noqa: E402
from harness_g.agent.integrations.openenv_server import MenuAction, MenuEnvClient  # noqa: E402

MAX_BODY = 1 << 20  # serve-env's default --max-body-bytes


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[subprocess.Popen, str, Path]]]:
    """One ``serve-env`` process per store kind (process, base URL, its stderr log), started on first use, stopped
    (SIGTERM) after the module."""
    started: dict[str, tuple[subprocess.Popen, str, Path]] = {}
    yield started
    for proc, _, _ in started.values():
        proc.terminate()
        proc.wait(timeout=60)


def _start(graph_dir: Path, log: Path) -> tuple[subprocess.Popen, str, Path]:
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "harness_g", "serve-env", str(graph_dir), "--port", "0",
                                 "--max-sessions", "16"], stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"on (http://127\.0\.0\.1:\d+) \(OpenEnv WebSocket ws://127\.0\.0\.1:\d+/ws\)", line)
    assert match, (line, proc.poll(), log.read_text()[-2000:])  # loopback by default
    return proc, match.group(1), log


@pytest.fixture
def server(servers, hotpot_dir: Path, store_kind: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base URL of the ``serve-env`` of this store kind's test graph."""
    if store_kind not in servers:
        servers[store_kind] = _start(hotpot_dir, tmp_path_factory.mktemp("serve") / "stderr.log")
    proc, url, _ = servers[store_kind]
    assert proc.poll() is None, "the server died"
    return url


@pytest.fixture
def server_log(server, servers, store_kind: str) -> Path:
    """The stderr log of this store kind's ``serve-env``."""
    return servers[store_kind][2]


def _http(url: str, method: str, path: str, body: bytes | Iterator[bytes] | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """One request (exact bytes; an iterator body is sent chunked): (status, lower-cased headers, JSON or text)."""
    conn = http.client.HTTPConnection(url.split("//", 1)[1], timeout=120)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})},
                     encode_chunked=not isinstance(body, (bytes, type(None))))
        resp = conn.getresponse()
        raw = resp.read()
        try:
            payload: Any = json.loads(raw)
        except ValueError:
            payload = raw.decode("utf-8", "replace")
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
    finally:
        conn.close()


def _oversized(url: str, declared: int | None, send: int = 0) -> tuple[int, Any]:
    """POST /step over a raw socket: ``declared`` bytes announced by Content-Length and none sent (the server must
    refuse by the header alone), or (``declared`` None) ``send`` bytes streamed chunked with no length, sending stopped
    as soon as the server answers. (status, JSON body). A client that kept sending after the answer would see the
    server close the connection under it, which is how an HTTP server refuses a body it will not read."""
    host, port = url.split("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=120) as sock:
        length = f"Content-Length: {declared}" if declared is not None else "Transfer-Encoding: chunked"
        sock.sendall(f"POST /step HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{length}\r\n\r\n"
                     .encode())
        piece = b"%x\r\n%s\r\n" % (64 << 10, b"x" * (64 << 10))
        for _ in range(0 if declared is not None else send // (64 << 10)):
            if select.select([sock], [], [], 0)[0]:
                break  # answered: stop sending
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
        raw = b""
        while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < _content_length(raw):
            data = sock.recv(65536)
            if not data:
                break
            raw += data
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _content_length(raw: bytes) -> int:
    found = re.search(rb"(?im)^content-length: *(\d+)", raw.split(b"\r\n\r\n", 1)[0])
    return int(found.group(1)) if found else 1 << 30


def _post(url: str, path: str, payload: Any) -> tuple[int, Any]:
    status, _, body = _http(url, "POST", path, json.dumps(payload).encode())
    return status, body


def _check_episode(played, results) -> None:
    """``results``: the StepResults of the reset and every step, against the in-process episode ``played``."""
    first, *stepped = results
    assert served_snapshot(first.observation.model_dump()) == played.first
    assert first.reward == 0.0 and not first.done
    for step, result in zip(played.steps, stepped):
        assert served_snapshot(result.observation.model_dump()) == step.snapshot
    for result in stepped[:-1]:
        assert result.reward == 0.0 and not result.done
    last = stepped[-1]
    assert last.done and last.observation.phase == "over" and last.observation.answer == played.answer
    assert last.reward == token_f1(played.answer, played.item.answers) == last.observation.info["f1"]
    assert strip_timings(last.observation.info["trajectory"]) == strip_timings(played.trajectory)


def test_concurrent_client_sessions_replay_the_in_process_episodes(server, server_log, hotpot_view, hotpot_questions):
    episodes = [play(MenuEnv(hotpot_view), hotpot_questions[i % len(hotpot_questions)], SCRIPTS[i % len(SCRIPTS)])
                for i in range(12)]

    async def play_all() -> tuple[list[list[Any]], int]:
        clients = [MenuEnvClient(base_url=server) for _ in episodes]
        await asyncio.gather(*(c.connect() for c in clients))
        try:
            # every session resets before any steps: 12 live episodes at once, then their steps interleave
            results = [[r] for r in await asyncio.gather(*(
                c.reset(question=p.item.question) if i % 2 else c.reset(question_id=p.item.id)
                for i, (c, p) in enumerate(zip(clients, episodes))))]
            live = (await clients[0].state()).live_episodes
            wire = [actions(p, i) for i, p in enumerate(episodes)]
            for turn in range(max(len(w) for w in wire)):
                todo = [i for i, w in enumerate(wire) if turn < len(w)]
                stepped = await asyncio.gather(*(clients[i].step(MenuAction(**wire[i][turn])) for i in todo))
                for i, result in zip(todo, stepped):
                    results[i].append(result)
            return results, live
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    results, live = asyncio.run(play_all())
    assert live >= 12
    for played, seen in zip(episodes, results):
        _check_episode(played, seen)
    # 12 clients that closed their sessions are ordinary: no traceback in the server's log (OpenEnv 0.3.0 lets
    # starlette's WebSocketDisconnect escape after a client's close; serve-env ends those sessions quietly)
    assert "Traceback" not in server_log.read_text()


def test_hostile_requests_get_errors_and_other_sessions_are_untouched(server, hotpot_view, hotpot_questions):
    played = play(MenuEnv(hotpot_view), hotpot_questions[3], SCRIPTS[0])
    wire = actions(played, 1)
    bystander = MenuEnvClient(base_url=server).sync()
    with bystander:
        seen = [bystander.reset(question=played.item.question), bystander.step(MenuAction(**wire[0]))]

        status, body = _http(server, "POST", "/step", b'{"action": {"kind": "ANSWER"')[::2]
        assert status == 422 and "JSON decode error" in json.dumps(body)
        status, body = _http(server, "POST", "/reset", b"not json at all")[::2]
        assert status == 422 and "JSON decode error" in json.dumps(body)
        status, body = _post(server, "/step", {"action": {"kind": "ANSWER", "answer": "x"}, "episode_id": "no-such-one"})
        assert status == 404 and body["detail"].startswith("unknown episode_id 'no-such-one'")
        status, body = _post(server, "/step", {"action": {"kind": "ANSWER", "answer": "x"}})
        assert status == 404 and "no episode in this session: reset first" in body["detail"]
        status, body = _oversized(server, declared=10 << 20)  # a 10 MB body: refused by its Content-Length
        assert status == 413 and f"request body of {10 << 20}+ bytes" in body["detail"]
        assert f"limit of {MAX_BODY} bytes" in body["detail"]
        status, body = _oversized(server, declared=None, send=10 << 20)  # streamed, no length: cut at the limit
        assert status == 413 and f"limit of {MAX_BODY} bytes" in body["detail"]
        # an HTTP episode: reset, answer, then a step after the end
        status, body = _post(server, "/reset", {"question": hotpot_questions[0].id, "episode_id": "hostile-1"})
        assert status == 200 and body["observation"]["episode_id"] == "hostile-1" and body["reward"] == 0.0
        for action, code, needle in (
                ({"kind": "JUMP"}, 422, "literal_error"), ({"action_id": "A0", "kind": "SELECT"}, 422, "not both"),
                ({"kind": "SELECT", "targets": ["S99"]}, 400, "SELECT S99: not a visible sentence"),
                ({"kind": "SELECT", "targets": ["S0"], "bogus": 1}, 422, "extra_forbidden")):
            status, body = _post(server, "/step", {"action": action, "episode_id": "hostile-1"})
            assert status == code and needle in json.dumps(body), (action, status, body)
        status, body = _post(server, "/step", {"action": {"kind": "ANSWER", "answer": hotpot_questions[0].answers[0]},
                                               "episode_id": "hostile-1"})
        assert status == 200 and body["done"] is True and body["reward"] == 1.0
        status, body = _post(server, "/step", {"action": {"kind": "ANSWER", "answer": "x"}, "episode_id": "hostile-1"})
        assert status == 409 and body["detail"] == "episode hostile-1 is over (answered); reset for a new question"
        status, body = _post(server, "/reset", {"question": "x", "bogus": 1})
        assert status == 400 and body["detail"].startswith("unknown reset field(s) bogus")
        status, body = _post(server, "/reset", {"question_id": "nope"})
        assert status == 400 and "is not in the graph's question set" in body["detail"]

        # the WebSocket: a non-JSON message and a step after the end are answered, the session stays open;
        # a message over the cap closes that connection only
        ws_url = server.replace("http://", "ws://") + "/ws"
        with ws_connect(ws_url, max_size=None) as ws:
            ws.send("{not json")
            assert "Invalid JSON" in json.loads(ws.recv())["data"]["message"]
            ws.send(json.dumps({"type": "reset", "data": {"question_id": hotpot_questions[1].id}}))
            assert json.loads(ws.recv())["type"] == "observation"
            ws.send(json.dumps({"type": "step", "data": {"kind": "ANSWER", "answer": "x"}}))
            assert json.loads(ws.recv())["data"]["done"] is True
            ws.send(json.dumps({"type": "step", "data": {"kind": "ANSWER", "answer": "x"}}))
            error = json.loads(ws.recv())
            assert error["type"] == "error" and "is over (answered 'x')" in error["data"]["message"]
            ws.send(json.dumps({"type": "reset", "data": {"question_id": hotpot_questions[1].id}}))
            assert json.loads(ws.recv())["data"]["observation"]["phase"] == "retrieve"
        with ws_connect(ws_url, max_size=None) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"question": "y" * (2 << 20)}}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big

        # no CORS: a cross-origin page gets no access-control header, preflight or not
        origin = {"Origin": "https://attacker.example"}
        status, headers, _ = _http(server, "OPTIONS", "/reset", None,
                                   {**origin, "Access-Control-Request-Method": "POST"})
        assert status >= 400 and not any(h.startswith("access-control-") for h in headers)
        status, headers, _ = _http(server, "GET", "/health", None, origin)
        assert status == 200 and not any(h.startswith("access-control-") for h in headers)

        # the bystander's episode goes on as if nothing happened
        seen += [bystander.step(MenuAction(**action)) for action in wire[1:]]
    _check_episode(played, seen)
    assert _http(server, "GET", "/health")[2] == {"status": "healthy"}


def test_serve_env_refuses_bad_flags_and_a_taken_port_in_one_line(capsys, hotpot_graph_dir, tmp_path):
    rc, _, err = run(capsys, "serve-env", hotpot_graph_dir, "--port", "70000")
    assert_one_line_error(rc, err, "--port must be in 0..65535 (got 70000)")
    rc, _, err = run(capsys, "serve-env", hotpot_graph_dir, "--max-sessions", "0")
    assert_one_line_error(rc, err, "max_sessions must be >= 1 (got 0)")
    rc, _, err = run(capsys, "serve-env", tmp_path / "missing", "--port", str(free_port()))
    assert_one_line_error(rc, err, "missing")
    rc, _, err = run(capsys, "serve-env", hotpot_graph_dir, "--port", str(free_port()), "--preset", "extended")
    assert_one_line_error(rc, err, "rebuild the graph with --preset extended, or run with --preset paper")

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        rc, _, err = run(capsys, "serve-env", hotpot_graph_dir, "--port", str(taken.getsockname()[1]))
    assert_one_line_error(rc, err, "cannot listen on 127.0.0.1:")


def test_the_readme_client_example_plays_an_episode(server, hotpot_questions, capsys):
    """The README's OpenEnv client block, run as written against this store's server (only the URL changes)."""
    from helpers.readme_code import python_block

    code = python_block("# play the menu environment over OpenEnv")
    assert "http://127.0.0.1:8100" in code
    scope: dict = {}
    exec(compile(code.replace("http://127.0.0.1:8100", server), "README.md:openenv-client", "exec"), scope)  # noqa: S102
    result = scope["result"]
    item = next(q for q in hotpot_questions if q.question.startswith("Lorenzo Monaco was influenced"))
    assert result.done and result.observation.phase == "over"
    assert result.reward == token_f1("Giotto", item.answers) == 1.0
    assert result.observation.info["trajectory"]["steps"][0]["action_type"] == "LOOKUP"
    printed = capsys.readouterr().out
    assert "Lorenzo Monaco was influenced" in printed and "True 1.0" in printed
