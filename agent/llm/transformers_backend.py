"""Local generation with Hugging Face transformers (CPU or GPU), batched with left padding."""
from __future__ import annotations

import threading
import time
from typing import Any, Sequence

from harness_g.agent.llm.backends import BackendError, Conversation, Generation, check_sampling, cut_at_stop
from harness_g.agent.llm.checkpoint import is_adapter, load_adapter_model
from harness_g.agent.llm.context import render_chat
from harness_g.agent.llm.models import ModelRef, resolve_model
from harness_g.errors import ConfigError

_DTYPES = ("auto", "float32", "float16", "bfloat16")


def _plain_prompt(messages: Conversation) -> str:
    """Messages joined as plain text for models without a chat template (``allow_plain_prompt``)."""
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


class TransformersBackend:
    """``AutoTokenizer`` + ``AutoModelForCausalLM``; one ``generate`` call per batch.

    ``model``: a hub id, a local directory, a ``.gguf`` path, or an alias (``smollm2``; see
    :mod:`harness_g.agent.llm.models`). Greedy when ``temperature == 0``; with sampling, ``seed``
    seeds torch before the call, so a batch is reproducible for a given seed. Conversations are
    rendered with the tokenizer's chat template (``add_generation_prompt=True``), which keeps the
    model's default system message; a tokenizer without a template is a :class:`ConfigError`
    unless ``allow_plain_prompt=True``. ``num_threads`` sets torch's intra-op threads during
    generation only (restored after each call); 1 is often fastest for a small model on a busy CPU.

    ``prefix_cache`` (default on; execution only, the replies are the same): a chat's key/value states are kept
    from one turn to the next when the caller says the chat will continue (``generate(..., keep_states=True)``, as
    :class:`~harness_g.agent.policies.llm.LLMPolicy` does under the multi-turn context), and the next turn's prompt
    computes only what its previous turn's prompt and reply do not already cover
    (:mod:`harness_g.agent.llm.chat_states`); at most ``prefix_cache_mb`` MiB of states are held.
    """

    def __init__(self, model: str = "smollm2", *, gguf_file: str | None = None, device: str = "cpu",
                 dtype: str = "float32", trust_remote_code: bool = False, allow_plain_prompt: bool = False,
                 num_threads: int | None = None, prefix_cache: bool = True, prefix_cache_mb: int = 2048):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if dtype not in _DTYPES:
            raise ConfigError(f"dtype must be one of {', '.join(_DTYPES)} (got {dtype!r})")
        self.num_threads = int(num_threads) if num_threads else None
        self.ref: ModelRef = resolve_model(model, gguf_file)
        self.name = str(self.ref)
        self.device = device
        kw: dict[str, Any] = {"trust_remote_code": trust_remote_code}
        if self.ref.gguf_file:
            kw["gguf_file"] = self.ref.gguf_file
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.ref.name_or_path, **kw)
            torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
            if self.ref.gguf_file is None and is_adapter(self.ref.name_or_path):  # a LoRA checkpoint of harness-g train
                model = load_adapter_model(self.ref.name_or_path, torch_dtype, trust_remote_code=trust_remote_code)
            else:
                model = AutoModelForCausalLM.from_pretrained(self.ref.name_or_path, dtype=torch_dtype, **kw)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"cannot load model {self.name!r}: {first}") from exc
        self._setup(model.to(device), tokenizer, allow_plain_prompt)
        self._setup_cache(prefix_cache, prefix_cache_mb)

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, *, name: str = "policy", num_threads: int | None = None,
                    prefix_cache: bool = True, prefix_cache_mb: int = 2048) -> "TransformersBackend":
        """A backend over a model already in memory (the trainer's policy, for its evaluations): the same rendering
        and generation as a loaded one, on the model's device. The model is put in eval mode while it generates. Kept
        key/value states belong to the weights that computed them: build a new backend (or :meth:`clear_states`)
        after the weights change."""
        self = cls.__new__(cls)
        self.num_threads = int(num_threads) if num_threads else None
        self.ref = ModelRef(name)
        self.name = name
        self.device = str(next(model.parameters()).device)
        self._setup(model, tokenizer, allow_plain_prompt=False)
        self._setup_cache(prefix_cache, prefix_cache_mb)
        return self

    def _setup_cache(self, prefix_cache: bool, prefix_cache_mb: int) -> None:
        from harness_g.agent.llm.chat_states import ChatStates

        if int(prefix_cache_mb) < 1:
            raise ConfigError(f"prefix_cache_mb must be >= 1 (got {prefix_cache_mb})")
        self.prefix_cache = bool(prefix_cache)
        self.states = ChatStates(int(prefix_cache_mb) << 20)
        self.prompt_positions = 0  # prompt positions of the padded batches (rows x each batch's longest prompt)
        self.computed_positions = 0  # prompt positions actually computed (fewer where states were reused)

    def clear_states(self) -> None:
        """Forget the key/value states kept for chats' next turns."""
        self.states.clear()

    def _setup(self, model: Any, tokenizer: Any, allow_plain_prompt: bool) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.model.eval()
        self.chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        if not self.chat_template and not allow_plain_prompt:
            raise ConfigError(
                f"model {self.name!r} has no chat template; use an instruct/chat model, or pass "
                "allow_plain_prompt=True to join messages as plain text")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        if not eos_ids:
            raise ConfigError(f"model {self.name!r} defines no end-of-sequence token")
        self.eos_ids = sorted(eos_ids)
        self.pad_id = self.tokenizer.pad_token_id
        self.context_window = int(getattr(self.model.config, "max_position_embeddings", 0) or 0) or None
        self._lock = threading.Lock()

    # -- prompts ------------------------------------------------------------------------------
    def render(self, messages: Conversation) -> str:
        """The exact prompt text the model sees (template + generation prompt)."""
        if self.chat_template:
            return render_chat(self.tokenizer, messages)
        return _plain_prompt(messages)

    def count_tokens(self, messages: Conversation) -> int:
        return len(self.tokenizer(self.render(messages), add_special_tokens=not self.chat_template)["input_ids"])

    # -- generation ---------------------------------------------------------------------------
    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, stop: list[str] | None = None,
                 allowed: Sequence[Sequence[str]] | None = None, keep_states: bool = False) -> list[Generation]:
        """``allowed``: per conversation, the only replies permitted (constrained decoding of action ids).
        ``keep_states``: the chats will continue (multi-turn context), so keep each one's key/value state for its
        next turn (with :attr:`prefix_cache`; a chat whose previous turn was kept reuses it either way)."""
        import torch

        from harness_g.agent.llm.kv_cache import cache_kwarg

        check_sampling(max_new_tokens, temperature, top_p)
        if not batch:
            return []
        texts = [self.render(conv) for conv in batch]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not self.chat_template)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        width = enc["input_ids"].shape[1]
        lens = [int(n) for n in enc["attention_mask"].sum(dim=1).tolist()]
        rows = [ids[width - n:] for ids, n in zip(enc["input_ids"].tolist(), lens)]
        stops = [s for s in (stop or []) if s]
        gen_kw = self._generation_kwargs(max_new_tokens, temperature, top_p, stops, allowed, width)
        with self._lock:  # one generation at a time (a server's threads share the backend), the kept states with it
            kept = [self.states.take(conv, row) for conv, row in zip(batch, rows)] if self.prefix_cache else []
            t0 = time.perf_counter()
            threads = torch.get_num_threads()
            if self.num_threads and self.num_threads != threads:
                torch.set_num_threads(self.num_threads)
            if seed is not None:
                torch.manual_seed(int(seed))
            was_training = self.model.training
            self.model.eval()  # no dropout while generating (a model shared with a trainer may be in train mode)
            try:
                with torch.inference_mode():
                    cache = self._prefill(enc, lens, kept, keep_states and self.prefix_cache)
                    if cache is not None:
                        gen_kw[cache_kwarg()] = cache
                    out = self.model.generate(**enc, **gen_kw)
            except RuntimeError as exc:
                raise BackendError(f"{self.name}: generation failed: {exc}") from exc
            finally:
                if was_training:
                    self.model.train()
                if torch.get_num_threads() != threads:
                    torch.set_num_threads(threads)
            seconds = time.perf_counter() - t0
            generations = self._generations(out.sequences, enc, stops, max_new_tokens, seconds)
            if keep_states and self.prefix_cache and cache is not None:
                self._keep(batch, rows, out.sequences[:, width:].tolist(), cache, width, lens)
        return generations

    def _prefill(self, enc: dict[str, Any], lens: list[int], kept: list[Any], keep: bool) -> Any:
        """The key/value cache ``generate`` starts from: built from the rows' ``kept`` states where any (the list
        is emptied once used, freeing them), an empty cache to cut states out of after generation when ``keep``,
        else None (``generate`` makes its own). Counts the prompt positions computed."""
        from harness_g.agent.llm.kv_cache import empty_cache, reused_prefill

        width = enc["input_ids"].shape[1]
        self.prompt_positions += len(lens) * width
        reused = reused_prefill(self.model, enc, lens, kept) if any(s is not None for s in kept) else None
        kept.clear()
        if reused is not None:
            self.computed_positions += reused[1] + len(lens)  # the uncached columns, then the last prompt column
            return reused[0]
        self.computed_positions += len(lens) * width
        return empty_cache(self.model) if keep else None

    def _keep(self, batch: Sequence[Conversation], rows: list[list[int]], generated: list[list[int]], cache: Any,
              width: int, lens: list[int]) -> None:
        """Cut each row's state (its prompt and all sampled ids but the last) out of the batch ``cache`` and keep it
        for the chat's next turn. ``generated``: per row, what ``generate`` appended (padded after a finished row)."""
        from harness_g.agent.llm.kv_cache import row_states

        end_ids = set(self.eos_ids) | ({self.pad_id} if self.pad_id is not None else set())
        sampled = []
        for row in generated:
            n = next((i for i, t in enumerate(row) if t in end_ids), None)
            sampled.append(row[: n + 1] if n is not None else row)
        states = row_states(cache, width, lens, [len(s) for s in sampled])
        for conv, prompt, ids, state in zip(batch, rows, sampled, states):
            self.states.record(conv, [*prompt, *ids], state)

    def _generation_kwargs(self, max_new_tokens: int, temperature: float, top_p: float, stops: list[str],
                           allowed: Sequence[Sequence[str]] | None, prompt_width: int) -> dict[str, Any]:
        """``model.generate`` keyword arguments: greedy at temperature 0 (else nucleus sampling, no top-k), the
        constrained-decoding hook for ``allowed`` (prompts padded to ``prompt_width`` tokens), the stop strings."""
        gen_kw: dict[str, Any] = {
            "max_new_tokens": max_new_tokens, "pad_token_id": self.pad_id, "eos_token_id": self.eos_ids,
            "return_dict_in_generate": True,
        }
        if temperature > 0:
            gen_kw.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
        else:
            gen_kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if allowed is not None:
            from harness_g.agent.llm.constrained import allowed_tokens_fn

            gen_kw["prefix_allowed_tokens_fn"] = allowed_tokens_fn(self.tokenizer, allowed, prompt_width,
                                                                   self.eos_ids[0])
        if stops:
            gen_kw.update(stop_strings=stops, tokenizer=self.tokenizer)
        return gen_kw

    def _generations(self, sequences: Any, enc: dict[str, Any], stops: list[str], max_new_tokens: int,
                     seconds: float) -> list[Generation]:
        """Decode each row of ``sequences`` ([batch, prompt width + new tokens]) after its prompt, up to its first
        end token, cut at the first stop string; ``seconds``: the whole batch's generation time."""
        width = enc["input_ids"].shape[1]
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        end_ids = set(self.eos_ids) | ({self.pad_id} if self.pad_id is not None else set())
        results = []
        for row, plen in zip(sequences[:, width:].tolist(), prompt_lens):
            n = next((i for i, t in enumerate(row) if t in end_ids), None)
            ended = n is not None and row[n] in self.eos_ids
            kept = row[: n] if n is not None else row
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            text, stopped = cut_at_stop(text, stops)
            finished = ended or stopped or (n is not None and n < max_new_tokens)
            results.append(Generation(text=text, prompt_tokens=int(plen), completion_tokens=len(kept) + (1 if ended else 0),
                                      seconds=seconds, finish_reason="stop" if finished else "length"))
        return results
