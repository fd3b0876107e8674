"""The menu environment as an OpenEnv environment server, built with OpenEnv's own ``create_app`` (``openenv-core``).

``harness-g serve-env GRAPH_DIR`` serves :class:`MenuEnvironment` (an ``openenv.core`` ``Environment``) over one
:class:`~.menu_service.MenuService`; :class:`MenuEnvClient` (an ``openenv.core`` ``EnvClient``) plays it:

    with MenuEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(question="Lorenzo Monaco was influenced by which Italian painter and architect?")
        result = env.step(MenuAction(kind="LOOKUP", targets=["E0"]))       # or MenuAction(action_id="A3")
        result = env.step(MenuAction(kind="ANSWER", answer="Giotto"))      # result.done, result.reward (F1)

The endpoints are OpenEnv's: the WebSocket session ``/ws`` (one environment per connection: what
``EnvClient`` uses), ``POST /reset`` and ``POST /step`` (stateless in OpenEnv: a fresh environment per request,
so an HTTP episode is addressed by the ``episode_id`` that ``/reset`` returned, sent next to ``action`` in ``/step``),
``GET /state``, ``/schema``, ``/metadata``, ``/health``. What this module adds to OpenEnv's app: errors as status
codes with a one-line ``detail`` (unknown episode 404, step after the end 409, a refused action or bad reset field 400,
no room 503; a request that does not fit the schema is OpenEnv's 422; over the WebSocket OpenEnv sends an error
message and the session stays open), a request size cap (413 over HTTP; a larger WebSocket message closes that
connection with 1009) and no CORS headers at all. It listens on 127.0.0.1 unless told otherwise and has no
authentication (OpenEnv's client sends none), so serve it on loopback or a private network only.

OpenEnv 0.3.0 drops ``Observation.metadata`` when it serialises an observation (huggingface/OpenEnv#616), so the
observation also carries the same dict as ``info``, which crosses the wire.
"""
from __future__ import annotations

import functools
import os
import socket
from typing import Any, Callable, Literal, Optional

from fastapi import FastAPI, HTTPException, Request, WebSocketDisconnect
from fastapi.responses import JSONResponse
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from harness_g.agent.env import EpisodeOver
from harness_g.agent.env.actions import MAX_REPLY_CHARS
from harness_g.agent.integrations.menu_service import (ActionRefused, ActionSpec, Episode, MenuService, ServiceFull,
                                                       UnknownEpisode)
from harness_g.errors import HarnessError, one_line

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MenuAction", "MenuEnvClient", "MenuEnvironment", "MenuObservation", "MenuState",
           "build_app", "serve"]

DEFAULT_MAX_BODY_BYTES = 1 << 20  # 1 MiB: an action is a few hundred bytes, a reset a question
ENV_NAME = "harness-g-menu"
#: HTTP status of each error a reset or step can raise (the most specific class wins)
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (UnknownEpisode, 404), (EpisodeOver, 409), (ServiceFull, 503), (ActionRefused, 400), (HarnessError, 400))
RESET_FIELDS = ("question", "question_id", "answers", "episode_id", "seed")


# -- the wire types -------------------------------------------------------------------------------------------
class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommittedSentenceItem(_Record):
    """One sentence of C_t, in commit order."""

    id: str
    title: str
    text: str


class VisibleSentenceItem(_Record):
    """One sentence of U_t; ``handle`` (S0, S1, ...) is how the text and a SELECT name it."""

    id: str
    handle: str
    title: str
    text: str


class EntityItem(_Record):
    """One LOOKUP target; ``role``: bridge (in C_t), question (named in the question) or frontier (in U_t)."""

    id: str
    handle: str
    name: str
    surface: str
    role: str


class MenuEntry(_Record):
    """One executable action of M_t: its id (A0, ...), kind, targets (sentence or entity ids) and rendered label."""

    id: str
    kind: str
    targets: list[str]
    label: str


class MenuAction(Action):
    """One step (see :class:`~.menu_service.ActionSpec`): ``action_id`` (a menu id such as "A3", or a policy's raw
    reply, parsed strictly: an invalid reply uses its turn) or ``kind`` + ``targets`` (handles S2 / E0 or graph ids;
    refused without using a turn when the menu does not offer it); ``answer``: the final answer text, with the action
    that ends retrieval or alone once retrieval is over."""

    action_id: Optional[str] = Field(default=None, max_length=4 * MAX_REPLY_CHARS,
                                     description="menu action id (A3) or the policy's raw reply")
    kind: Optional[Literal["SELECT", "LOOKUP", "ANSWER_WITH", "ANSWER"]] = Field(
        default=None, description="action kind, with targets (instead of action_id)")
    targets: list[str] = Field(default_factory=list, max_length=64,
                               description="sentence handles/ids (SELECT: 1, ANSWER_WITH: 1..k) or an entity handle/id "
                                           "(LOOKUP: 1); none for ANSWER")
    answer: Optional[str] = Field(default=None, max_length=MAX_REPLY_CHARS,
                                  description="final answer text: with the action that ends retrieval, or alone after")

    @model_validator(mode="after")
    def _one_form(self) -> "MenuAction":
        # PydanticCustomError, not ValueError: a ValueError rides in the error's ctx, which OpenEnv's 422 response
        # cannot serialise (the client got a 500)
        if self.action_id is not None and self.kind is not None:
            raise PydanticCustomError("action_form", "give action_id or kind, not both")
        if self.action_id is None and self.kind is None and self.answer is None:
            raise PydanticCustomError("action_form", "an action needs action_id, kind, or (once retrieval is over) answer")
        return self

    def spec(self) -> ActionSpec:
        return ActionSpec(self.action_id, self.kind, tuple(self.targets), self.answer)


class MenuObservation(Observation):
    """The episode after a reset or step (:meth:`~.menu_service.MenuService.observation`). ``reward``: 0.0 before
    the end, the answer's F1 against the gold answers at the end (None without gold); ``info`` = ``metadata``."""

    episode_id: str
    question_id: str
    question: str
    phase: Literal["retrieve", "answer", "over"]
    turn: int
    max_turns: int
    event: str
    error: Optional[str] = None
    text: str
    committed: list[CommittedSentenceItem] = Field(default_factory=list)
    visible: list[VisibleSentenceItem] = Field(default_factory=list)
    entities: list[EntityItem] = Field(default_factory=list)
    menu: list[MenuEntry] = Field(default_factory=list)
    terminated_by: Optional[str] = None
    answer: Optional[str] = None
    info: dict[str, Any] = Field(default_factory=dict)


class MenuState(State):
    """``episode_id``/``step_count`` (turns used) of this session's episode, its question and phase, and how many
    episodes the server keeps live."""

    question_id: Optional[str] = None
    phase: Optional[str] = None
    live_episodes: int = 0


# -- the environment ------------------------------------------------------------------------------------------
class MenuEnvironment(Environment[MenuAction, MenuObservation, MenuState]):
    """One OpenEnv session over a shared :class:`MenuService` (built by ``create_app``'s factory per WebSocket
    session and per HTTP request). Sessions share nothing but the service: each holds its own episode."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, service: MenuService):
        super().__init__()
        self._service = service
        self._episode: Episode | None = None

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, question: Optional[str] = None,
              question_id: Optional[str] = None, answers: Any = None, **kwargs: Any) -> MenuObservation:
        """A new episode for ``question`` (text, or a graph question's id) or ``question_id``; ``answers``: gold for
        an ad-hoc question. ``seed`` is accepted and changes nothing (the environment is deterministic)."""
        if kwargs:
            raise HarnessError(f"unknown reset field(s) {', '.join(sorted(kwargs))}; accepted: {', '.join(RESET_FIELDS)}")
        self._episode = self._service.reset(question=question, question_id=question_id, answers=answers,
                                            episode_id=episode_id, replaces=self._episode)
        return self._observation(self._episode)

    def step(self, action: MenuAction, timeout_s: Optional[float] = None, episode_id: Optional[str] = None,
             request_id: Optional[str] = None, **kwargs: Any) -> MenuObservation:
        """Take ``action`` in this session's episode, or (HTTP, stateless) in the live episode ``episode_id``."""
        if kwargs:
            raise HarnessError(f"unknown step field(s) {', '.join(sorted(kwargs))}; accepted: action, episode_id, "
                               "timeout_s, request_id")
        if episode_id is not None:
            episode = self._service.episode(episode_id)
        elif self._episode is not None:
            episode = self._episode
        else:
            raise UnknownEpisode("no episode in this session: reset first (over HTTP, which is stateless, send the "
                                 "episode_id that POST /reset returned with each POST /step, or use the WebSocket /ws)")
        self._service.step(episode, action.spec())
        return self._observation(episode)

    def close(self) -> None:
        """OpenEnv closes the environment when its WebSocket session ends (and after every stateless HTTP request):
        its unfinished episode is released, the first to drop when a reset needs room (still playable by id)."""
        if self._episode is not None:
            self._service.release(self._episode)

    @property
    def state(self) -> MenuState:
        episode = self._episode
        live = self._service.live_episodes
        if episode is None:
            return MenuState(live_episodes=live)
        assert episode.env.state is not None
        return MenuState(episode_id=episode.id, step_count=episode.env.state.turn, question_id=episode.item.id,
                         phase=episode.phase, live_episodes=live)

    def get_metadata(self) -> EnvironmentMetadata:
        from harness_g import __version__

        view = self._service.view
        return EnvironmentMetadata(
            name=ENV_NAME, version=__version__,
            description=f"harness-g menu environment (SELECT / LOOKUP / ANSWER_WITH / ANSWER) over graph "
                        f"{view.artifact.path.name} (version {view.version}), max_turns {self._service.config.max_turns}")

    def _observation(self, episode: Episode) -> MenuObservation:
        data = self._service.observation(episode)
        return MenuObservation(**data, metadata=data["info"])


# -- the app --------------------------------------------------------------------------------------------------
def _error_handler(status: int) -> Callable[[Request, Exception], Any]:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": one_line(str(exc)), "error": type(exc).__name__}, status_code=status)

    return handle


class QuietClose:
    """ASGI middleware: a WebSocket session whose client already left ends quietly. OpenEnv 0.3.0's ``/ws`` handler
    closes the socket in its ``finally`` (the session already destroyed) and lets starlette's WebSocketDisconnect
    escape when the client closed first, which uvicorn logs as a traceback for every ordinary disconnect."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass


class BodyLimit:
    """ASGI middleware: an HTTP request body over ``max_bytes`` is answered 413 (by its Content-Length when it
    declares one, else once that many bytes arrived). WebSocket messages are capped by the server (``ws_max_size``)."""

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self, size: int) -> HTTPException:
        return HTTPException(status_code=413, detail=f"request body of {size}+ bytes is over this server's limit of "
                                                     f"{self.max_bytes} bytes (--max-body-bytes)")

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            exc = self._too_large(int(declared))
            response = JSONResponse({"detail": exc.detail}, status_code=413, headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        received = 0

        async def limited() -> dict:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise self._too_large(received)  # FastAPI re-raises HTTPException from body reading
            return message

        await self.app(scope, limited, send)


def build_app(service: MenuService, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """OpenEnv's app (``create_app``, at most ``service.limits.max_sessions`` WebSocket sessions) for ``service``,
    with harness-g's error statuses and the body cap. Refuses ``ENABLE_WEB_INTERFACE`` (OpenEnv's Gradio UI is not
    served here)."""
    if os.environ.get("ENABLE_WEB_INTERFACE", "false").lower() in ("true", "1", "yes"):
        raise HarnessError("ENABLE_WEB_INTERFACE is set: serve-env does not serve OpenEnv's Gradio web interface; unset it")
    if max_body_bytes < 1:
        raise HarnessError(f"max_body_bytes must be >= 1 (got {max_body_bytes})")
    app = create_app(functools.partial(MenuEnvironment, service), MenuAction, MenuObservation, env_name=ENV_NAME,
                     max_concurrent_envs=service.limits.max_sessions)
    for cls, status in ERROR_STATUS:
        app.add_exception_handler(cls, _error_handler(status))
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.add_middleware(QuietClose)
    return app


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HarnessError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(1024)
    return sock


def serve(service: MenuService, sock: socket.socket, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
    """Serve ``service`` on the bound ``sock`` until SIGINT/SIGTERM (uvicorn)."""
    import uvicorn

    app = build_app(service, max_body_bytes=max_body_bytes)
    config = uvicorn.Config(app, ws_max_size=max_body_bytes, log_level="warning", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


# -- the client -----------------------------------------------------------------------------------------------
class MenuEnvClient(EnvClient[MenuAction, MenuObservation, MenuState]):
    """OpenEnv's WebSocket client for :class:`MenuEnvironment` (``.sync()`` for a blocking one). A server error
    (a refused action, a step after the end) raises OpenEnv's ``RuntimeError("Server error: ...")``; the session
    stays usable."""

    def _step_payload(self, action: MenuAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[MenuObservation]:
        fields = dict(payload.get("observation") or {})
        observation = MenuObservation(**fields, reward=payload.get("reward"), done=bool(payload.get("done")),
                                      metadata=fields.get("info") or {})
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> MenuState:
        return MenuState(**payload)
