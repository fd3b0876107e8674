"""One config path for every command: typed dataclass configs from YAML and ``--set key=value``.

A config is a frozen dataclass deriving :class:`Config`; every field is declared with :func:`config_field`
(default, help text, and the checks it declares: ``ge``/``gt``/``le``/``lt`` bounds, ``choices``); a field whose
type is a dataclass is a section. The same functions serve ``harness-g build`` (BuildConfig), ``eval``/``ask``/
``menu``/``browse`` (EnvConfig, EvalConfig) and ``train`` (TrainConfig):

- :func:`load` reads a YAML file (errors name the file), applies dotted ``--set`` overrides (they win over the
  file) and builds the dataclass with :func:`from_mapping`;
- :func:`from_mapping` parses every value by its field's declared type (int, float, bool, str, ``X | None``,
  list, dict, ``tuple[str, ...]``, nested sections), checks its declared range or choices, and refuses unknown
  keys listing the known ones; every error is one line naming the field, e.g. ``optim.lr: expected float, got 'abc'``;
- :func:`to_dict` / :func:`dump` write the complete resolved config (YAML), which :func:`load` reads back equal;
- :func:`describe` renders ``field: value  # [source] help`` lines for ``--show-config``.

Presets (:data:`PRESETS`): a config class may declare ``PRESETS = {preset name: {field: value}}``, a named table of
field defaults, and a ``preset`` field (:func:`preset_field`) naming the one it uses. Each field the table governs
is declared with :data:`FROM_PRESET` as its default and takes the preset's value unless a value is given: defaults <
the preset < the config file < ``--set`` (an explicit value always beats the preset), in direct construction too
(``EnvConfig(preset="extended", visible_cap=4)``). A ``dict`` field declared with ``preset_of=SomeConfig`` (a train
config's ``data.build``) is filled with ``SomeConfig``'s row of the enclosing preset for the keys it does not give.

Inherited keys (:func:`inherit_field`): a section may take some of its fields from other fields of the config that
holds it -- a train config's ``rollout.env`` (an :class:`EnvConfig` section) takes ``preset`` from the top-level
``preset`` and ``max_turns`` from ``rollout.max_turns``. Such a key given with another value is refused naming what to
set instead, with the same value accepted; :func:`to_dict` and :func:`dump` leave them out (their sources hold them).
:func:`sources` says where each resolved value came from (``preset paper``, ``set``, ``default``); ``describe`` and
``dump`` write it next to every value.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import field, fields
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, TypeVar, get_type_hints

import yaml

from harness_g.errors import ConfigError

C = TypeVar("C")

#: metadata keys of :func:`config_field` that are checks on the value (the others describe the field)
CHECKS = ("ge", "gt", "le", "lt", "choices")

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_NULL = frozenset({"null", "none", "~", ""})

#: the presets every preset-aware config knows: ``paper`` = every rule as harness-g.tex defines it (the default),
#: ``extended`` = the project's measured improvements on top (README "Presets and extensions")
PRESETS = ("paper", "extended")
DEFAULT_PRESET = "paper"


class _FromPreset:
    """Default of a field a preset governs: replaced by the preset's value on construction."""

    def __repr__(self) -> str:
        return "<from preset>"

    def __reduce__(self) -> str:  # one object, also through copy/pickle
        return "FROM_PRESET"


#: the default of every field a preset table governs (see the module docstring)
FROM_PRESET: Any = _FromPreset()


def config_field(default: Any, help: str, **meta: Any) -> Any:
    """A dataclass field with help text. ``meta``: checks (``ge``/``gt``/``le``/``lt`` bounds, ``choices``),
    ``path=True`` (a relative path written in a config file is relative to that file), ``parse`` (a function
    ``(value, dotted_name) -> value`` replacing the type-driven parsing), or any other documenting key (e.g. ``hash``)."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **meta})
    return field(default=default, metadata={"help": help, **meta})


def preset_field(help: str) -> Any:
    """The ``preset`` field of a preset-aware config: which row of the class's ``PRESETS`` fills its
    :data:`FROM_PRESET` fields (and the ``preset_of`` dicts below it); ``paper`` by default. Out of content hashes:
    the values it sets are what counts."""
    return config_field(DEFAULT_PRESET, help, choices=PRESETS, hash=False)


def inherit_field(factory: Callable[[], Any], help: str, inherits: Mapping[str, tuple[str, str]]) -> Any:
    """A section field (type: a config class, default ``factory()``) some of whose keys are copies of other fields:
    ``inherits`` maps each such key to (the dotted path of its source, from the config that can resolve it -- the
    top of a train config --, why it may not be set on the section)."""
    return field(default_factory=factory, metadata={"help": help, "inherits": dict(inherits)})


class Config:
    """Base of the typed configs: declared checks run on construction too, plus the shared in/out methods.

    ``CONFIG_NAME`` names the config in unknown-field errors (``unknown env config field(s): ...``)."""

    CONFIG_NAME: ClassVar[str] = ""
    #: preset name -> {field: value} for the :data:`FROM_PRESET` fields of this class (empty: no presets)
    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    def __post_init__(self) -> None:
        apply_preset(self)
        check_fields(self)

    @classmethod
    def from_preset(cls: type[C], preset: str = DEFAULT_PRESET, **values: Any) -> C:
        """The config of preset ``preset`` with ``values`` set explicitly (they beat the preset)."""
        return cls(preset=preset, **values)  # type: ignore[call-arg]

    def to_dict(self) -> dict[str, Any]:
        """Every field, sections as nested dicts, tuples as lists (YAML/JSON-safe)."""
        return to_dict(self)

    def save(self, path: str | Path) -> None:
        """Write the complete config as YAML (:func:`load` reads it back equal)."""
        dump(self, path)

    @classmethod
    def from_dict(cls: type[C], data: Any) -> C:
        """The config from a mapping, every value parsed and checked (see :func:`from_mapping`)."""
        return from_mapping(cls, data)


# -- presets -----------------------------------------------------------------------------------------------------
def preset_table(cls: type, preset: str, where: str = "preset") -> Mapping[str, Any]:
    """``cls.PRESETS[preset]``, or a ConfigError naming ``where`` and the presets there are."""
    table = getattr(cls, "PRESETS", {})
    if preset not in table:
        raise ConfigError(f"{where} {preset!r} unknown; available: {', '.join(table) or ', '.join(PRESETS)}")
    return table[preset]


def apply_preset(config: Any) -> None:
    """Fill ``config``'s :data:`FROM_PRESET` fields from the row of its ``preset`` and, below a config with a
    ``preset`` field, every ``preset_of`` dict of its sections with the keys the dict does not give (in place, during
    construction; a section is replaced by a filled copy, never changed under another owner)."""
    preset = getattr(config, "preset", None) or DEFAULT_PRESET
    for f in fields(config):
        if getattr(config, f.name) is FROM_PRESET:
            object.__setattr__(config, f.name, preset_table(type(config), preset)[f.name])
    if any(f.name == "preset" for f in fields(config)):
        for f in fields(config):
            value = getattr(config, f.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                object.__setattr__(config, f.name, _fill_preset_dicts(value, preset))
    _apply_inherits(config)


# -- inherited keys ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _inheriting_sections(cls: type, prefix: str = "") -> tuple[tuple[str, type, dict[str, tuple[str, str]]], ...]:
    """(dotted path, section class, its ``inherits``) of every :func:`inherit_field` section below ``cls`` (cached:
    every config construction asks)."""
    out: list[tuple[str, type, dict[str, tuple[str, str]]]] = []
    hints = get_type_hints(cls)
    for f in fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            if "inherits" in f.metadata:
                out.append((prefix + f.name, hints[f.name], f.metadata["inherits"]))
            out.extend(_inheriting_sections(hints[f.name], f"{prefix}{f.name}."))
    return tuple(out)


def _resolvable(cls: type, path: str) -> bool:
    """Whether every part of dotted ``path`` is a field of ``cls`` (and of the sections it walks through)."""
    hints = get_type_hints(cls)
    head, _, rest = path.partition(".")
    if head not in hints:
        return False
    return not rest or (dataclasses.is_dataclass(hints[head]) and _resolvable(hints[head], rest))


def _field_at(cls: type, path: str) -> tuple[Any, dataclasses.Field]:
    """(type hint, field) of the field at dotted ``path`` below ``cls``."""
    head, _, rest = path.partition(".")
    hints, known = get_type_hints(cls), {f.name: f for f in fields(cls)}
    return _field_at(hints[head], rest) if rest else (hints[head], known[head])


def _default_of(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return f.default


def _apply_inherits(config: Any) -> None:
    """Make each inheriting section below ``config`` (whose sources ``config`` can resolve) hold its sources' values,
    in place during construction: a section left at its defaults is rebuilt under an inherited preset; one holding
    values of its own under another preset is refused (a ConfigError naming both)."""
    for path, _, inherits in _inheriting_sections(type(config)):
        if not all(_resolvable(type(config), src) for src, _ in inherits.values()):
            continue  # an enclosing config resolves them
        wanted = {key: _get(config, src) for key, (src, _) in inherits.items()}
        section = _get(config, path)
        if all(getattr(section, k) == v for k, v in wanted.items()):
            continue
        if "preset" in wanted and section.preset != wanted["preset"]:
            own = [k for k, how in sources(section).items() if how == "set" and k not in wanted]
            if own:
                raise ConfigError(f"{path}.preset {section.preset!r} and {inherits['preset'][0]} {wanted['preset']!r} "
                                  f"disagree ({path} sets {', '.join(own)}): build {path} under {wanted['preset']!r}")
            section = type(section)(**wanted)
        else:
            section = dataclasses.replace(section, **wanted)
        _set(config, path, section)


def _get(config: Any, path: str) -> Any:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def _set(config: Any, path: str, value: Any) -> None:
    """Set dotted ``path`` of a frozen config: the last section is changed in place if it is ``config``, else the
    sections on the way are replaced by copies."""
    head, _, rest = path.partition(".")
    if rest:
        inner = dataclasses.replace(getattr(config, head))
        _set(inner, rest, value)
        value = inner
    object.__setattr__(config, head, value)


def _inherit_in_mapping(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a root mapping of ``cls``) with each inherited key of a section set to its source's value (given or
    the source's default); a key the mapping gives with another value is a ConfigError ``PATH.KEY: why``."""
    for path, section_cls, inherits in _inheriting_sections(cls):
        if not all(_resolvable(cls, src) for src, _ in inherits.values()):
            continue
        section = _mapping_at(data, path)
        if section is None:
            continue
        hints = get_type_hints(section_cls)
        for key, (src, why) in inherits.items():
            hint, f = _field_at(cls, src)
            raw = _lookup(data, src)
            value = _default_of(f) if raw is _ABSENT else parse_value(raw, hint, src)
            check_value(src, value, f.metadata)  # the source's own error first (``preset 'x' unknown``)
            if key in section and parse_value(section[key], hints[key], f"{path}.{key}") != value:
                raise ConfigError(f"{path}.{key}: {why}")
            section[key] = value
    return data


_ABSENT = object()


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _mapping_at(data: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The mapping at dotted ``path`` of ``data``, copied on the way so the caller's mapping is not changed, created
    when absent; None when something else (not a mapping) is there (:func:`from_mapping` then names it). A section
    given as YAML text (``--set rollout.env='{a: 1}'``) is read first."""
    node = data
    for part in path.split("."):
        value = node.get(part)
        if isinstance(value, str):
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError:
                return None
        if value is None:
            value = {}
        if not isinstance(value, dict):
            return None
        node[part] = dict(value)
        node = node[part]
    return node


def _fill_preset_dicts(section: Any, preset: str) -> Any:
    """``section`` with each ``preset_of`` dict (a train config's ``data.build``) completed from ``preset``'s row of
    that class (the dict's own keys win; ``preset_skip`` keys are left out); nested sections likewise."""
    changes: dict[str, Any] = {}
    for f in fields(section):
        value = getattr(section, f.name)
        if "preset_of" in f.metadata and isinstance(value, dict):
            row = preset_table(f.metadata["preset_of"], preset, f"{f.name}: preset")
            skip = set(f.metadata.get("preset_skip", ()))
            filled = {**{k: v for k, v in row.items() if k not in skip}, **value}
            if filled != value:
                changes[f.name] = filled
        elif dataclasses.is_dataclass(value) and not isinstance(value, type) and not hasattr(value, "preset"):
            inner = _fill_preset_dicts(value, preset)
            if inner is not value:
                changes[f.name] = inner
    return dataclasses.replace(section, **changes) if changes else section


def sources(config: Any, preset: str | None = None, prefix: str = "") -> dict[str, str]:
    """Where each resolved value came from, by dotted field: ``preset NAME`` (the value of the preset's row),
    ``set`` (given explicitly: file, ``--set``, a flag or a keyword, and unlike the preset's row or the default) or
    ``default`` (a field no preset governs, at its class default). Derived from the values, so it also holds for a
    config read back from a file or a manifest."""
    preset = getattr(config, "preset", None) or preset or DEFAULT_PRESET
    out: dict[str, str] = {}
    hints = get_type_hints(type(config))
    for f in fields(config):
        name, value = prefix + f.name, getattr(config, f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            out.update(sources(value, preset, name + "."))
            out.update({f"{name}.{key}": f"from {src}" for key, (src, _) in f.metadata.get("inherits", {}).items()})
        elif "preset_of" in f.metadata and isinstance(value, dict):
            row = getattr(f.metadata["preset_of"], "PRESETS", {}).get(preset, {})
            for key, item in value.items():
                out[f"{name}.{key}"] = f"preset {preset}" if key in row and row[key] == item else "set"
        else:
            out[name] = field_source(type(config), f, value, preset)
    return out


def field_source(cls: type, f: dataclasses.Field, value: Any, preset: str | None) -> str:
    """:func:`sources` for one field of ``cls``."""
    table = getattr(cls, "PRESETS", {})
    if f.default is FROM_PRESET:
        row = table.get(preset or DEFAULT_PRESET, {})
        return f"preset {preset or DEFAULT_PRESET}" if f.name in row and row[f.name] == value else "set"
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        default = f.default_factory()  # type: ignore[misc]
    else:
        return "set"
    if isinstance(default, tuple) and isinstance(value, list):
        value = tuple(value)
    return "default" if value == default else "set"


# -- values ------------------------------------------------------------------------------------------------------
def type_name(hint: Any) -> str:
    """``int``, ``float or null``, ``tuple``: how an error names the expected type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(type_name(a) for a in inner) + (" or null" if len(inner) < len(args) else "")
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(hint, "__name__", str(hint))


def _bad(name: str, hint: Any, value: Any) -> ConfigError:
    return ConfigError(f"{name}: expected {type_name(hint)}, got {value!r}")


def _parse_union(value: Any, hint: Any, name: str) -> Any:
    args = typing.get_args(hint)
    inner = [a for a in args if a is not type(None)]
    nullable = len(inner) < len(args)
    if value is None or (nullable and isinstance(value, str) and value.strip().lower() in _NULL):
        if not nullable:
            raise _bad(name, hint, value)
        return None
    for candidate in inner:
        try:
            return parse_value(value, candidate, name)
        except ConfigError:
            continue
    raise _bad(name, hint, value)


def _parse_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{name}: expected bool (true/false, yes/no, 1/0), got {value!r}")


def _parse_int(value: Any, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = math.nan
    if isinstance(value, float):
        number = value
    elif isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                pass
    if math.isfinite(number) and number.is_integer():  # 4.0 or "1e3": a whole number written as a float
        return int(number)
    raise _bad(name, int, value)


def _parse_float(value: Any, name: str) -> float:
    number = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            pass
    if not math.isfinite(number):
        raise _bad(name, float, value)
    return number


def _parse_str(value: Any, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):  # e.g. a directory called 2024
        return str(value)
    raise _bad(name, str, value)


def _parse_container(value: Any, hint: Any, name: str) -> Any:
    """``list``/``dict``/``tuple[...]``/``list[...]``; a string (``--set key='[a, b]'``) is read as YAML first."""
    origin = typing.get_origin(hint) or hint
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            raise _bad(name, hint, value) from None
    if origin is dict:
        value = {} if value is None else value
        if not isinstance(value, dict):
            raise _bad(name, hint, value)
        return value
    if not isinstance(value, (list, tuple)):
        raise _bad(name, hint, value)
    args = [a for a in typing.get_args(hint) if a is not Ellipsis]
    items = [parse_value(v, args[0], f"{name}[{i}]") for i, v in enumerate(value)] if len(args) == 1 else list(value)
    return tuple(items) if origin is tuple else items


def parse_value(value: Any, hint: Any, name: str) -> Any:
    """``value`` as the type ``hint`` declares (strings - from ``--set`` or quoted YAML - are parsed), or a
    :class:`ConfigError` ``NAME: expected TYPE, got VALUE``. Booleans take true/false/yes/no/on/off/1/0 only."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _parse_union(value, hint, name)
    if dataclasses.is_dataclass(hint):
        return from_mapping(hint, {} if value is None else value, name)
    simple = {bool: _parse_bool, int: _parse_int, float: _parse_float, str: _parse_str}
    if hint in simple:
        return simple[hint](value, name)
    if (origin or hint) in (list, dict, tuple):
        return _parse_container(value, hint, name)
    return value


def check_value(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    """The checks a field declares (``choices``, ``ge``/``gt``/``le``/``lt``); None passes (nullable fields)."""
    if value is None:
        return
    if getattr(meta.get("choices"), "lookup", None) is not None:  # a RegistryNames with a lookup: its own error
        meta["choices"].check(value)
    elif "choices" in meta and value not in meta["choices"]:
        raise ConfigError(f"{name} {value!r} unknown; available: {', '.join(str(c) for c in meta['choices'])}")
    for key, ok, text in (("ge", lambda v, b: v >= b, ">="), ("gt", lambda v, b: v > b, ">"),
                          ("le", lambda v, b: v <= b, "<="), ("lt", lambda v, b: v < b, "<")):
        if key in meta and not ok(value, meta[key]):
            raise ConfigError(f"{name}: must be {text} {meta[key]}, got {value!r}")


def check_fields(config: Any) -> None:
    """Run every field's declared checks on a constructed config (direct construction is checked too)."""
    for f in fields(config):
        check_value(f.name, getattr(config, f.name), f.metadata)


# -- mappings ----------------------------------------------------------------------------------------------------
def unknown_fields(cls: type, unknown: list[str], known: list[str], section: str = "") -> ConfigError:
    """``SECTION: unknown LABEL field(s): a, b; known: ...`` (LABEL: the class's ``CONFIG_NAME``)."""
    label = getattr(cls, "CONFIG_NAME", "")
    return ConfigError(f"{section + ': ' if section else ''}unknown {label + ' ' if label else ''}field(s): "
                       f"{', '.join(unknown)}; known: {', '.join(known)}")


def from_mapping(cls: type[C], data: Any, section: str = "", *, renamed: Mapping[str, str] | None = None) -> C:
    """``cls`` from a mapping, every value parsed by its field's type and checked. ``section``: the dotted path of
    this mapping ('' at the top); ``renamed``: dotted old name -> what to write instead (refused, never guessed)."""
    if isinstance(data, str):  # a whole section given as YAML text (``--set section='{a: 1}'``)
        try:
            data = yaml.safe_load(data)
        except yaml.YAMLError:
            pass
    if not isinstance(data, dict):
        raise ConfigError(f"{section or 'config'}: expected a mapping, got {type(data).__name__}")
    if not section:
        data = _inherit_in_mapping(cls, dict(data))
    hints, known = get_type_hints(cls), {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    dotted = {k: f"{section}.{k}" if section else str(k) for k in data}
    for full in dotted.values():
        if renamed and full in renamed:
            raise ConfigError(f"{full} was renamed: use {renamed[full]}")
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise unknown_fields(cls, unknown, list(known), section)
    kwargs = {}
    for key, value in data.items():
        meta, full = known[key].metadata, dotted[key]
        if dataclasses.is_dataclass(hints[key]):
            kwargs[key] = from_mapping(hints[key], {} if value is None else value, full, renamed=renamed)
            continue
        kwargs[key] = meta["parse"](value, full) if "parse" in meta else parse_value(value, hints[key], full)
        check_value(full, kwargs[key], meta)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{section or 'config'}: {exc}") from exc


def partial_mapping(cls: type, data: Any, name: str, refused: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Some of ``cls``'s fields as a dict (e.g. BuildConfig overrides inside a train config, ``data.build``), each
    value parsed by ``cls``'s type and checked; ``refused``: field -> why it may not be set here."""
    data = parse_value(data, dict, name)
    refused = refused or {}
    for key in data:
        if key in refused:
            raise ConfigError(f"{name}.{key}: {refused[key]}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ConfigError(f"{name}: unknown field(s) {', '.join(unknown)}; known: "
                          f"{', '.join(k for k in known if k not in refused)}")
    hints, out = get_type_hints(cls), {}
    for key, value in data.items():
        out[key] = parse_value(value, hints[key], f"{name}.{key}")
        check_value(f"{name}.{key}", out[key], known[key].metadata)
    return out


def parse_set(text: str) -> tuple[str, str]:
    """``--set key.path=value`` -> (key, the raw text): :func:`load` parses it by the field's declared type, so
    ``optim.lr=1e-6`` is a float and ``data.graph_dir=2024`` a path."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set expects key.path=value, got {text!r}")
    return key, raw


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any]) -> None:
    """Set dotted keys (``{'optim.lr': '1e-6'}``) in a nested mapping, in place; sections are created as needed."""
    for key, value in overrides.items():
        node, parts = data, key.split(".")
        for i, part in enumerate(parts[:-1]):
            if node.get(part) is None:  # absent, or an empty YAML section
                node[part] = {}
            node = node[part]
            if not isinstance(node, dict):
                raise ConfigError(f"cannot set {key}: {'.'.join(parts[: i + 1])} is not a section")
        node[parts[-1]] = value


def resolve_paths(cls: type, data: dict[str, Any], base: Path) -> None:
    """Rewrite the relative values of ``path=True`` fields (any section) as absolute paths under ``base``, in place:
    a path written in a config file is relative to that file, so the file works from any working directory."""
    hints = get_type_hints(cls)
    for f in fields(cls):
        value = data.get(f.name)
        if dataclasses.is_dataclass(hints[f.name]) and isinstance(value, dict):
            resolve_paths(hints[f.name], value, base)
        elif f.metadata.get("path") and isinstance(value, str) and value and not Path(value).is_absolute():
            data[f.name] = str((base / value).resolve())


# -- files -------------------------------------------------------------------------------------------------------
class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, again: int):
        super().__init__(f"key {key!r} is given twice (lines {first} and {again}); keep one")


class _StrictLoader(yaml.SafeLoader):
    """``yaml.safe_load`` that refuses a key given twice in one mapping (PyYAML keeps the last one silently);
    ``<<`` merge keys may still be overridden, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, typing.Hashable) and key in seen:
                raise _DuplicateKey(key, seen[key], line)
            if isinstance(key, typing.Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's mapping ({} when empty); errors name the file (and the key given twice, if one is)."""
    p = Path(path)
    try:
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=_StrictLoader) or {}
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config ({exc.strerror or exc})") from exc
    except _DuplicateKey as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{p}: malformed YAML (nested too deeply)") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: malformed YAML ({' '.join(str(exc).split())})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of fields, got {type(data).__name__}")
    return data


def load(cls: type[C], path: str | Path | None = None, overrides: Mapping[str, Any] | None = None, *,
         preset: str | None = None, prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
         renamed: Mapping[str, str] | None = None, validate: Callable[[C], None] | None = None) -> C:
    """``cls`` from a YAML file (missing fields take defaults, or their preset's values) with dotted ``overrides``
    applied on top (``--set`` wins over the file; string values are parsed by the field's type). ``preset``: the
    ``--preset`` flag, a shortcut for the override ``preset=NAME`` (an explicit ``preset`` override wins over it).
    ``prepare`` reshapes the file's mapping before the overrides; ``validate`` runs cross-field checks. Errors name
    the file when there is one."""
    if preset is not None:
        overrides = {"preset": preset, **(overrides or {})}
    data: dict[str, Any] = {}
    if path is not None:
        data = read_yaml(path)
        resolve_paths(cls, data, Path(path).resolve().parent)
    if prepare is not None:
        data = prepare(data)
    apply_overrides(data, overrides or {})
    try:
        config = from_mapping(cls, data, renamed=renamed)
        if validate is not None:
            validate(config)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}" if path is not None else str(exc)) from None
    return config


def to_dict(config: Any) -> dict[str, Any]:
    """A config as plain data: sections as dicts, tuples as lists (what :func:`dump` writes). Inherited keys are left
    out (recorded at their sources), so a written file loads again under another ``--preset`` or
    ``--set rollout.max_turns=N``."""
    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    out = plain(dataclasses.asdict(config))
    for path, _, inherits in _inheriting_sections(type(config)):
        if all(_resolvable(type(config), src) for src, _ in inherits.values()):
            section = _lookup(out, path)
            for key in inherits:
                section.pop(key, None)
    return out


def dump(config: Any, path: str | Path) -> None:
    """Write the complete resolved config as YAML, fields in declaration order, then each value's source
    (:func:`sources`) as comments, which :func:`load` ignores."""
    text = yaml.safe_dump(to_dict(config), sort_keys=False, allow_unicode=True)
    notes = "".join(f"#   {name}: {src}\n" for name, src in sources(config).items())
    Path(path).write_text(f"{text}# where each value came from (preset NAME / set / default):\n{notes}", encoding="utf-8")


def describe(config: Any, prefix: str = "", preset: str | None = None,
             inherits: Mapping[str, tuple[str, str]] | None = None) -> list[str]:
    """``field: value  # [source] help`` lines for every field (``--show-config``): the defaults when given the
    class, the resolved values when given a loaded config; sections are indented under their name, and so are the
    keys of a ``preset_of`` dict (each with its source). ``source``: see :func:`sources`."""
    if isinstance(config, type):
        config = config()
    out = []
    cls = type(config)
    preset = getattr(config, "preset", None) or preset
    hints = get_type_hints(cls)
    for f in fields(cls):
        help_text = f.metadata.get("help", "")
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            out.append(f"{prefix}{f.name}:  # {help_text}")
            out.extend(describe(value, prefix + "  ", preset, f.metadata.get("inherits")))
            continue
        if "preset_of" in f.metadata and isinstance(value, dict) and value:
            out.append(f"{prefix}{f.name}:  # {help_text}")
            found = sources(config, preset)
            helps = {g.name: g.metadata.get("help", "") for g in fields(f.metadata["preset_of"])}
            out.extend(f"{prefix}  {key}: {item!r}  # [{found[f'{f.name}.{key}']}] {helps.get(key, '')}".rstrip()
                       for key, item in value.items())
            continue
        inherited = (inherits or {}).get(f.name)
        source = f"from {inherited[0]}" if inherited else field_source(cls, f, value, preset)
        out.append(f"{prefix}{f.name}: {value!r}  # [{source}] {help_text}")
    return out
