"""The ops of a saved Paddle inference program, read as data (no Paddle), and the passes that fold
its quantize/dequantize pairs on the CPU. Standard library only: devkit imports it (the settings'
default QDQ folding, verify --infer's op counts) and the Paddle payloads do."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

QDQ_OPS = ("quantize_linear", "dequantize_linear")
# The CPU's QDQ folding (Paddle 3.3.1's first CPU passes; the generated runtime's default list)
QDQ_FOLDING = (
    "add_shadow_output_after_dead_parameter_pass",
    "delete_quant_dequant_linear_op_pass",
    "delete_weight_dequant_linear_op_pass",
)


def program_ops(program: Path) -> list[dict[str, Any]]:
    """The ops of a saved PIR program (.json, Paddle 3.x), those in an op's own regions (an if's
    branches) too, read as JSON (however it is laid out): program.regions[].blocks[].ops[], each op
    named by its "#" ("1.conv2d": dialect 1's conv2d). ValueError: the file is no such program."""
    try:
        saved = json.loads(program.read_bytes())
    except ValueError as exc:  # (UnicodeDecodeError is one)
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("program"), dict):
        raise ValueError('not a PIR program (no "program" object)')
    ops: list[dict[str, Any]] = []
    _collect_ops(saved["program"].get("regions"), ops)
    return ops


def _collect_ops(regions: Any, ops: list[dict[str, Any]]) -> None:
    if not isinstance(regions, list):
        raise ValueError('not a PIR program (a "regions" that is not a list)')
    for region in regions:
        blocks = region.get("blocks") if isinstance(region, dict) else None
        if not isinstance(blocks, list):
            raise ValueError('not a PIR program (a region without its "blocks")')
        for block in blocks:
            block_ops = block.get("ops") if isinstance(block, dict) else None
            if not isinstance(block_ops, list):
                raise ValueError('not a PIR program (a block without its "ops")')
            for op in block_ops:
                if not isinstance(op, dict) or not isinstance(op.get("#"), str):
                    raise ValueError('not a PIR program (an op without its "#" name)')
                ops.append(op)
                _collect_ops(op.get("regions", []), ops)


def op_name(op: dict[str, Any]) -> str:
    """An op's name without its dialect: "1.conv2d" -> conv2d ("p", a parameter, stays p)."""
    return str(op["#"]).rpartition(".")[2]


def op_counts(program: Path) -> dict[str, int]:
    """The ops of a saved PIR program (.json), by name. ValueError: the file is no such program."""
    counts: dict[str, int] = {}
    for op in program_ops(program):
        counts[op_name(op)] = counts.get(op_name(op), 0) + 1
    return counts


def qdq_counts(program: Path) -> dict[str, int]:
    """quantize_linear / dequantize_linear ops in a saved program (.json or .pdmodel)."""
    if program.suffix == ".json":
        found = op_counts(program)
        return {name: found.get(name, 0) for name in QDQ_OPS}
    text = program.read_bytes().decode("latin-1")  # a ProgramDesc: op types are plain strings in the protobuf
    return {name: len(re.findall(rf"(?<![a-z_]){name}(?![a-z_])", text)) for name in QDQ_OPS}
