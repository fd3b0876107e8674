"""What changed between the settings a run recorded and the settings it is resumed with.

``harness-g eval`` (``agent/eval/run.py``) and ``harness-g train`` (``training/resume.py``) both refuse a resume
whose settings differ from the recorded ones, listing every difference as ``key: old -> new``.
"""
from __future__ import annotations

from typing import Any, Collection, Mapping


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted keys: ``{"optim": {"lr": 1e-6}}`` -> ``{"optim.lr": 1e-6}``
    (an empty mapping stays a value, so ``{}`` -> ``{...}`` changes are seen)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def differences(old: Mapping[str, Any], new: Mapping[str, Any], *, allowed: Collection[str] = (),
                added: bool = False) -> list[str]:
    """``key: old -> new`` for every dotted setting whose value differs between ``old`` (recorded) and ``new``
    (the resumed run's), sorted by key, except the keys in ``allowed``. Keys only ``new`` has are compared when
    ``added`` (a missing side reads as None); otherwise they are not (a newer version added the setting: an older
    run cannot have differed in it)."""
    old_flat, new_flat = flatten(old), flatten(new)
    keys = set(old_flat) | (set(new_flat) if added else set())
    return [f"{k}: {old_flat.get(k)!r} -> {new_flat.get(k)!r}" for k in sorted(keys)
            if k not in allowed and old_flat.get(k) != new_flat.get(k)]
