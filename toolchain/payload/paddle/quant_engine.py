"""Level 2 of `devkit verify --infer --quant int8`: the plugin's int8 engine (the generated
backend's engine/), run by paddle.inference with its pass first in the device's pass list.

The engine computes each quantized convolution and matmul in int8 arithmetic (int8 x int8 summed
in int32, rescaled once), and puts each other quantized activation (Paddle's PTQ observes the inputs
of batch norms, relus and pooling too) on its int8 grid, computing a relu or max pooling that alone
reads it on the integers (exact: both commute with the rounding), an average pooling as int32 sums
of the integers rescaled once, a softmax from a table of the exponentials of the integers'
differences, and a residual add or concat whose operands are quantized as their integers, each
rescaled once; the simulated-int8 reference (quant_model.simulate, Paddle's CPU kernels on the QDQ
model) computes the same in float32. So:
- one quantized layer alone must agree with the reference to 1 LSB of its output's int8 grid
  (max|reference| / 127) per element: the engine's sums are exact, the reference's are float32;
  so must each conv/fc layer of the model, fed the input the simulated model gave it;
- a whole model's output may differ by more: where the reference's rounding puts a value on the
  other side of a quantization tie, the next layer's integers differ by one and that carries on.
  A model must agree on top-1 with the simulated one (or pick a class the simulated output scores
  within TOP1_TIE_LSB of its top: a tie at int8 resolution) and on average within 1 LSB; and with
  the deployment (float) reference's top-1 unless the quantized model itself (the simulated
  reference) already picks another class there: that is the quantization's doing, not the engine's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from int8_compare import compare, top1_verdict
from quant_model import quantized
from quant_program import QDQ_FOLDING

ENGINE_OPS = ("conv2d", "depthwise_conv2d", "matmul")  # what the engine takes (with QDQ inputs)
# The int8 op list of the Rockchip NPU seed, in Paddle's op names, and why what the engine does not
# take stays float32 on the device.
SEED_OPS = {
    "conv2d": "",
    "depthwise_conv2d": "",
    "matmul": "",  # (fc)
    "pool2d": "float32 on the engine's int8-grid values where the engine does not take it (NHWC, SAME padding, "
    "a window size computed at run time)",
    "softmax": "float32 where its input is not a quantized activation alone (PTQ observes an nn.Softmax's input, "
    "not a functional softmax's)",
    "batch_norm": "float32 on the engine's int8-grid values (not folded into the convolution by Paddle 3.3.1's "
    "passes for a custom device)",
    "concat": "float32 where its operands are not each a quantized activation (PTQ puts no QDQ in front of "
    "a functional concat)",
    "add": "the bias of a conv/fc, added to the engine's float output; an add whose operands are not both quantized",
    "subtract": "PTQ puts no QDQ around it",
    "multiply": "PTQ puts no QDQ around it",
    "divide": "PTQ puts no QDQ around it",
    "transpose": "shape op: moves the engine's float output",
    "reshape": "shape op: moves the engine's float output",
    "flatten": "shape op: moves the engine's float output where no engine fc reads it",
    "sigmoid": "PTQ puts no QDQ around it",
    "scale": "PTQ puts no QDQ around it",
    "pad": "PTQ puts no QDQ around it",
    "relu": "float32 where its input is not an int8 activation alone",
}


# The engine's calls in the device library's op dump ({DEVICE}_DUMP_OP_ARGS=1: "[PREFIX] <kernel>: <op>"
# per device op), by the one call each engine op makes once per prediction (int8_engine.cc).
ENGINE_CALL = re.compile(r"^\[\w+\] (int8_engine\w*): (\w+)$", re.MULTILINE)
ENGINE_KINDS = {
    ("int8_engine", "conv2d_int8"): "conv2d",  # (depthwise ones too)
    ("int8_engine", "gemm_int8"): "matmul",
    ("int8_engine_activation", "dequantize_linear"): "activation",  # on its int8 grid, for a float op
    ("int8_engine_relu", "dequantize_linear"): "relu",  # ... with the relu that reads it, on the integers
    ("int8_engine_max_pool2d", "dequantize_linear"): "max_pool2d",  # ... with the max pooling
    ("int8_engine_avg_pool2d", "avg_pool2d_int8"): "avg_pool2d",  # ... with the average pooling (int32 sums)
    ("int8_engine_add", "add_int8"): "add",  # a residual add of two quantized operands
    ("int8_engine_softmax", "softmax_int8"): "softmax",  # ... with the softmax (a table of exponentials)
    ("int8_engine_concat", "concat_int8"): "concat",  # a concat of quantized operands
}
# The program's ops an engine activation of a kind takes with it.
ACTIVATION_OPS = {"relu": "relu", "max_pool2d": "pool2d", "avg_pool2d": "pool2d", "softmax": "softmax"}


def engine_ops(log: str) -> dict[str, int]:
    """What one prediction ran in the engine, by kind, from the op dump in `log`."""
    found = {kind: 0 for kind in ENGINE_KINDS.values()}
    for kernel, op in ENGINE_CALL.findall(log):
        if (kernel, op) in ENGINE_KINDS:
            found[ENGINE_KINDS[kernel, op]] += 1
    return found


def engine_pass(device: str) -> str:
    return f"{device}_int8_engine_pass"


def use_engine(config: Any, device: str) -> None:
    """A paddle.inference Config whose device passes are the engine's pass, then the QDQ folding."""
    config.enable_custom_passes([engine_pass(device), *QDQ_FOLDING], True)


def two_operands(paddle: Any, concat: bool) -> Any:
    """Two activations of one shape, x and x * x, each quantized with its own scale (a Stub each),
    added (as a ResNet's residual add is: quant_model.quantize_residual_adds) or concatenated."""
    from paddle.nn.quant import Stub

    class TwoOperands(paddle.nn.Layer):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b, self.concat = Stub(), Stub(), concat

        def forward(self, x: Any) -> Any:
            a, b = self.a(x), self.b(x * x)
            if self.concat:
                return paddle.concat([a, b], axis=1)
            return a + b

    return TwoOperands()


# One quantized layer each: (name, layer builder, input shape, weight scales per output channel, the
# engine op kind that must run it); the models' weights are per channel, so the units keep the
# per-tensor path in the check too.
UNITS: list[tuple[str, Callable[[Any], Any], list[int], bool, str]] = [
    (
        "conv2d 3x3 stride 2 pad 1",
        lambda pd: pd.nn.Conv2D(3, 8, 3, stride=2, padding=1),
        [1, 3, 17, 17],
        True,
        "conv2d",
    ),
    (
        "conv2d 3x3 stride 2 pad 1 per-tensor",
        lambda pd: pd.nn.Conv2D(3, 8, 3, stride=2, padding=1),
        [1, 3, 17, 17],
        False,
        "conv2d",
    ),
    ("depthwise conv2d 3x3", lambda pd: pd.nn.Conv2D(8, 8, 3, padding=1, groups=8), [1, 8, 12, 12], True, "conv2d"),
    ("fc", lambda pd: pd.nn.Linear(40, 10), [3, 40], True, "matmul"),
    ("fc per-tensor", lambda pd: pd.nn.Linear(40, 10), [3, 40], False, "matmul"),
    # (the engine's add gives the QDQ program's float add bit for bit: only the probe tells them apart)
    ("residual add", lambda pd: two_operands(pd, concat=False), [1, 8, 6, 6], True, "add"),
    ("concat", lambda pd: two_operands(pd, concat=True), [1, 8, 6, 6], True, "concat"),
    ("softmax", lambda pd: pd.nn.Softmax(), [4, 10], True, "softmax"),
]


def unit_checks(device: str, run: Callable[[str, Any], Any], directory: Path) -> list[dict[str, Any]]:
    """Each of UNITS quantized and saved as `directory`/unit<N>, through the engine (`run(prefix, x)`)
    vs the simulated reference: at most 1 LSB per element. `in_engine` is judged later
    (units_in_engine), from a run with the device's op dump."""
    import numpy as np
    import paddle
    from paddle.static import InputSpec

    directory.mkdir(parents=True, exist_ok=True)
    results = []
    for i, (name, build, shape, per_channel, kind) in enumerate(UNITS):
        paddle.set_device("cpu")
        paddle.seed(11 + i)
        # (in a container: PTQ quantizes a model's sublayers, so a bare Conv2D would stay float)
        qdq = quantized(paddle.nn.Sequential(build(paddle)), shape, per_channel)
        x = np.random.RandomState(3).uniform(-1, 1, shape).astype("float32")
        reference = qdq(paddle.to_tensor(x)).numpy()
        prefix = str(directory / f"unit{i}")
        paddle.jit.save(qdq, prefix, input_spec=[InputSpec(shape, "float32", "x")])
        found = compare(run(prefix, x), reference)
        results.append({"layer": name, "prefix": prefix, "kind": kind, **found, "passed": found["max_lsb"] <= 1.0})
    return results


def units_in_engine(units: list[dict[str, Any]], ran: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The units judged again with what the engine ran of each (`ran`, by unit, from the op dump):
    a unit passes only if an engine op of its kind computed it (a float op would agree as well)."""
    judged = []
    for n, unit in enumerate(units):
        in_engine = n < len(ran) and ran[n].get(unit["kind"], 0) >= 1
        judged.append({**unit, "in_engine": in_engine, "passed": unit["passed"] and in_engine})
    return judged


def layer_checks(directory: Path, run: Callable[[str, Any], Any]) -> list[dict[str, Any]]:
    """Each quantized conv/fc layer of the model alone (quant_model.export_layers) through the engine,
    fed the input the simulated-int8 model gave it, against that model's output of it: at most 1 LSB
    per element, where the whole model's output cannot promise it (see above); none for a saved model."""
    import numpy as np

    listed = directory / "layers.json"
    if not listed.is_file():
        return []
    results = []
    for n, name in enumerate(json.loads(listed.read_text())):
        prefix = str(directory / f"layer{n}")  # (by position: the listing holds names only)
        found = compare(run(prefix, np.load(prefix + ".input.npy")), np.load(prefix + ".output.npy"))
        results.append({"layer": str(name), "max_lsb": found["max_lsb"], "passed": found["max_lsb"] <= 1.0})
    return results


def layers_said(layers: list[dict[str, Any]]) -> str:
    if not layers:
        return "the model's layers alone: not measured (a saved model: its Python is not here)"
    worst = max(layers, key=lambda u: u["max_lsb"])
    failed = [u["layer"] for u in layers if not u["passed"]]
    return f"each of the model's {len(layers)} conv/fc layers alone, fed the simulated model's input: max " + (
        f"{worst['max_lsb']:.2f} LSB ({worst['layer']})" + (f"; past 1 LSB: {', '.join(failed)}" if failed else "")
    )


def spread_said(spread: dict[str, Any] | None) -> str:
    """The simulated reference's own spread (quant_model.float64_spread), for level 2's line."""
    if not spread:
        return ""
    if "error" in spread:
        return f" (the reference in float64: not measured, {spread['error']})"
    return (
        f" (the reference itself, its sums in float64: max {spread['max_lsb']:.2f}, mean {spread['mean_lsb']:.2f} LSB)"
    )


def deployment_said(agrees: bool, quantization_moved: bool) -> str:
    if agrees:
        return "and agrees with the deployment's"
    if quantization_moved:
        return "the deployment's float top-1 differs, as the simulated int8 model's does"
    return "but DIFFERS from the deployment's, which the simulated int8 model picks"


def level2(engine: dict[str, Any] | None, program_ops: dict[str, int], placement: dict[str, Any]) -> dict[str, Any]:
    """Level 2's verdict from the engine's measurement (None: the plugin has no engine) and where
    the engine run placed the program's ops."""
    if engine is None or "unavailable" in engine:
        why = (engine or {}).get("unavailable", "no measurement")
        return {"passed": False, "not_run": True, "detail": f"level 2 (int8 engine): not run: {why}"}
    if "error" in engine:
        return {"passed": False, "not_run": False, "detail": f"level 2 (int8 engine) failed: {engine['error']}"}
    quantizable = {op: n for op, n in program_ops.items() if op in ENGINE_OPS}
    left = {op: n for op, n in placement.get("on_device", {}).items() if op in ENGINE_OPS}
    left.update({op: n for op, n in placement.get("cpu_fallback", {}).items() if op in ENGINE_OPS})
    in_engine = {op: n - left.get(op, 0) for op, n in quantizable.items()}
    ran = {**placement.get("on_device", {}), **placement.get("cpu_fallback", {})}
    float_ops = {op: SEED_OPS[op] for op in ran if op in SEED_OPS and op not in ENGINE_OPS}
    model, units, layers = engine["model"], engine["units"], engine.get("layers", [])
    units_ok = all(u["passed"] for u in units) and all(u["passed"] for u in layers)
    top1_ok, top1_said = top1_verdict(model)
    # the float model's top-1, unless the quantized one's own top-1 is another class
    quantization_moved = not engine.get("simulated_deployment_top1_agree", True)
    deployment_ok = engine["deployment_top1_agree"] or quantization_moved
    model_ok = top1_ok and deployment_ok and model["mean_lsb"] <= 1.0
    ran_in_engine = placement.get("engine", {})
    activations = sum(ran_in_engine.get(kind, 0) for kind in ("activation", *ACTIVATION_OPS))
    on_integers: dict[str, int] = {}
    for kind, op in ACTIVATION_OPS.items():
        if ran_in_engine.get(kind):
            on_integers[op] = on_integers.get(op, 0) + ran_in_engine[kind]
    # adds and concats of int8 operands
    joined = {op: ran_in_engine[op] for op in ("add", "concat") if ran_in_engine.get(op)}
    # a flatten the engine took with the fc it feeds no longer runs (no op dump names it: it moves nothing)
    flattened = program_ops.get("flatten", 0) - ran.get("flatten", 0) if in_engine.get("matmul") else 0
    moved = {"flatten": flattened} if flattened > 0 else {}
    covered = not left and sum(in_engine.values()) > 0
    detail = (
        f"level 2 (int8 engine): {sum(in_engine.values())} of {sum(quantizable.values())} conv/fc ops in int8 "
        f"({', '.join(f'{op} {n}' for op, n in in_engine.items())}); output vs simulated int8: max "
        f"{model['max_lsb']:.2f} LSB, mean {model['mean_lsb']:.2f} LSB{spread_said(engine.get('reference_spread'))}, "
        f"top-1 {top1_said} ("
        + deployment_said(engine["deployment_top1_agree"], quantization_moved)
        + f"); {activations} activations on their int8 grid in the engine"
        + (f", {' and '.join(f'{op} {n}' for op, n in on_integers.items())} on their integers" if on_integers else "")
        + (f"; {' and '.join(f'{op} {n}' for op, n in joined.items())} of int8 operands" if joined else "")
        + (f"; flatten {flattened} in the fc's engine op (its int8 input read flattened)" if moved else "")
        + f"; {layers_said(layers)}; one layer "
        "alone: "
        + ", ".join(
            f"{u['layer']} {u['max_lsb']:.2f} LSB" + ("" if u.get("in_engine") else " (NOT in the engine)")
            for u in units
        )
        + f"; {engine['latency_ms']['avg_ms']:.1f} ms"
    )
    if left:
        detail += f"; NOT in the engine: {left}"
    return {
        "passed": bool(units_ok and model_ok and covered),
        "not_run": False,
        "detail": detail,
        "int8_ops": {**in_engine, **on_integers, **joined, **moved},
        "int8_activations": activations,
        "float32_ops": float_ops,
        "model": model,
        "reference_spread": engine.get("reference_spread"),
        "units": units,
        "layers": layers,
        "latency_ms": engine["latency_ms"],
    }
