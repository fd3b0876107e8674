"""Any OpenAI-compatible ``/v1/chat/completions`` server (vLLM, llama.cpp, TGI, OpenAI, our own
:mod:`harness_g.agent.llm.server`), over the standard library only.

Retries with exponential backoff on connection errors, timeouts, HTTP 429 and 5xx; after the last
try a :class:`BackendError` names the URL. A response that is not the expected JSON is a counted
failure (``self.failures``): raised by default, or returned as an empty ``finish_reason="error"``
generation with ``on_error="empty"`` (the environment then counts an invalid reply).
"""
from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from harness_g.agent.llm.backends import BackendError, Conversation, Generation, check_sampling
from harness_g.errors import ConfigError

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend:
    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 60.0,
                 max_retries: int = 3, backoff_s: float = 0.5, concurrency: int = 8, on_error: str = "raise",
                 context_window: int | None = None, extra_body: dict[str, Any] | None = None):
        if not base_url or "://" not in base_url:
            raise ConfigError(f"base_url must be an http(s) URL such as http://127.0.0.1:8000/v1 (got {base_url!r})")
        if on_error not in ("raise", "empty"):
            raise ConfigError(f"on_error must be 'raise' or 'empty' (got {on_error!r})")
        if max_retries < 0 or timeout_s <= 0:
            raise ConfigError("max_retries must be >= 0 and timeout_s > 0")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.name = f"openai:{model}@{self.base_url}"
        self.api_key = os.environ.get(api_key_env, "") if api_key_env else ""
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.concurrency = max(1, int(concurrency))
        self.on_error = on_error
        self.context_window = context_window
        self.extra_body = dict(extra_body or {})
        self.failures = 0  # counted failures: bad responses and unreachable-server errors
        self.retries = 0

    # -- the endpoint -------------------------------------------------------------------------
    def served_models(self, timeout_s: float = 10.0) -> list[str] | None:
        """The model ids ``GET {base_url}/models`` lists; None when the server has no such route (HTTP 404/405/501).

        Raises :class:`BackendError` naming the URL when nothing answers there (one try, ``timeout_s``): a dead
        endpoint is reported before the first question instead of once per question."""
        url = self.base_url + "/models"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=min(timeout_s, self.timeout_s)) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 405, 501):  # no such route on this server: nothing to check the name against
                return None
            raise BackendError(f"{url} answered HTTP {exc.code}: {_error_detail(exc) or 'no detail'}") from None
        except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendError(f"no OpenAI-compatible server answers at {url} ({reason}); is it running? "
                               "check --base-url") from None
        try:
            payload = json.loads(raw.decode("utf-8"))
            return [str(m["id"]) for m in payload["data"]]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            return None  # not the standard listing: nothing to check the name against

    def check(self) -> None:
        """Fail fast: the endpoint answers and, when it lists its models, serves ``self.model``."""
        models = self.served_models()
        if models is not None and self.model not in models:
            shown = ", ".join(models[:10]) or "none"
            raise ConfigError(f"{self.base_url} does not serve model {self.model!r} (it serves: {shown}); check --model")

    # -- one request --------------------------------------------------------------------------
    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.retries += 1
                time.sleep(self.backoff_s * (2 ** (attempt - 1)))
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                last = f"HTTP {exc.code}{': ' + detail if detail else ''}"
                if exc.code in _RETRY_STATUS:
                    continue
                raise BackendError(f"{self.url} rejected the request: {last}") from None
            except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"{type(reason).__name__}: {reason}" if not isinstance(reason, str) else reason
                continue
            try:
                payload = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                snippet = raw[:80].decode("utf-8", "replace").replace("\n", " ")
                raise BackendError(f"{self.url} returned a response that is not JSON: {snippet!r}") from None
            if not isinstance(payload, dict):
                raise BackendError(f"{self.url} returned JSON that is not an object: {str(payload)[:80]!r}")
            return payload
        raise BackendError(f"cannot get a completion from {self.url} after {self.max_retries + 1} attempt(s): {last}")

    def _one(self, conv: Conversation, body: dict[str, Any]) -> Generation:
        t0 = time.perf_counter()
        try:
            payload = self._post({**body, "messages": list(conv)})
            try:
                choice = payload["choices"][0]
                text = choice["message"]["content"] or ""
                if not isinstance(text, str):
                    raise TypeError("content is not a string")
            except (KeyError, IndexError, TypeError) as exc:
                raise BackendError(f"{self.url} returned JSON without choices[0].message.content ({exc}): "
                                   f"{json.dumps(payload)[:120]}") from None
        except BackendError as exc:
            self.failures += 1
            if self.on_error == "raise":
                raise
            return Generation("", 0, 0, time.perf_counter() - t0, "error", str(exc))
        usage = payload.get("usage") or {}
        reason = choice.get("finish_reason") or "stop"
        return Generation(text=text, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens") or 0),
                          seconds=time.perf_counter() - t0, finish_reason="length" if reason == "length" else "stop")

    # -- protocol -----------------------------------------------------------------------------
    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, stop: list[str] | None = None) -> list[Generation]:
        check_sampling(max_new_tokens, temperature, top_p)
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_new_tokens, "temperature": temperature,
                                "top_p": top_p, **self.extra_body}
        if stop:
            body["stop"] = list(stop)
        # member i of a batch gets seed + i, so identical prompts (a GRPO group) still sample differently
        bodies = [body if seed is None else {**body, "seed": int(seed) + i} for i in range(len(batch))]
        if len(batch) <= 1 or self.concurrency == 1:
            return [self._one(conv, b) for conv, b in zip(batch, bodies)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            return list(pool.map(self._one, batch, bodies))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read()[:400].decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - best effort
        return ""
    try:
        payload = json.loads(raw)
        msg = payload.get("error", {}).get("message") if isinstance(payload.get("error"), dict) else payload.get("error")
        return str(msg or raw).strip()[:200]
    except (json.JSONDecodeError, AttributeError):
        return raw.strip().replace("\n", " ")[:200]
