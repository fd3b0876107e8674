"""The policy's context: one builder for evaluation and training (paper appendix "Environment Protocol and
Prompts", and the multi-turn training sequence of Harness-G §3.4 "Integration with GRPO" and appendix
"Implementation Details", "Training objective and masking").

An episode's context is a chat (no custom system prompt: the chat template supplies the model's default one,
as that appendix says):

- user       policy instruction + tool schema + ``environment_response(o_0, "start")``
- assistant  the policy's raw reply a_0
- user       ``environment_response(o_1, "ok" | "invalid" + reason)``
- assistant  a_1 ...

``mode="multi-turn"`` (the paper's; the default) sends that whole growing chat at every turn, so a trajectory
trains as one sequence in which the environment's turns are loss-masked and every reply carries its own step's
advantage (:func:`harness_g.training.chat.build_chat_sequence`). ``mode="markov"`` (an option for small CPU runs)
sends only the opening user turn built from the *current* observation -- it already holds the whole state
(committed evidence, visible sentences, menu) -- so every turn is its own short sequence.

Over-long contexts are never cut from the right (that would cut the menu and the assistant tag): the oldest
whole turns are dropped, always keeping the instruction, the tool schema and the latest observation, and the
drop is counted (:attr:`EpisodeContext.dropped_turns`). A latest observation that alone exceeds the budget is
refused with :class:`ContextOverflow` naming the budget.

The final answer is a separate, fresh chat holding only the question and the committed evidence C_T
(:func:`answer_messages`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from harness_g.agent.llm import prompts
from harness_g.errors import ConfigError

Message = dict[str, str]
Conversation = list[Message]

CONTEXT_MODES = ("multi-turn", "markov")
OMITTED = "(Earlier turns omitted to fit the context.)"


class ContextOverflow(ConfigError):
    """Even the shortest context (instruction, tool schema, latest observation) exceeds the prompt budget."""


def check_mode(mode: str) -> str:
    if mode not in CONTEXT_MODES:
        raise ConfigError(f"unknown context mode {mode!r}; expected one of {', '.join(CONTEXT_MODES)}")
    return mode


def policy_header(interface: str = "menu") -> str:
    """The opening instruction: menu arm = policy instruction + tool schema; free-query arm = its own header
    (no ids, no LOOKUP entities; :func:`harness_g.agent.llm.prompts.free_query_header`)."""
    if interface == "menu":
        return f"{prompts.policy_instruction()}\n\n{prompts.tool_schema()}"
    if interface == "free-query":
        return prompts.free_query_header()
    raise ConfigError(f"unknown interface {interface!r} for a policy context; expected menu or free-query")


def render_chat(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The exact prompt text a chat model sees: its chat template with the generation prompt appended. Every
    generator (evaluation backend, training sampler, vLLM engine) and every training sequence renders with this."""
    return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)


def answer_messages(question: str, evidence: Sequence[tuple[str, str]]) -> Conversation:
    """The final answer's fresh chat: the question and C_T only."""
    return prompts.answer_prompt(question, list(evidence))


@dataclass
class Turn:
    """One policy turn: the chat it was sent, its reply, and whether generation stopped on an end-of-turn token
    (False: the reply was cut at its token limit, so the policy never sampled an end token)."""

    messages: Conversation
    reply: str = ""
    stopped: bool = True
    #: token-in, token-out, when the backend reports them: the prompt ids it was fed and the ids it sampled
    prompt_ids: tuple[int, ...] | None = None
    reply_ids: tuple[int, ...] | None = None


@dataclass
class EpisodeContext:
    """One episode's context. Call :meth:`observe` with each environment response, :meth:`messages` for the chat
    to send, then :meth:`reply` with what the policy wrote. ``turns`` keeps what every turn was actually sent."""

    header: str
    mode: str = "multi-turn"
    responses: list[str] = field(default_factory=list)  # environment responses (user turns), one per turn
    turns: list[Turn] = field(default_factory=list)
    dropped_turns: int = 0  # most whole turns dropped at one turn to fit the budget

    def __post_init__(self) -> None:
        check_mode(self.mode)

    def observe(self, observation: str, event: str = "ok", error: str | None = None) -> None:
        """Append the environment's response to the last action (``event``: start, ok or invalid)."""
        self.responses.append(prompts.environment_response(observation, event, error))

    def _chat_from(self, k: int) -> Conversation:
        """The chat with turns before ``k`` dropped (markov: only the latest response)."""
        last = len(self.responses) - 1
        if self.mode == "markov":
            return [{"role": "user", "content": f"{self.header}\n\n{self.responses[last]}"}]
        first = self.header + ("\n\n" + OMITTED if k else "") + "\n\n" + self.responses[k]
        msgs: Conversation = [{"role": "user", "content": first}]
        for i in range(k, last):
            msgs.append({"role": "assistant", "content": self.turns[i].reply})
            msgs.append({"role": "user", "content": self.responses[i + 1]})
        return msgs

    def messages(self, count_tokens: Callable[[Conversation], int] | None = None, budget: int | None = None) -> Conversation:
        """The chat for the current turn (after :meth:`observe`). With ``count_tokens`` and ``budget``, whole
        oldest turns are dropped while the prompt is over budget; over budget with nothing left to drop raises
        :class:`ContextOverflow`. The returned chat is recorded as this turn's (:attr:`turns`)."""
        if len(self.responses) != len(self.turns) + 1:
            raise ConfigError(f"context: {len(self.responses)} observations for {len(self.turns)} replies; "
                              "call observe() once before each messages()")
        last = len(self.responses) - 1
        k = 0
        msgs = self._chat_from(0)
        if budget and count_tokens is not None:
            size = count_tokens(msgs)
            while size > budget and self.mode == "multi-turn" and k < last:
                k += 1
                msgs = self._chat_from(k)
                size = count_tokens(msgs)
            if size > budget:
                raise ContextOverflow(f"the policy prompt has {size} tokens, over the prompt budget of {budget} even "
                                      "with every earlier turn dropped; raise the budget (rollout.max_prompt_tokens / "
                                      "max_context_tokens) or lower visible_cap/lookup_cap")
        self.dropped_turns = max(self.dropped_turns, k)
        self.turns.append(Turn(msgs))
        return msgs

    def reply(self, text: str, stopped: bool = True, prompt_ids: tuple[int, ...] | None = None,
              reply_ids: tuple[int, ...] | None = None) -> None:
        """Record the policy's reply to the chat last returned by :meth:`messages` (with its prompt and sampled ids
        when the backend reports them)."""
        if not self.turns or len(self.turns) != len(self.responses):
            raise ConfigError("context: reply() without a pending messages() call")
        turn = self.turns[-1]
        turn.reply, turn.stopped, turn.prompt_ids, turn.reply_ids = text, bool(stopped), prompt_ids, reply_ids
