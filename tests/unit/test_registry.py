"""The one name -> object Registry and the registries built on it (policies, interfaces, credit, estimators,
generators): duplicates refused, unknown names listed, names sorted, the decorator returns what it decorates."""
import dataclasses

import pytest

from harness_g.errors import ConfigError
from harness_g.registry import Registry


def _registry() -> Registry:
    reg: Registry = Registry("widget")
    reg.add("zeta", 1)
    reg.add("alpha", 2)
    reg.add("mid", 3)
    return reg


def test_duplicates_are_refused() -> None:
    reg = _registry()
    with pytest.raises(ConfigError, match="widget 'alpha' is already registered"):
        reg.add("alpha", 99)
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("mid")(lambda: None)
    assert reg.get("alpha") == 2  # the first registration stands


def test_unknown_name_error_lists_the_available_names() -> None:
    with pytest.raises(ConfigError, match=r"^unknown widget 'alfa'; available: alpha, mid, zeta$"):
        _registry().get("alfa")
    with pytest.raises(ConfigError, match=r"^unknown widget \['alpha'\]; available: alpha, mid, zeta$"):
        _registry().get(["alpha"])  # unhashable: still a clean ConfigError


def test_check_names_the_field_and_returns_the_name() -> None:
    reg = _registry()
    assert reg.check("mid", field="x.kind") == "mid"
    with pytest.raises(ConfigError, match=r"^x\.kind 'nope' unknown; available: alpha, mid, zeta$"):
        reg.check("nope", field="x.kind")
    with pytest.raises(ConfigError, match=r"^unknown widget 'zeta'; available: alpha, mid$"):
        reg.check("zeta", where=lambda v: v > 1)  # a subset: only its names are valid and listed


def test_names_are_sorted_and_filterable() -> None:
    reg = _registry()
    assert reg.names() == ["alpha", "mid", "zeta"] == list(reg)
    assert reg.names(lambda v: v >= 2) == ["alpha", "mid"]
    assert reg.items() == [("alpha", 2), ("mid", 3), ("zeta", 1)]
    assert len(reg) == 3 and "mid" in reg and "nope" not in reg and ["mid"] not in reg
    assert repr(reg) == "Registry('widget': alpha, mid, zeta)"


def test_decorator_returns_the_object_unchanged() -> None:
    reg: Registry = Registry("fn")

    def f(x: int) -> int:
        return x + 1

    assert reg.register("f")(f) is f and reg.get("f") is f


def test_bad_names_are_refused() -> None:
    reg: Registry = Registry("widget")
    for bad in ("", None, 3):
        with pytest.raises(ConfigError, match="non-empty string"):
            reg.add(bad, 1)  # type: ignore[arg-type]


def test_replace_swaps_only_an_existing_entry() -> None:
    reg = _registry()
    assert reg.replace("mid", 30) == 3 and reg.get("mid") == 30
    with pytest.raises(ConfigError, match="unknown widget 'new'"):
        reg.replace("new", 1)  # a typo cannot add a name through replace
    assert "new" not in reg


# -- the project's registries ------------------------------------------------------------------------------------
def test_policies_are_lazy_and_flag_llm_policies() -> None:
    from harness_g.agent.policies import POLICIES, LazyPolicy, llm_policies

    assert {"heuristic", "lookahead", "oracle", "human", "transformers", "vllm", "openai"} <= set(POLICIES)
    assert llm_policies() == ["openai", "transformers", "vllm"]
    for name, factory in POLICIES.items():
        assert isinstance(factory, LazyPolicy) and factory.help, name
        assert callable(factory.load()), name  # every import path resolves


def test_trainable_interfaces_are_derived_from_the_interface_registry() -> None:
    from harness_g.agent.eval.interfaces import INTERFACES, trainable_interfaces

    assert INTERFACES.names() == ["free-query", "menu", "naive", "rag"]
    assert trainable_interfaces() == ["free-query", "menu"]
    assert all(INTERFACES.get(n).name == n for n in INTERFACES)


def test_training_registries() -> None:
    pytest.importorskip("torch")
    from harness_g.training.advantages import ESTIMATORS
    from harness_g.training.credit import CREDIT_SCHEMES, compute_credit
    from harness_g.training.generators import GENERATORS

    assert ESTIMATORS.names() == ["dapo", "grpo", "reinforce_pp"]
    assert {"outcome", "snc", "snc_no_enablement", "snc_no_frontier", "igpo"} == set(CREDIT_SCHEMES)
    assert GENERATORS.names() == ["transformers", "vllm"]
    with pytest.raises(ConfigError, match="unknown credit scheme 'nope'; available: igpo, outcome, snc"):
        compute_credit("nope", [])


def test_generator_factories_build_from_one_request(tmp_path) -> None:
    pytest.importorskip("torch")
    from harness_g.training.generators import GENERATORS, GeneratorRequest
    from harness_g.training.rollout import Generator

    policy, tokenizer = object(), object()
    req = GeneratorRequest(policy=policy, tokenizer=tokenizer, temperature=0.7, top_p=0.9, max_prompt_tokens=300,
                           max_new_tokens=32, seed=5, workdir=tmp_path)
    gen = GENERATORS.get("transformers")(req)
    assert isinstance(gen, Generator) and gen.model is policy and gen.tokenizer is tokenizer
    assert (gen.temperature, gen.top_p, gen.max_prompt_tokens) == (0.7, 0.9, 300)
    with pytest.raises(ConfigError, match="single-process"):  # refused before any export or engine start
        GENERATORS.get("vllm")(dataclasses.replace(req, num_processes=2))
    assert not (tmp_path / "vllm-init").exists()
