"""One small name -> object registry, used for every pluggable part.

Estimators, credit schemes, policies, LLM interfaces and rollout generators each own one
:class:`Registry`. It refuses a second registration under a taken name and names the valid
choices when a lookup fails, so a typo in ``--policy`` or a config file is a one-line error.
CLI ``choices=`` and config validation read :meth:`Registry.names`.

    POLICIES = Registry("policy")

    @POLICIES.register("heuristic")
    def _heuristic(**kw): ...

    POLICIES.get("heuristic")      # the factory
    POLICIES.get("heurstic")       # ConfigError: unknown policy 'heurstic'; valid: heuristic, ...
"""
from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

from harness_g.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects of one kind (``kind`` names it in errors, e.g. ``"policy"``)."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@REG.register("name")`` stores the decorated object and returns it unchanged."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        """Store ``obj`` under ``name``; a name already taken is refused (no silent override)."""
        if not name or not isinstance(name, str):
            raise ConfigError(f"{self.kind} name must be a non-empty string (got {name!r})")
        if name in self._items:
            raise ConfigError(f"{self.kind} {name!r} is already registered (to {self._items[name]!r})")
        self._items[name] = obj

    def get(self, name: str) -> T:
        """The object registered as ``name``; ConfigError listing the valid names otherwise."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown {self.kind} {name!r}; valid: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        """Registered names, sorted (what CLI ``choices=`` and config validation use)."""
        return sorted(self._items)

    def check(self, name: str, *, field: str | None = None) -> str:
        """Return ``name`` if registered, else ConfigError naming ``field`` (for config validation)."""
        if name not in self._items:
            where = f"{field}: " if field else ""
            raise ConfigError(f"{where}unknown {self.kind} {name!r}; valid: {', '.join(self.names())}")
        return name

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"
