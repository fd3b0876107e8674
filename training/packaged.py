"""The training configs shipped inside the package (``training/configs/``), addressable by name from any directory.

``harness-g train --config tiny-cpu`` reads ``<package>/training/configs/tiny-cpu.yaml``; a path that exists is read
as a path first, so a user's own ``tiny-cpu.yaml`` in the working directory wins over the packaged one only when it
is named as a file (``./tiny-cpu.yaml``). ``harness-g configs`` lists them; ``harness-g configs --path NAME`` prints
one file's path (for ``accelerate launch --config_file``, or to copy and edit). The packaged configs write nothing
beside themselves: their graph is built under the run's ``--out`` (``data.graph_dir`` left empty) and their inputs are
package data (``harness_g/examples/``).
"""
from __future__ import annotations

from pathlib import Path

from harness_g.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def packaged_configs() -> dict[str, Path]:
    """Every packaged config by name: ``tiny-cpu`` (training), ``accelerate/ddp`` (Accelerate launcher), ..."""
    return {str(p.relative_to(CONFIG_DIR).with_suffix("")): p for p in sorted(CONFIG_DIR.rglob("*.yaml"))}


def resolve_config(text: str | Path | None, flag: str = "--config") -> str | Path | None:
    """``text`` as given when it is an existing path (or None); else the packaged config it names (``tiny-cpu``,
    ``tiny-cpu.yaml``, ``accelerate/ddp``); else ``text`` again when it looks like a path (a ``/`` or a YAML suffix:
    the loader's "cannot read config" names it); else a one-line ConfigError naming the packaged configs."""
    if text is None or Path(text).exists():
        return text
    name = str(text)
    name = name[: -len(".yaml")] if name.endswith(".yaml") else name
    found = packaged_configs().get(name)
    if found is not None:
        return found
    if "/" in str(text) or str(text).endswith((".yaml", ".yml")):  # a path: the loader names the file it cannot read
        return text
    raise ConfigError(f"{flag} {text}: no such file, and no packaged config of that name (packaged: "
                      f"{', '.join(packaged_configs())}; `harness-g configs` lists their paths)")
