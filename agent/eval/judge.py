"""G-E: LLM-judged generation quality (paper appendix "Evaluation Details", following Graph-R1).

A judge model behind an OpenAI-compatible chat endpoint scores each response 0–10 on seven
dimensions; per question G-E = 10/7 · Σ_d s_d (0–100). Records keep the raw scores under
``record["judge"]`` and ``metrics["ge"] = Σ_d s_d / 70`` in [0, 1] like every other metric, so the
summary's ``ge`` (×100) is the paper's G-E = 10/(7N) Σ_i Σ_d s_{i,d}.

Judging never loses a result: a server that is down, a timeout, or a reply that is not the
expected JSON gives ``record["judge"] = {"error": ...}`` and ``metrics["ge"] = None``; the
summary counts them as ``ge_failures`` and a resumed ``eval`` re-judges them.

Transport: the project's OpenAI backend when it offers a chat call, else stdlib ``urllib``
(``POST {base_url}/chat/completions``). The API key, if the server needs one, comes from
``--judge-api-key`` or the ``JUDGE_API_KEY`` / ``OPENAI_API_KEY`` environment variables.
"""
from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Sequence

DIMENSIONS = ("comprehensiveness", "knowledgeability", "correctness", "relevance", "diversity", "logical_coherence", "factuality")
DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
MAX_EVIDENCE_CHARS = 4000

SYSTEM_PROMPT = (
    "You are an impartial, strict evaluator of answers to questions. You compare a response against the reference "
    "answer and the question, and you reply with JSON only."
)

_DIM_HELP = {
    "comprehensiveness": "covers everything the question asks for",
    "knowledgeability": "shows accurate command of the relevant knowledge",
    "correctness": "agrees with the reference answer",
    "relevance": "addresses the question and nothing else",
    "diversity": "considers the relevant aspects / candidates where the question calls for it",
    "logical_coherence": "is internally consistent and follows from the evidence",
    "factuality": "contains no false or unsupported claims",
}


def judge_prompt(question: str, response: str, references: Sequence[str], evidence: Sequence[str] = ()) -> str:
    lines = [
        f"Question: {question}",
        f"Reference answer(s): {' | '.join(references) if references else '(none given)'}",
        f"Response to evaluate: {response if response else '(empty response)'}",
    ]
    if evidence:
        text = "\n".join(f"- {e}" for e in evidence)
        lines.append("Evidence the responder used:\n" + text[:MAX_EVIDENCE_CHARS])
    lines.append("")
    lines.append("Score the response from 0 (worst) to 10 (best) on each dimension:")
    lines += [f"- {d}: {_DIM_HELP[d]}" for d in DIMENSIONS]
    lines.append("Reply with only a JSON object with exactly these keys and integer values, for example:")
    lines.append(json.dumps({d: 0 for d in DIMENSIONS}))
    return "\n".join(lines)


class JudgeError(Exception):
    """The judge gave no usable scores (transport failure or unparseable reply)."""


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def parse_scores(text: str) -> dict[str, float]:
    """The seven scores from a reply: a JSON object (bare, fenced, or under ``"scores"``), every
    dimension present, each a number in [0, 10]. Raises :class:`JudgeError` otherwise."""
    if text is None or not str(text).strip():
        raise JudgeError("empty judge reply")
    text = str(text)
    obj: Any = None
    candidates = [text.strip()]
    fenced = re.findall(r"```(?:json)?\s*(.*?)```", text, re.S)
    candidates += fenced
    # first '{' to last '}' (what the greedy regex \{.*\} matched), found in linear time: the regex was
    # quadratic on a reply with many '{' and no '}'
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for cand in candidates:
        try:
            obj = json.loads(cand)
            break
        except (json.JSONDecodeError, ValueError):
            continue
    if not isinstance(obj, dict):
        raise JudgeError(f"judge reply is not a JSON object: {text[:120]!r}")
    if isinstance(obj.get("scores"), dict):
        obj = obj["scores"]
    got = {_norm_key(k): v for k, v in obj.items()}
    scores: dict[str, float] = {}
    missing = [d for d in DIMENSIONS if d not in got]
    if missing:
        raise JudgeError(f"judge reply lacks {', '.join(missing)}")
    for d in DIMENSIONS:
        v = got[d]
        if isinstance(v, dict):  # {"score": 7, "reason": ...}
            v = v.get("score")
        try:
            if isinstance(v, bool):
                raise TypeError
            x = float(v)
        except (TypeError, ValueError):
            raise JudgeError(f"judge score for {d} is not a number: {v!r}") from None
        if not 0.0 <= x <= 10.0 or x != x:
            raise JudgeError(f"judge score for {d} is outside 0-10: {x}")
        scores[d] = x
    return scores


def generation_evaluation(scores: dict[str, float]) -> float:
    """Per-question G-E on the 0–100 scale: 10/7 · Σ_d s_d."""
    return 10.0 / 7.0 * sum(scores[d] for d in DIMENSIONS)


@dataclass
class JudgeResult:
    scores: dict[str, float] | None
    error: str | None = None
    raw: str | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None

    @property
    def ge(self) -> float | None:
        """0–100."""
        return None if self.scores is None else generation_evaluation(self.scores)


@dataclass
class Judge:
    """An OpenAI-compatible chat endpoint as the G-E judge.

    ``base_url`` is the API root (``http://host:8000/v1``); ``/chat/completions`` is appended
    unless already there.
    """

    base_url: str
    model: str = DEFAULT_JUDGE_MODEL
    api_key: str | None = None
    timeout_s: float = 60.0
    retries: int = 1
    temperature: float = 0.0
    max_tokens: int = 200
    with_evidence: bool = True
    stats: dict[str, int] = field(default_factory=lambda: {"calls": 0, "failures": 0})

    def __post_init__(self) -> None:
        if self.api_key is None:
            self.api_key = os.environ.get("JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    # -- transport ------------------------------------------------------------------------
    def _backend(self) -> Any | None:
        """The project's :class:`OpenAIBackend` (one try per call: :meth:`score` does the retrying),
        or None when it is not available (stdlib fallback)."""
        if getattr(self, "_backend_obj", None) is None:
            try:
                from harness_g.agent.llm.openai_backend import OpenAIBackend
            except ImportError:  # pragma: no cover - the LLM package is optional for judging
                self._backend_obj = False
            else:
                root = self.url[: -len("/chat/completions")]
                backend = OpenAIBackend(root, self.model, api_key_env="", timeout_s=self.timeout_s, max_retries=0)
                backend.api_key = self.api_key or ""
                self._backend_obj = backend
        return self._backend_obj or None

    def _chat(self, messages: list[dict[str, str]]) -> str:
        backend = self._backend()
        if backend is None:
            return self._chat_urllib(messages)
        try:
            gen = backend.generate([messages], max_new_tokens=self.max_tokens, temperature=self.temperature)[0]
        except Exception as exc:  # BackendError and friends: a counted judge failure, never fatal
            raise JudgeError(f"judge call failed: {exc}") from exc
        return gen.text

    def _chat_urllib(self, messages: list[dict[str, str]]) -> str:
        body = {"model": self.model, "messages": messages, "temperature": self.temperature, "max_tokens": self.max_tokens}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                payload = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:200] if exc.fp else ""
            raise JudgeError(f"judge HTTP {exc.code} from {self.url}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            raise JudgeError(f"judge unreachable at {self.url}: {getattr(exc, 'reason', exc)}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise JudgeError(f"judge server at {self.url} did not return JSON") from exc
        try:
            return payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise JudgeError(f"unexpected chat response shape: {str(payload)[:160]}") from None

    # -- scoring --------------------------------------------------------------------------
    def score(self, question: str, response: str, references: Sequence[str], evidence: Sequence[str] = ()) -> JudgeResult:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": judge_prompt(question, response, references, evidence if self.with_evidence else ())}]
        last = "no attempt"
        raw = None
        for _ in range(max(1, self.retries + 1)):
            self.stats["calls"] += 1
            try:
                raw = self._chat(messages)
                return JudgeResult(parse_scores(raw), None, raw)
            except JudgeError as exc:
                last = str(exc)
        self.stats["failures"] += 1
        return JudgeResult(None, last, raw)

    def judge_record(self, record: dict[str, Any], evidence: Sequence[str] = ()) -> dict[str, Any]:
        """Score one eval record in place: ``record["judge"]`` and ``record["metrics"]["ge"]``."""
        result = self.score(record.get("question", ""), record.get("prediction") or "", record.get("answers") or [], evidence)
        if result.ok:
            assert result.scores is not None and result.ge is not None
            record["judge"] = {"model": self.model, "scores": result.scores, "ge": round(result.ge, 4)}
            record.setdefault("metrics", {})["ge"] = sum(result.scores.values()) / (10.0 * len(DIMENSIONS))
        else:
            record["judge"] = {"model": self.model, "error": result.error, "raw": (result.raw or "")[:500] or None}
            record.setdefault("metrics", {})["ge"] = None
        return record


def evidence_texts(view: Any, record: dict[str, Any]) -> list[str]:
    """``"title: text"`` of the record's committed evidence C_T (what the answerer saw)."""
    committed = list((record.get("trajectory") or {}).get("committed") or [])
    if not committed:
        return []
    infos = view.sentences(committed)
    return [f"{infos[s].title}: {infos[s].text}" for s in committed if s in infos]


def needs_judging(record: dict[str, Any]) -> bool:
    """A scored record without a successful judgement (never judged, or judging failed)."""
    if "error" in record:
        return False
    j = record.get("judge")
    return not j or "scores" not in j


def make_judge(base_url: str | None, model: str | None = None, **kwargs: Any) -> Judge | None:
    """``None`` when no base URL is given: G-E is optional."""
    if not base_url:
        return None
    return Judge(base_url=base_url, model=model or DEFAULT_JUDGE_MODEL, **kwargs)
