"""One small name -> object registry, used for every pluggable part.

Estimators, credit schemes, policies, knowledge interfaces and rollout generators each own one
:class:`Registry`. It refuses a second registration under a taken name and names the available
choices when a lookup fails, so a typo in ``--policy`` or a config file is a one-line error.
CLI ``choices=`` and config validation read :meth:`Registry.names`.

    POLICIES = Registry("policy")

    @POLICIES.register("heuristic")
    def _heuristic(**kw): ...

    POLICIES.get("heuristic")      # the factory
    POLICIES.get("heurstic")       # ConfigError: unknown policy 'heurstic'; available: heuristic, ...
    POLICIES.names(lambda f: getattr(f, "llm", False))   # a named subset, derived rather than spelled again
"""
from __future__ import annotations

from typing import Any, Callable, Generic, Iterator, TypeVar

from harness_g.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects of one kind (``kind`` names it in errors, e.g. ``"policy"``).

    Iteration, ``len`` and ``in`` see the names; :meth:`names` is sorted so choices and error
    messages do not depend on import order.
    """

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

    def replace(self, name: str, obj: T) -> T:
        """Swap the object of an existing registration and return the previous one.

        The one deliberate override (test doubles, a plugin wrapping a built-in); an unknown
        ``name`` is refused, so a typo cannot create a new entry this way.
        """
        previous = self.get(name)
        self._items[name] = obj
        return previous

    def get(self, name: str) -> T:
        """The object registered as ``name``; ConfigError listing the available names otherwise."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}") from None

    def names(self, where: Callable[[T], bool] | None = None) -> list[str]:
        """Registered names, sorted (what CLI ``choices=`` and config validation use).

        ``where``: keep only names whose object satisfies it (e.g. the interfaces training can play).
        """
        return sorted(n for n, obj in self._items.items() if where is None or where(obj))

    def items(self) -> list[tuple[str, T]]:
        """``(name, object)`` pairs sorted by name (e.g. to print one help line per choice)."""
        return [(n, self._items[n]) for n in self.names()]

    def check(self, name: str, *, field: str | None = None, where: Callable[[T], bool] | None = None) -> str:
        """Return ``name`` if registered (and, with ``where``, in that subset), else ConfigError.

        For config validation: ``REG.check(value, field="optim.estimator")`` words the error as the config's own
        field checks do (``optim.estimator 'x' unknown; available: ...``); without ``field`` as :meth:`get` does.
        """
        choices = self.names(where)
        if not isinstance(name, str) or name not in choices:
            what = f"{field} {name!r} unknown" if field else f"unknown {self.kind} {name!r}"
            raise ConfigError(f"{what}; available: {', '.join(choices)}")
        return name

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"


class RegistryNames:
    """The names of a registry, looked up when first needed: a config field's ``choices``.

    ``target`` is ``"module:attribute"``: a :class:`Registry`, or a function returning names (a subset, e.g.
    ``"harness_g.agent.eval.interfaces:trainable_interfaces"``). Config modules declare their choices with it instead of
    spelling the names again, without importing the registry's module (often torch-heavy, or an import cycle) when the
    config module is imported.

    ``lookup`` (optional, ``"module:function"`` or ``"module:OBJECT.method"``): resolves a name or raises the
    registry's own one-line ConfigError (``"unknown policy 'x'; available: ..."``, an accepted alias passing); a
    field's check then calls it (:meth:`check`) instead of testing membership.
    """

    def __init__(self, target: str, lookup: str | None = None):
        self.target = target
        self.lookup = lookup

    def names(self) -> list[str]:
        found = _resolve(self.target)
        return found.names() if isinstance(found, Registry) else sorted(found())

    def check(self, name: object) -> None:
        """Raise the ``lookup``'s ConfigError when it does not resolve ``name`` (only with a ``lookup``)."""
        if self.lookup is not None:
            _resolve(self.lookup)(name)

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __repr__(self) -> str:
        return f"RegistryNames({self.target!r})"


def _resolve(target: str) -> Any:
    """The object ``"module:attribute[.attribute...]"`` names (the module imported now)."""
    import importlib

    module, _, path = target.partition(":")
    found: Any = importlib.import_module(module)
    for attribute in path.split("."):
        found = getattr(found, attribute)
    return found
