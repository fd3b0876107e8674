"""One environment contract (issue 33 item 3): MenuEnv, FreeQueryEnv and the batched env's environments implement
``harness_g.agent.env.Environment``; the episode loop and the training rollouts are typed on it; a policy adapts to
an interface through its own ``for_interface``; R-S reads the embedder through its public API.

Runs on the real slice graph (both stores) with the real MiniLM encoder.
"""
from __future__ import annotations

import inspect
import typing

import pytest

from harness_g.agent.env import BatchedMenuEnv, Environment, FreeQueryEnv, MenuEnv
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval import metrics as M
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.llm.backends import Generation
from harness_g.agent.llm.prompts import free_query_header, policy_instruction
from harness_g.agent.policies import make_policy
from harness_g.agent.policies.free_query import HeuristicFreeQueryPolicy
from harness_g.agent.policies.heuristic import HeuristicPolicy
from harness_g.agent.policies.llm import FREE_QUERY_MAX_NEW_TOKENS, LLMPolicy
from harness_g.errors import HarnessError

#: the contract's members (protocol attributes, not inherited object ones)
MEMBERS = ("done", "reset", "step", "observe", "observation", "preview", "committed_texts", "finish")


def _methods_match(env: object) -> list[str]:
    """Members whose parameters differ from the protocol's (names and kinds, ``self`` dropped)."""
    bad = []
    for name in MEMBERS:
        want = getattr(Environment, name)
        if isinstance(want, property):
            if not isinstance(inspect.getattr_static(type(env), name), property):
                bad.append(f"{name}: not a property")
            continue
        got = [(p.name, p.kind) for p in inspect.signature(getattr(env, name)).parameters.values()]
        exp = [(p.name, p.kind) for p in list(inspect.signature(want).parameters.values())[1:]]
        if [k for _, k in got] != [k for _, k in exp]:
            bad.append(f"{name}{inspect.signature(getattr(env, name))} vs {inspect.signature(want)}")
    return bad


def test_every_environment_satisfies_the_protocol(hotpot_view: GraphView) -> None:
    menu = MenuEnv(hotpot_view)
    batch = BatchedMenuEnv(hotpot_view, 2)
    envs = [menu, FreeQueryEnv(MenuEnv(hotpot_view)), *batch.envs, FreeQueryEnv(batch.envs[0])]
    for env in envs:
        assert isinstance(env, Environment), type(env).__name__
        assert not _methods_match(env), (type(env).__name__, _methods_match(env))
    assert not isinstance(batch, Environment)  # N environments stepped together, not one (see env/protocol.py)
    assert not isinstance(hotpot_view, Environment)


def test_the_loop_and_the_rollouts_are_typed_on_the_protocol() -> None:
    assert typing.get_type_hints(run_episode)["env"] is Environment
    pytest.importorskip("torch")  # training.rollout imports torch
    from harness_g.training import rollout

    hints = typing.get_type_hints(rollout._finish_rollouts)
    assert hints["envs"] == typing.Sequence[Environment]


def test_free_query_preview_is_the_menu_preview_of_the_reply(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv = FreeQueryEnv(MenuEnv(hotpot_view))
    fenv.reset(hotpot_questions[0])
    before = (list(fenv.inner.state.committed), list(fenv.inner.state.visible), fenv.inner.state.turn)
    select = fenv.preview("SELECT S0")
    assert select == fenv.inner.preview(fenv.reply_action("SELECT S0").id) and select.committed
    if fenv.search_available:
        search = fenv.preview("SEARCH: the director of the film")
        assert search.type.value == "LOOKUP" and search.visible == search.introduced
    with pytest.raises(HarnessError, match="unknown sentence S99"):
        fenv.preview("SELECT S99")
    assert (list(fenv.inner.state.committed), list(fenv.inner.state.visible), fenv.inner.state.turn) == before
    assert fenv.inner.trajectory is not None and fenv.inner.trajectory.steps == []  # a preview records no step


class _Scripted:
    """A scripted chat backend: this test is about how a policy adapts its prompt, not about a model."""

    name = "scripted"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, batch, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None, allowed=None):
        self.prompts.extend(conv[0]["content"] for conv in batch)
        return [Generation("ANSWER", 10, 1, 0.0) for _ in batch]


def test_for_interface_gives_the_free_query_prompts(hotpot_view: GraphView, hotpot_questions) -> None:
    backend = _Scripted()
    menu_policy = LLMPolicy(backend, constrain_actions=True, max_context_tokens=2048)
    fq = menu_policy.for_interface("free-query")
    assert isinstance(fq, LLMPolicy) and fq is not menu_policy and fq.backend is backend
    assert fq.header == free_query_header() and menu_policy.header.startswith(policy_instruction())
    assert fq.settings()["interface"] == "free-query" and menu_policy.settings()["interface"] == "menu"
    assert fq.max_new_tokens == FREE_QUERY_MAX_NEW_TOKENS and not fq.constrain_actions and menu_policy.constrain_actions
    assert fq.max_context_tokens + fq.max_new_tokens == menu_policy.max_context_tokens + menu_policy.max_new_tokens
    assert fq.for_interface("free-query") is fq and menu_policy.for_interface("menu") is menu_policy
    traj = run_episode(FreeQueryEnv(MenuEnv(hotpot_view)), fq, hotpot_questions[0])
    assert backend.prompts[0].startswith(free_query_header()) and policy_instruction() not in backend.prompts[0]
    assert traj.steps[0].reply == "ANSWER" and fq.stats and menu_policy.stats == {}  # its own episode bookkeeping

    heuristic = make_policy("heuristic")
    assert isinstance(heuristic, HeuristicPolicy) and heuristic.for_interface("menu") is heuristic
    hfq = heuristic.for_interface("free-query")
    assert isinstance(hfq, HeuristicFreeQueryPolicy) and hfq.base is heuristic and hfq.for_interface("menu") is heuristic
    lookahead = make_policy("lookahead")
    assert lookahead.for_interface("free-query") is lookahead  # acts on the free observation as it is


def test_evidence_encoder_reads_the_embedders_public_api(hotpot_view: GraphView) -> None:
    """R-S counts word pieces with the embedder's public ``tokenizer``/``max_seq_length``, whatever it keeps inside."""
    real = hotpot_view.embedder

    class PublicOnly:  # the real embedder's public surface, nothing private
        name, tokenizer, max_seq_length = real.name, real.tokenizer, real.max_seq_length

    class View:
        embedder = PublicOnly()
        encode = staticmethod(hotpot_view.encode)

    encoder = M.EvidenceEncoder.from_view(View())
    assert encoder.max_tokens == real.max_seq_length == 256
    text = "Kiss and Tell is a 1945 American comedy film."
    assert encoder.count_tokens(text) == len(real.tokenizer(text)["input_ids"]) > len(text.split())
