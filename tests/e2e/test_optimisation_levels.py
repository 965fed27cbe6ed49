"""Optimisation levels of the Paddle build, read from the session's built project (no build of its
own): the device library's ops at -O3 and its runtime at -O1 in a unit of its own; the int8
engine's pass and op registration at -O1, its runtime at -O3. What each unit was compiled with is
the last -O of its command in compile_commands.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def effective_levels(build: Path) -> dict[str, int]:
    """Each compiled file (relative to the build tree) and the -O level its command ends with."""
    levels = {}
    for entry in json.loads((build / "compile_commands.json").read_text()):
        flags = re.findall(r"(?:^|\s)-O(\d)\b", entry["command"])
        source = Path(entry["file"])
        levels[str(source.relative_to(build) if source.is_relative_to(build) else source)] = int(flags[-1])
    return levels


def included(unit: Path) -> set[str]:
    return {Path(name).name for name in re.findall(r'#include "([^"]+)"', unit.read_text())}


def test_ops_at_O3_runtime_and_cold_engine_units_at_O1(built_project: Path) -> None:
    build = built_project / "build" / "py3-none-linux_x86_64"
    levels = effective_levels(build)
    device = {name: level for name, level in levels.items() if name.startswith("device/")}
    runtime = {name for name, level in device.items() if level == 1}
    assert runtime == {"device/runtime_unit/runtime.cc"}, device
    assert {"streams.cc", "memory.cc", "op_patterns.cc"} <= included(build / "device/runtime_unit/runtime.cc")
    ops = [build / name for name, level in device.items() if level == 3]
    compiled_at_O3 = set().union(*(included(unit) for unit in ops))
    assert {"matmul_ops.cc", "conv_pool_ops.cc", "quant_ops.cc", "core.cc"} <= compiled_at_O3
    assert not compiled_at_O3 & included(build / "device/runtime_unit/runtime.cc")
    engine = {Path(name).name: level for name, level in levels.items() if "/engine_units/" in name}
    assert engine == {"int8_engine.cc": 3, "int8_engine_op.cc": 1, "int8_engine_pass.cc": 1}
