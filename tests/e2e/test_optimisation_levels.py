"""Optimisation levels of the Paddle build, read from the session's built project (no build of its
own): the device library's ops at -O3 and its runtime at -O1 in a unit of its own; the int8
engine's pass and op registration at -O1, its runtime at -O3; the Paddle kernels and runtime adapter
at -O1, with the precompiled header of Paddle's headers (the engine's units without). What each unit
was compiled with is the last -O of its command in compile_commands.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def compile_commands(build: Path) -> dict[str, str]:
    """Each compiled file (relative to the build tree) and its command."""
    commands = {}
    for entry in json.loads((build / "compile_commands.json").read_text()):
        source = Path(entry["file"])
        commands[str(source.relative_to(build) if source.is_relative_to(build) else source)] = entry["command"]
    return commands


def effective_levels(build: Path) -> dict[str, int]:
    """Each compiled file and the -O level its command ends with."""
    return {
        name: int(re.findall(r"(?:^|\s)-O(\d)\b", command)[-1]) for name, command in compile_commands(build).items()
    }


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


def test_paddle_kernels_at_O1_with_the_precompiled_paddle_headers(built_project: Path) -> None:
    commands = compile_commands(built_project / "build" / "py3-none-linux_x86_64")
    plugin = {
        name: command for name, command in commands.items() if re.match(r"paddle/CMakeFiles/[^/]*-stpu\.dir/", name)
    }
    kernels = {name for name in plugin if "/Unity/" in name}
    assert len(kernels) >= 2, sorted(plugin)
    for name in kernels:
        assert re.findall(r"(?:^|\s)-O(\d)\b", plugin[name])[-1] == "1", plugin[name]
        assert re.search(r"-include \S*cmake_pch\.hxx", plugin[name]), plugin[name]
    engine = [command for name, command in commands.items() if "/engine_units/" in name]
    assert engine and not any("cmake_pch" in command for command in engine)
