"""The int8 engine fuzz's mutations: the quantized models it starts from, the attributes of their
engine ops it finds in the saved programs, and each mutated program it writes (engine_fuzz.py runs
them)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

from quant_program import op_name

INT_MAX = 2147483647

# The ops whose attributes the engine reads, by their name in a PIR program's JSON ("1.conv2d"):
# a concat's axis is its `full` operand's value, a pool2d's kernel its `full_int_array` operand's.
FUZZED_OPS = ("conv2d", "depthwise_conv2d", "matmul", "pool2d", "softmax", "concat", "flatten", "add")

SKIPPED_ATTRIBUTES = ("struct_name", "dtype", "place", "shape")  # (names, and the full's own output)

# what the value of a concat's `full` and of a pool2d's `full_int_array` operand is called in a report
OPERAND_ATTRIBUTES = {"concat": "axis (its full operand)", "pool2d": "kernel_size (its full_int_array operand)"}


class Mutation(TypedDict):
    id: int
    model: str
    op: str  # e.g. "conv2d#0" (the op's position among the model's ops of its name)
    attribute: str  # or "input"
    change: str
    index: int  # the op's position in the program (-1: an input mutation)


def models() -> dict[str, tuple[Callable[[Any], Any], list[int]]]:
    """The fuzzed models: name -> (builder given paddle, input shape)."""

    def convnet(paddle: Any) -> Any:
        nn = paddle.nn
        return nn.Sequential(
            nn.Conv2D(3, 8, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(8, 8, 3, padding=1, groups=8),
            nn.AvgPool2D(2, 2),
            nn.Flatten(),
            nn.Linear(32, 10),
            nn.Softmax(),
        )

    def operands(concat: bool) -> Callable[[Any], Any]:
        def build(paddle: Any) -> Any:
            import quant_engine

            return quant_engine.two_operands(paddle, concat)

        return build

    return {
        "convnet": (convnet, [1, 3, 17, 17]),
        "add": (operands(False), [1, 8, 6, 6]),
        "concat": (operands(True), [1, 8, 6, 6]),
    }


def save_models(directory: Path) -> None:
    import paddle
    from paddle.static import InputSpec
    from quant_model import quantized

    for n, (name, (build, shape)) in enumerate(models().items()):
        if (directory / f"{name}.json").exists():
            continue
        paddle.set_device("cpu")
        paddle.seed(31 + n)
        qdq = quantized(build(paddle), shape, True)
        paddle.jit.save(qdq, str(directory / name), input_spec=[InputSpec(shape, "float32", "x")])


def ops_of(program: dict[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = program["program"]["regions"][0]["blocks"][0]["ops"]
    return ops


def value_ids(op: dict[str, Any], key: str) -> list[int]:
    return [v["%"] for v in op.get(key, []) if isinstance(v, dict) and "%" in v]


def variants(at: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """The mutations of one attribute value (a PIR JSON {"#": type, "D": data}), most telling first;
    None: the attribute removed."""
    kind, data = at["#"], at["D"]
    if kind == "0.a_array":
        n = max(len(data), 2)
        element = data[0]["#"] if data else "0.a_i32"
        first = data[0]["D"] if data else 1

        def ints(values: list[Any], of: str = element) -> dict[str, Any]:
            return {"#": "0.a_array", "D": [{"#": of, "D": v} for v in values]}

        return [
            ("empty", ints([])),
            ("zeros", ints([0] * n)),
            ("string elements", ints(["1"] * n, "0.a_str")),
            ("negative", ints([-1] * n)),
            ("one element", ints([first])),
            ("three elements", ints([first] * 3)),
            ("huge", ints([INT_MAX] * n)),
            ("a scalar", {"#": element, "D": first}),
            ("missing", None),
        ]
    if kind in ("0.a_i32", "0.a_i64"):
        return [
            ("a string", {"#": "0.a_str", "D": str(data)}),
            ("zero", {"#": kind, "D": 0}),
            ("negative", {"#": kind, "D": -5}),
            ("huge", {"#": kind, "D": INT_MAX}),
            ("an array", {"#": "0.a_array", "D": [{"#": kind, "D": data}]}),
            ("missing", None),
        ]
    if kind in ("0.a_f64", "0.a_f32"):
        return [
            ("huge", {"#": kind, "D": 1e9}),
            ("negative", {"#": kind, "D": -7.0}),
            ("a fraction", {"#": kind, "D": 0.5}),
        ]
    if kind == "0.a_str":
        return [("unknown", {"#": kind, "D": "BOGUS"}), ("an int", {"#": "0.a_i32", "D": 1}), ("missing", None)]
    if kind == "0.a_bool":
        return [("an int", {"#": "0.a_i32", "D": 1}), ("a string", {"#": "0.a_str", "D": "true"}), ("missing", None)]
    return []


def fuzzed_attributes(ops: list[dict[str, Any]]) -> Iterator[tuple[int, str, str, dict[str, Any]]]:
    """(op index, op label, attribute name, value) of every attribute the engine reads: the fuzzed
    ops' own, a concat's axis (its full's value) and a pool2d's kernel (its full_int_array's)."""
    producers = {v: i for i, op in enumerate(ops) for v in value_ids(op, "O")}
    seen: dict[str, int] = {}
    for i, op in enumerate(ops):
        name = op_name(op)
        if name not in FUZZED_OPS:
            continue
        label = f"{name}#{seen.get(name, 0)}"
        seen[name] = seen.get(name, 0) + 1
        for attribute in op.get("A", []):
            if attribute["N"] not in SKIPPED_ATTRIBUTES:
                yield i, label, attribute["N"], attribute["AT"]
        operands = value_ids(op, "I")
        if name in ("concat", "pool2d") and len(operands) > 1 and operands[1] in producers:
            feeder = producers[operands[1]]
            for attribute in ops[feeder].get("A", []):
                if attribute["N"] == "value":
                    yield feeder, label, OPERAND_ATTRIBUTES[name], attribute["AT"]


def input_changes(shape: list[int]) -> list[tuple[str, list[int]]]:
    """The model's own input (what the engine must run: the baseline), then inputs its program
    refuses: other channels, one rank less, one more."""
    return [
        ("unchanged", shape),
        ("channels doubled", [shape[0], shape[1] * 2, *shape[2:]]),
        ("one rank less", shape[:-1]),
        ("one rank more", [*shape, 1]),
    ]


def plan(directory: Path, budget: int, seed: int, cases: list[list[str]] | None = None) -> list[Mutation]:
    """The mutations to run: the input changes, then every fuzzed attribute's first variant, then
    each one's second and so on (rotated by `seed`), until `budget` (0: all of them); with `cases`
    ([model, op, attribute, change] each), those alone, in that order."""
    found: list[Mutation] = []
    rounds: list[list[Mutation]] = []
    for model, (_, shape) in models().items():
        for change, _ in input_changes(shape):
            found.append({"id": 0, "model": model, "op": "data", "attribute": "input", "change": change, "index": -1})
        ops = ops_of(json.loads((directory / f"{model}.json").read_text()))
        for index, label, attribute, at in fuzzed_attributes(ops):
            choices = variants(at)
            for r, (change, _) in enumerate(
                choices[seed % len(choices) :] + choices[: seed % len(choices)] if choices else []
            ):
                while len(rounds) <= r:
                    rounds.append([])
                rounds[r].append(
                    {"id": 0, "model": model, "op": label, "attribute": attribute, "change": change, "index": index}
                )
    for mutations in rounds:
        found.extend(mutations)
    if cases is not None:
        named = {(m["model"], m["op"], m["attribute"], m["change"]): m for m in found}
        unknown = [case for case in cases if tuple(case) not in named]
        if unknown:
            raise SystemExit(f"no such mutations: {unknown}")
        found = [named[(model, op, attribute, change)] for model, op, attribute, change in cases]
    elif budget:
        found = found[:budget]
    for n, m in enumerate(found):
        m["id"] = n
    return found


def mutated_program(directory: Path, m: Mutation) -> str:
    program = json.loads((directory / f"{m['model']}.json").read_text())
    if m["index"] < 0:
        return json.dumps(program)
    op = ops_of(program)[m["index"]]
    for n, attribute in enumerate(op["A"]):
        if attribute["N"] == ("value" if m["attribute"] in OPERAND_ATTRIBUTES.values() else m["attribute"]):
            new = dict(variants(attribute["AT"]))[m["change"]]
            if new is None:
                del op["A"][n]
            else:
                attribute["AT"] = copy.deepcopy(new)
            break
    return json.dumps(program)
