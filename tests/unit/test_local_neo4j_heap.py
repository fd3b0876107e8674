"""``harness-g neo4j --heap-mb`` and ``LocalNeo4jConfig.heap_mb`` refuse a JVM heap that cannot work (issue 35
follow-up): below ``MIN_HEAP_MB`` (256 MiB), above this machine's memory (physical, or the cgroup limit when lower),
or not a whole number, in one line naming the flag or field and the allowed range, before any server or importer
starts. No JVM is started here: every refusal happens first (with ``java`` and ``mvn`` off PATH, a start would be
another error, naming them)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness_g.cli import main
from harness_g.errors import ConfigError
from harness_g.graph.stores import local_neo4j
from harness_g.graph.stores.local_neo4j import MIN_HEAP_MB, LocalNeo4jConfig, check_heap_mb, machine_memory_mb


def _physical_mb() -> int:
    """MemTotal of /proc/meminfo in MiB (the kernel's count, read independently of ``machine_memory_mb``)."""
    kib = int(re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M).group(1))
    return kib >> 10


def test_machine_memory_is_the_physical_memory_or_a_lower_cgroup_limit(tmp_path: Path, monkeypatch) -> None:
    limit = tmp_path / "memory.max"
    monkeypatch.setattr(local_neo4j, "_CGROUP_MEMORY_LIMITS", (str(limit),))
    limit.write_text("max\n")  # cgroup v2 without a limit
    physical = machine_memory_mb()
    assert physical is not None and abs(physical - _physical_mb()) <= 64  # MemTotal excludes the kernel's reserve
    limit.write_text(f"{2048 << 20}\n")
    assert machine_memory_mb() == 2048
    limit.write_text(f"{(physical + 4096) << 20}\n")  # a limit above the machine: the machine
    assert machine_memory_mb() == physical


@pytest.mark.parametrize("value", [0, -512, MIN_HEAP_MB - 1, 10**9])
def test_cli_refuses_a_heap_that_cannot_work_before_starting_anything(value: int, tmp_path: Path, monkeypatch,
                                                                       capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no mvn: a start would fail naming them instead
    for argv in (["neo4j", "--heap-mb", str(value)], ["neo4j", "--heap-mb", str(value), "--bulk-load", str(tmp_path)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""  # not even "neo4j: starting"
        assert err.count("\n") == 1
        allowed = f"{MIN_HEAP_MB} to {machine_memory_mb()} MiB (this machine's memory)"
        assert f"harness-g: error: --heap-mb must be {allowed}; got {value}" in err


def test_the_range_bounds_are_allowed() -> None:
    memory = machine_memory_mb()
    assert memory is not None and memory > 1024
    assert check_heap_mb(MIN_HEAP_MB) == MIN_HEAP_MB and check_heap_mb(memory) == memory
    assert LocalNeo4jConfig().heap_mb == 1024 and LocalNeo4jConfig(heap_mb=MIN_HEAP_MB).heap_mb == MIN_HEAP_MB
    with pytest.raises(ConfigError, match=rf"--heap-mb must be {MIN_HEAP_MB} to {memory} MiB.*got {memory + 1}$"):
        check_heap_mb(memory + 1)


@pytest.mark.parametrize("value", [0, MIN_HEAP_MB - 1, 10**9, 1024.0, "1024", True, None])
def test_a_python_caller_s_config_is_checked_at_construction(value: object) -> None:
    with pytest.raises(ConfigError, match=rf"^LocalNeo4jConfig\.heap_mb must be .*{MIN_HEAP_MB}.* MiB.*; got "):
        LocalNeo4jConfig(heap_mb=value)  # type: ignore[arg-type]


def test_without_a_readable_memory_only_the_lower_bound_holds(monkeypatch) -> None:
    monkeypatch.setattr(local_neo4j, "machine_memory_mb", lambda: None)  # a platform without sysconf or cgroup files
    assert check_heap_mb(10**6) == 10**6
    with pytest.raises(ConfigError, match=rf"^--heap-mb must be at least {MIN_HEAP_MB} MiB; got 100$"):
        check_heap_mb(100)
